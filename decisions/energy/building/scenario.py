"""Validated user input for a home (or district) battery problem on the CityLearn 2022 data, or on one
home's own hourly data (``home``: a CSV read by ``home.py``)."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Literal

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from decisions.core.numbers import PRICE_MAX, Float32
from decisions.core.settings import Settings
from decisions.energy.building import tariff as tariffs
from decisions.energy.building.dataset import BUILDING_IDS, NUM_BUILDINGS, NUM_HOURS, District, load_district
from decisions.energy.building.windows import Window, blocks, starts_inside

if TYPE_CHECKING:
    from decisions.energy.building.home import Home

DEFAULT_ROUND_TRIP = 0.9
"""CityLearn's battery ``efficiency`` in this data set, read as a round-trip efficiency."""

BATTERY_MAX = 1e6
"""Largest battery capacity (kWh) and power (kW) override: a 1 GWh grid-scale battery."""
CAPACITY_FADE_MAX = 1.0
"""Largest capacity loss coefficient (per kWh cycled; the data's is 1e-5)."""
REWARD_SCALE_MAX = 1e6
"""Largest reward multiplier."""

Energy = Annotated[float, Float32(BATTERY_MAX)]
"""A capacity (kWh) or a power (kW): finite in float32, at most ``BATTERY_MAX``."""
Price = Annotated[float, Float32(PRICE_MAX)]
"""A price ($/kWh, $/kg CO2): finite in float32, at most ``PRICE_MAX`` (1e6)."""
Fraction = Annotated[float, Float32()]
"""A bounded fraction (its field's ``ge``/``le``): finite in float32 and not rounding to 0."""


class Split(StrEnum):
    """Which months episodes are drawn from."""

    TRAIN = "train"
    EVAL = "eval"


class Battery(Settings):
    """Battery overrides applied to every selected home; ``None`` keeps the data set's value."""

    capacity_kwh: Energy | None = Field(None, gt=0, allow_inf_nan=False, description="Capacity, kWh.")
    power_kw: Energy | None = Field(None, gt=0, allow_inf_nan=False, description="Max (dis)charge power, kW.")
    charge_efficiency: Fraction | None = Field(
        None, gt=0, le=1, allow_inf_nan=False, description="Stored / drawn energy when charging."
    )
    discharge_efficiency: Fraction | None = Field(
        None, gt=0, le=1, allow_inf_nan=False, description="Delivered / withdrawn energy when discharging."
    )
    soc_min: Fraction = Field(0.0, ge=0, lt=1, allow_inf_nan=False, description="Lowest SoC, fraction.")
    soc_max: Fraction = Field(1.0, gt=0, le=1, allow_inf_nan=False, description="Highest SoC, fraction.")
    initial_soc: Fraction | None = Field(
        None, ge=0, le=1, allow_inf_nan=False, description="SoC at an episode's start (None: soc_min)."
    )
    capacity_fade: Annotated[float, Float32(CAPACITY_FADE_MAX)] | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="Capacity loss coefficient (CityLearn's), per kWh cycled.",
    )

    @field_validator("soc_max")
    @classmethod
    def _max_above_min(cls, value: float, info: ValidationInfo) -> float:
        low = info.data.get("soc_min")
        if low is not None and value <= low:
            raise ValueError(f"soc_max ({value}) must exceed soc_min ({low})")
        return value

    @field_validator("initial_soc")
    @classmethod
    def _initial_inside(cls, value: float | None, info: ValidationInfo) -> float | None:
        low, high = info.data.get("soc_min"), info.data.get("soc_max")
        if value is not None and low is not None and high is not None and not low <= value <= high:
            raise ValueError(f"initial_soc ({value}) must lie in [soc_min, soc_max] = [{low}, {high}]")
        return value


class TouTariff(Settings):
    """The data set's time-of-use tariff (0.21-0.54 $/kWh, peak in the late afternoon)."""

    kind: Literal["tou"] = "tou"


class DynamicTariff(Settings):
    """A real-time price that follows carbon intensity, scaled to the ToU mean and range (``tariff.py``)."""

    kind: Literal["dynamic"] = "dynamic"


class CsvTariff(Settings):
    """Hourly prices read from a CSV file (8760 rows, column ``price``; see ``tariff.read_price_csv``)."""

    kind: Literal["csv"] = "csv"
    path: str = Field(description="Path of the CSV file.")

    @field_validator("path")
    @classmethod
    def _readable(cls, value: str) -> str:
        _csv_prices(value)
        return value


