"""One home's own hourly data from a CSV, checked cell by cell and shaped as a one-home ``District``, so
every controller (agents, rule-based, MPC, the perfect-foresight LP) runs on it unchanged.

Columns (case ignored): ``timestamp`` (the start of the hour, ISO ``2025-03-03 00:00``, local time),
``load_kwh`` and ``pv_kwh`` (energy over the hour, kWh), optionally ``price_usd_per_kwh`` (import
price), ``carbon_kg_per_kwh``, ``temperature_c``, ``direct_irradiance_w_m2`` and
``diffuse_irradiance_w_m2``. Rows are whole days (the first at 00:00, 24 a day), each one hour after
the row before, 2 to 366 days.

What the file does not give comes from elsewhere: the calendar (month, hour, weekday, US federal
holiday) from the timestamps; carbon intensity and weather from the shipped CityLearn year at the same
hour of the year (month, day, hour; 29 February reads 28 February); the time-of-use price from the
shipped tariff at the same month, hour and weekday or weekend; the battery's efficiency and capacity
fade as the shipped homes' (its capacity and power are the spec's). Forecast features wrap round the
file's end, as the shipped year's do.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from decisions.core.csv_table import CsvTable
from decisions.energy.building.dataset import District, load_district, us_federal_holidays
from decisions.energy.building.windows import MAX_STARTS

FIELD = "scenario.home"
"""The spec field that names the home's file (errors name it)."""
REQUIRED = ("timestamp", "load_kwh", "pv_kwh")
OPTIONAL = (
    "price_usd_per_kwh",
    "carbon_kg_per_kwh",
    "temperature_c",
    "direct_irradiance_w_m2",
    "diffuse_irradiance_w_m2",
)
MIN_DAYS = 2
"""Fewest whole days a file may hold (one to train on, one held out)."""
MAX_DAYS = MAX_STARTS
"""Most whole days a file may hold (a leap year)."""
ENERGY_MAX = 50.0
"""Largest hourly load or PV energy of one home, kWh (more looks like Wh)."""
_WH = "the file may be in Wh, not kWh: a home's hourly energy stays below {:g} kWh"
_LIMITS: dict[str, tuple[float, float, str]] = {
    "price_usd_per_kwh": (0.0, 10.0, "the file may be in cents/kWh, not $/kWh"),
    "carbon_kg_per_kwh": (0.0, 2.0, "the file may be in g/kWh, not kg/kWh"),
    "temperature_c": (-60.0, 60.0, "the file may be in degrees F, not C"),
    "direct_irradiance_w_m2": (0.0, 1500.0, "irradiance in W/m2 stays below the solar constant, about 1361"),
    "diffuse_irradiance_w_m2": (0.0, 1500.0, "irradiance in W/m2 stays below the solar constant, about 1361"),
}
"""``(low, high, unit hint)`` of each optional column."""
_SHIPPED = {
    "carbon_kg_per_kwh": "carbon_intensity",
    "temperature_c": "temperature",
    "direct_irradiance_w_m2": "direct_irradiance",
    "diffuse_irradiance_w_m2": "diffuse_irradiance",
}
"""The ``District`` series each optional column replaces (the price apart)."""


@dataclass(frozen=True, eq=False)
class Home:
    """A home's file read: its one-home ``District``, where each row sits in the shipped year, and what it gave."""

    district: District
    """The home's data, ``N = 1``; ``price`` is the file's price, else the shipped time-of-use tariff."""
    year_rows: np.ndarray
    """``(T,)`` int: the shipped year's row at the same month, day and hour (29 February reads 28 February)."""
    columns: frozenset[str]
    """The optional columns the file gave."""
    label: str
    """The file's name, as errors name it."""

    @property
    def num_days(self) -> int:
        """Whole days in the file."""
        return len(self.year_rows) // 24

    @property
    def has_price(self) -> bool:
        """Whether the file gives its own import price (the spec's tariff is then not used)."""
        return "price_usd_per_kwh" in self.columns


def read_home(path: str | Path) -> Home:
    """The home of the CSV at ``path`` (cached per file path, modification time and size).

    Raises:
        InputError: on ``scenario.home``, naming the file, row and column (or the file).
    """
    stat = Path(path).stat() if Path(path).is_file() else None
    key = (stat.st_mtime_ns, stat.st_size) if stat is not None else None
    return _read_home(str(path), key)