class SeriesTariff(Settings):
    """Hourly prices given inline (8760 numbers >= 0), e.g. from an uploaded file."""

    kind: Literal["series"] = "series"
    prices: list[Price] = Field(description="One price per hour of the data year, $/kWh.")

    @field_validator("prices", mode="before")
    @classmethod
    def _valid(cls, value: object) -> object:
        if isinstance(value, list | tuple | np.ndarray):
            return tariffs.check_prices(list(value)).tolist()
        return value


Tariff = Annotated[TouTariff | DynamicTariff | CsvTariff | SeriesTariff, Field(discriminator="kind")]


def tariff_prices(tariff: TouTariff | DynamicTariff | CsvTariff | SeriesTariff) -> np.ndarray:
    """The hourly import price of a tariff, ``(8760,)`` $/kWh (float64).

    Returns:
        The price of every hour of the data year.
    """
    if isinstance(tariff, DynamicTariff):
        return tariffs.dynamic_price(load_district())
    if isinstance(tariff, CsvTariff):
        return tariffs.read_price_csv(tariff.path)
    if isinstance(tariff, SeriesTariff):
        return np.asarray(tariff.prices, dtype=np.float64)
    return np.asarray(load_district().price, dtype=np.float64)


def read_home(path: str) -> Home:
    """The own home of ``path`` (``home.read_home``, imported here: its CSV reader loads pandas)."""
    from decisions.energy.building.home import read_home as read

    return read(path)