@functools.lru_cache(maxsize=8)
def _read_home(path: str, key: tuple[int, int] | None) -> Home:
    del key  # part of the cache key only: a changed file is read again
    table = CsvTable.read(path, field=FIELD, required=REQUIRED, optional=OPTIONAL)
    times = table.dates("timestamp", step=timedelta(hours=1))
    if times[0].hour or times[0].minute:
        raise table.refuse(0, "timestamp", f"{times[0]:%Y-%m-%d %H:%M} is not a day's first hour: a file "
                                           "starts at 00:00 and holds whole days")
    if len(table) % 24:
        raise table.refuse(len(table) - 1, "timestamp", f"the last day, {times[-1]:%Y-%m-%d}, is partial: it "
                                                        f"ends at {times[-1]:%H:%M}, not 23:00 (whole days only)")
    if not MIN_DAYS <= len(table) // 24 <= MAX_DAYS:
        raise table.refuse_file(f"it holds {len(table) // 24} days, expected {MIN_DAYS} to {MAX_DAYS}")
    hint = _WH.format(ENERGY_MAX)
    load = table.numbers("load_kwh", low=0.0, high=ENERGY_MAX, unit_hint=hint)
    pv = table.numbers("pv_kwh", low=0.0, high=ENERGY_MAX, unit_hint=hint)
    given = {name: table.numbers(name, low=low, high=high, unit_hint=unit)
             for name, (low, high, unit) in _LIMITS.items() if table.has(name)}
    return _home(times, load, pv, given, table.label)


def _home(times: pd.DatetimeIndex, load: np.ndarray, pv: np.ndarray, given: dict[str, np.ndarray],
          label: str) -> Home:
    """Shape the checked columns as a one-home ``District`` (see the module docstring for what fills the rest)."""
    shipped = load_district()
    month = np.asarray(times.month, dtype=np.int64)
    hour = np.asarray(times.hour, dtype=np.int64) + 1
    weekday = np.asarray(times.dayofweek, dtype=np.int64)
    first = times[0].date()
    day = np.arange(len(load)) // 24
    dates = [first + timedelta(days=int(d)) for d in range(int(day[-1]) + 1)]
    holidays = set().union(*(us_federal_holidays(y) for y in {d.year for d in dates}))
    year_rows = _year_rows(shipped, month, np.asarray(times.day, dtype=np.int64), hour)
    arrays = {name: given.get(column, getattr(shipped, name)[year_rows]) for column, name in _SHIPPED.items()}
    one = np.ones(1)
    district = District(
        load=load[:, None],
        solar_per_kw=pv[:, None] * 1000.0,  # a 1 kW system's output, W/kW
        pv_kw=one,
        battery_capacity=np.full(1, np.nan),  # the spec's (required for an own home)
        battery_power=np.full(1, np.nan),
        battery_efficiency=one * np.median(shipped.battery_efficiency),
        battery_capacity_loss=one * np.median(shipped.battery_capacity_loss),
        price=given.get("price_usd_per_kwh", _tou(shipped)[month, (weekday >= 5).astype(np.int64), hour]),
        month=month,
        hour=hour,
        day_type=weekday + 1,
        holiday=np.array([d in holidays for d in dates])[day],
        day=day,
        first_date=first,
        **arrays,
    )
    for value in vars(district).values():
        if isinstance(value, np.ndarray):
            value.setflags(write=False)
    return Home(district, year_rows, frozenset(given), label)


def _year_rows(shipped: District, month: np.ndarray, day: np.ndarray, hour: np.ndarray) -> np.ndarray:
    """The shipped year's row at each (month, day of month, hour 1-24); 29 February reads 28 February."""
    table = np.full((13, 32, 25), -1, dtype=np.int64)
    table[shipped.month, [d.day for d in shipped.dates], shipped.hour] = np.arange(len(shipped.month))
    leap = (month == 2) & (day == 29)
    return table[month, np.where(leap, 28, day), hour]


def _tou(shipped: District) -> np.ndarray:
    """The shipped time-of-use price by ``[month, weekend, hour]`` (``(13, 2, 25)``): the median of those hours."""
    frame = pd.DataFrame({"month": shipped.month, "weekend": shipped.weekend.astype(np.int64),
                          "hour": shipped.hour, "price": shipped.price})
    median = frame.groupby(["month", "weekend", "hour"])["price"].median()
    table = np.zeros((13, 2, 25))
    month, weekend, hour = (median.index.get_level_values(k).to_numpy() for k in ("month", "weekend", "hour"))
    table[month, weekend, hour] = median.to_numpy()
    return table