def held_out_days(home: Home, eval_days: int | None) -> int:
    """Days an own-home file holds out: ``eval_days``, else a quarter of its days (at least one)."""
    return eval_days if eval_days is not None else max(1, home.num_days // 4)


def split_rows(home: Home | None, months: tuple[int, ...], eval_days: int | None, split: Split) -> np.ndarray:
    """The rows of a split, ``(T,)`` bool: the ``months`` of the shipped year, or for an own ``home`` its
    last ``held_out_days`` days (``Split.EVAL``) or the days before them (``Split.TRAIN``)."""
    if home is None:
        return np.isin(load_district().month, list(months))
    held = home.district.day >= home.num_days - held_out_days(home, eval_days)
    return held if split is Split.EVAL else ~held


def own_prices(home: Home, tariff: TouTariff | DynamicTariff | CsvTariff | SeriesTariff) -> np.ndarray:
    """An own home's hourly import price, ``(T,)`` $/kWh: the file's own, the time-of-use tariff on its
    calendar, the dynamic price of its carbon intensity, or a price file's at the same hour of the year."""
    if home.has_price or isinstance(tariff, TouTariff):
        return np.asarray(home.district.price, dtype=np.float64)
    if isinstance(tariff, DynamicTariff):
        return tariffs.dynamic_price(home.district)
    return tariff_prices(tariff)[home.year_rows]


def _csv_prices(path: str) -> np.ndarray:
    """Prices of a CSV tariff file, raising a plain ``ValueError`` (reported by pydantic at the field)."""
    try:
        return tariffs.read_price_csv(path)
    except ValueError as exc:  # InputError is a ValueError: keep only its problem
        raise ValueError(getattr(exc, "problem", str(exc))) from None


class Scenario(Settings):
    """A battery problem: which homes, battery overrides, tariff, episode length, split and reward.

    With ``home`` (an own home's CSV) the problem is that one home (``buildings`` stays ``(1,)``), its
    battery's ``capacity_kwh`` and ``power_kw`` are required, its split is by days (``eval_days``; the
    months are not used) and its price is the file's when it gives one (the tariff is not used then).
    """

    section = "scenario"

    home: str | None = Field(
        None, description="Path of one home's own hourly CSV (docs/domains/building.md); None: the shipped homes."
    )
    buildings: tuple[int, ...] = Field(
        (1,), description='Building id(s) 1-17, or "district" for all 17 (one shared meter).'
    )
    battery: Battery = Field(default_factory=Battery, validate_default=True)
    tariff: Tariff = Field(default_factory=TouTariff)
    feed_in_price: Price = Field(
        0.0,
        ge=0,
        allow_inf_nan=False,
        description="Price paid for exported energy, $/kWh (<= every import price).",
    )
    carbon_price: Price = Field(
        0.0, ge=0, allow_inf_nan=False, description="Carbon price in the reward, $/kg CO2."
    )
    train_months: tuple[int, ...] = Field(tuple(range(1, 9)), min_length=1, description="Training months.")
    eval_months: tuple[int, ...] = Field(tuple(range(9, 13)), min_length=1, description="Held-out months.")
    eval_days: int | None = Field(
        None, ge=1, le=365, description="Own home: its last days held out (None: a quarter of its days, at least one)."
    )
    episode_hours: int = Field(
        168, ge=1, le=NUM_HOURS, validate_default=True, description="Episode length in hours (truncation)."
    )
    relative_reward: bool = Field(
        False, description="Reward the saving against no battery instead of minus the cost (same optimum)."
    )
    reward_scale: Annotated[float, Float32(REWARD_SCALE_MAX)] | None = Field(
        None, gt=0, allow_inf_nan=False, description="Reward multiplier (None: 1 / number of homes)."
    )

    @field_validator("home")
    @classmethod
    def _home_readable(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                read_home(value)
            except ValueError as exc:  # InputError is a ValueError: keep only its problem
                raise ValueError(getattr(exc, "problem", str(exc))) from None
        return value

    @field_validator("buildings")
    @classmethod
    def _one_own_home(cls, value: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        if info.data.get("home") is not None and value != (1,):
            raise ValueError("an own home (scenario.home) is the one home of its file: leave buildings out")
        return value

    @field_validator("battery")
    @classmethod
    def _own_battery(cls, value: Battery, info: ValidationInfo) -> Battery:
        if info.data.get("home") is not None:
            for name, unit in (("capacity_kwh", "kWh"), ("power_kw", "kW")):
                if getattr(value, name) is None:
                    raise ValueError(f"{name}: give the own home's battery {name.split('_')[0]} in {unit}")
        return value

    @field_validator("buildings", mode="before")
    @classmethod
    def _buildings(cls, value: object) -> object:
        if isinstance(value, str):
            if value.strip().lower() != "district":
                raise ValueError(f'expected building ids 1-{NUM_BUILDINGS} or "district", got {value!r}')
            return BUILDING_IDS
        if isinstance(value, int) and not isinstance(value, bool):
            value = (value,)
        if isinstance(value, list | tuple):
            if not value:
                raise ValueError("select at least one building")
            for v in value:
                if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= NUM_BUILDINGS:
                    raise ValueError(f"building {v!r} is not an id in 1-{NUM_BUILDINGS}")
            if len(set(value)) != len(value):
                raise ValueError("building ids must be distinct")
            return tuple(value)
        return value

    @field_validator("tariff", mode="before")
    @classmethod
    def _tariff_shorthand(cls, value: object) -> object:
        """``"tou"``/``"dynamic"`` name a tariff; a path to a ``.csv`` file, or a table with a
        ``path`` (or ``prices``) and no ``kind``, is a CSV (or inline) tariff; anything else gets
        one clear message instead of pydantic's discriminator error."""
        kinds = ("tou", "dynamic", "csv", "series")
        if isinstance(value, str):
            if value in kinds:
                return {"kind": value}
            if value.lower().endswith(".csv"):
                return {"kind": "csv", "path": value}
            raise ValueError(f"unknown tariff {value!r}: use 'tou', 'dynamic', a .csv path or a table with kind")
        if isinstance(value, dict) and "kind" not in value:
            if "path" in value:
                return {"kind": "csv", **value}
            if "prices" in value:
                return {"kind": "series", **value}
            raise ValueError(f"a tariff table needs kind (one of {', '.join(kinds)}) or a path to a price CSV")
        return value

    @field_validator("train_months", "eval_months")
    @classmethod
    def _months(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        bad = [m for m in value if not 1 <= m <= 12]
        if bad:
            raise ValueError(f"month {bad[0]} is not in 1-12")
        if len(set(value)) != len(value):
            raise ValueError("months must be distinct")
        return tuple(sorted(value))

    @field_validator("eval_months")
    @classmethod
    def _disjoint(cls, value: tuple[int, ...], info: ValidationInfo) -> tuple[int, ...]:
        common = sorted(set(value) & set(info.data.get("train_months") or ()))
        if common:
            raise ValueError(f"overlaps train_months at month {common[0]}")
        return value

    @field_validator("feed_in_price")
    @classmethod
    def _feed_in_below_prices(cls, value: float, info: ValidationInfo) -> float:
        tariff, home = info.data.get("tariff"), _home_of(info)
        if tariff is not None:
            low = float((tariff_prices(tariff) if home is None else own_prices(home, tariff)).min())
            if value > low:
                raise ValueError(
                    f"{value} exceeds the lowest import price {low:.4g} (simultaneous import and export would pay)"
                )
        return value

    @field_validator("eval_days")
    @classmethod
    def _days_of_the_file(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is None or "home" not in info.data:  # not given, or the home's file was refused
            return value
        home = _home_of(info)
        if home is None:
            raise ValueError("splits an own home's file (scenario.home); the shipped homes split by months")
        if value >= home.num_days:
            raise ValueError(f"{home.label} holds {home.num_days} days: holding out {value} leaves none to train on")
        return value

    @field_validator("episode_hours")
    @classmethod
    def _episodes_fit(cls, value: int, info: ValidationInfo) -> int:
        if "home" not in info.data:  # the home's file was refused
            return value
        home = _home_of(info)
        data = load_district() if home is None else home.district
        for split, name in ((Split.TRAIN, "train_months"), (Split.EVAL, "eval_months")):
            months = info.data.get(name)
            if home is None and not months:
                continue
            inside = split_rows(home, months or (), info.data.get("eval_days"), split)
            if len(starts_inside(data, inside, value)) == 0:
                raise ValueError(_no_episode(home, split, name, months, value, info.data.get("eval_days")))
        return value

    @property
    def num_buildings(self) -> int:
        """Number of selected homes (the environment's static battery count)."""
        return len(self.buildings)

    @property
    def indices(self) -> np.ndarray:
        """0-based column indices of the selected homes in the data: ``(N,)`` int."""
        return np.asarray(self.buildings, dtype=np.int64) - 1

    def months(self, split: Split) -> tuple[int, ...]:
        """Calendar months of a split."""
        return self.train_months if Split(split) is Split.TRAIN else self.eval_months

    def data(self) -> District:
        """The data the rows index: the shipped district, or the own home's one-home ``District``."""
        return load_district() if self.home is None else read_home(self.home).district

    def split_rows(self, split: Split) -> np.ndarray:
        """The rows of a split (``split_rows``): ``(T,)`` bool."""
        own = None if self.home is None else read_home(self.home)
        return split_rows(own, self.months(Split(split)), self.eval_days, Split(split))

    def prices(self) -> np.ndarray:
        """The hourly import price, ``(T,)`` $/kWh (float64): the chosen tariff's (``own_prices`` for an own home)."""
        return tariff_prices(self.tariff) if self.home is None else own_prices(read_home(self.home), self.tariff)

    def battery_constants(self) -> dict[str, np.ndarray]:
        """Per-home battery constants after overrides, each ``(N,)`` float64.

        Returns:
            ``capacity, power, charge_efficiency, discharge_efficiency, soc_min, soc_max,
            initial_soc, capacity_fade``.
        """
        district, idx, bat = self.data(), self.indices, self.battery
        n = self.num_buildings

        def pick(override: float | None, data: np.ndarray) -> np.ndarray:
            return (
                np.full(n, override, dtype=np.float64)
                if override is not None
                else data[idx].astype(np.float64)
            )

        one_way = np.sqrt(district.battery_efficiency)
        initial = bat.soc_min if bat.initial_soc is None else bat.initial_soc
        return {
            "capacity": pick(bat.capacity_kwh, district.battery_capacity),
            "power": pick(bat.power_kw, district.battery_power),
            "charge_efficiency": pick(bat.charge_efficiency, one_way),
            "discharge_efficiency": pick(bat.discharge_efficiency, one_way),
            "soc_min": np.full(n, bat.soc_min),
            "soc_max": np.full(n, bat.soc_max),
            "initial_soc": np.full(n, initial),
            "capacity_fade": pick(bat.capacity_fade, district.battery_capacity_loss),
        }

    def eval_window(self) -> Window:
        """The default held-out evaluation window: the first contiguous block of the held-out rows."""
        return blocks(self.split_rows(Split.EVAL))[0]

    def eval_windows(self) -> list[Window]:
        """Consecutive, non-overlapping episodes covering the held-out rows (for scoring agents).

        Returns:
            One ``Window`` of ``episode_hours`` per possible start, each starting after the
            previous one ends.
        """
        starts = starts_inside(self.data(), self.split_rows(Split.EVAL), self.episode_hours)
        out: list[Window] = []
        for s in starts:
            if not out or s >= out[-1].stop:
                out.append(Window(int(s), self.episode_hours))
        return out

    @property
    def default_reward_scale(self) -> float:
        """The reward multiplier in use: ``reward_scale`` or ``1 / num_buildings``."""
        return self.reward_scale if self.reward_scale is not None else 1.0 / self.num_buildings


def _home_of(info: ValidationInfo) -> Home | None:
    """The own home of a scenario being validated (None: none given, or its file was refused)."""
    path = info.data.get("home")
    return None if path is None else read_home(path)


def _no_episode(home: Home | None, split: Split, name: str, months: tuple[int, ...] | None, hours: int,
                eval_days: int | None) -> str:
    """Why no episode of ``hours`` fits a split."""
    if home is None:
        return f"no day in {name} {list(months or ())} starts {hours} consecutive hours inside those months"
    held = held_out_days(home, eval_days)
    if split is Split.EVAL:
        days = f"held-out days of {home.label} (its last {held}"
    else:
        days = f"training days of {home.label} (its first {home.num_days - held}"
    return (f"no day of the {days} of {home.num_days}) starts {hours} consecutive hours inside them with one more "
            "hour after them: lower episode_hours or change eval_days")
