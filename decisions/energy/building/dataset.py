"""The CityLearn 2022 district as typed numpy arrays: loads, PV, batteries, tariff, carbon, weather, calendar.

A home's own data (``home.py``) comes in the same ``District`` shape, one home wide.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from datetime import date, timedelta
from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

NUM_BUILDINGS = 17
"""Homes in the district (building ids 1..17)."""
BUILDING_IDS = tuple(range(1, NUM_BUILDINGS + 1))
"""Every building id."""
NUM_HOURS = 8760
"""Hourly rows in the data set (one year)."""
FORECAST_HORIZONS = (6, 12, 24)
"""Forecast horizons in hours, as in the CityLearn data."""
FIRST_ROW_DATE = date(2016, 7, 31)
"""Date of row 0 (hour 24 of that day); an assumption, see the module docstring."""


@dataclass(frozen=True, eq=False)
class District:
    """The whole data set; every array is read-only numpy, float64 unless stated."""

    load: np.ndarray  # (T, 17) kWh, non-shiftable load of each home
    solar_per_kw: np.ndarray  # (T, 17) W/kW, PV output per kW installed
    pv_kw: np.ndarray  # (17,) kW, installed PV of each home
    battery_capacity: np.ndarray  # (17,) kWh
    battery_power: np.ndarray  # (17,) kW, nominal (dis)charge power
    battery_efficiency: np.ndarray  # (17,) round-trip efficiency (CityLearn's ``efficiency``)
    battery_capacity_loss: np.ndarray  # (17,) capacity loss coefficient (fade per cycle)
    price: np.ndarray  # (T,) $/kWh, time-of-use tariff
    carbon_intensity: np.ndarray  # (T,) kg CO2/kWh
    temperature: np.ndarray  # (T,) outdoor dry-bulb temperature, deg C
    diffuse_irradiance: np.ndarray  # (T,) W/m2
    direct_irradiance: np.ndarray  # (T,) W/m2
    month: np.ndarray  # (T,) int, 1-12
    hour: np.ndarray  # (T,) int, 1-24 (CityLearn convention: 24 is the day's last hour)
    day_type: np.ndarray  # (T,) int, 1 = Monday ... 7 = Sunday
    holiday: np.ndarray  # (T,) bool, US federal holiday (observed date)
    day: np.ndarray  # (T,) int, days since ``first_date`` (row 0 is day 0)
    first_date: date = FIRST_ROW_DATE
    """Calendar date of day 0."""

    @property
    def pv(self) -> np.ndarray:
        """PV generation of each home over each hour, kWh: ``(T, 17)``."""
        return self.solar_per_kw * self.pv_kw[None, :] / 1000.0

    @property
    def dates(self) -> list[date]:
        """Calendar date of each row: ``T`` dates."""
        return [self.first_date + timedelta(days=int(d)) for d in self.day]

    @property
    def ordinals(self) -> np.ndarray:
        """Proleptic Gregorian ordinal (``date.fromordinal``) of each row's date: ``(T,)`` int64."""
        return self.first_date.toordinal() + np.asarray(self.day, dtype=np.int64)

    @property
    def weekend(self) -> np.ndarray:
        """Saturday or Sunday: ``(T,)`` bool."""
        return self.day_type >= 6

    @staticmethod
    def forecasts(series: np.ndarray) -> np.ndarray:
        """Perfect forecasts ``(T, 3)`` of an hourly series: column ``k`` holds ``series[(t + h_k) % T]`` (``FORECAST_HORIZONS``)."""
        return np.stack([np.roll(series, -h) for h in FORECAST_HORIZONS], axis=1)


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The ``n``-th (1-based; -1 = last) ``weekday`` (0 = Monday) of a month."""
    if n > 0:
        first = date(year, month, 1)
        return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))
    last = date(year + (month == 12), month % 12 + 1, 1) - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def _observed(day: date) -> date:
    """Federal rule: a Saturday holiday is observed on Friday, a Sunday one on Monday."""
    if day.weekday() == 5:
        return day - timedelta(days=1)
    if day.weekday() == 6:
        return day + timedelta(days=1)
    return day


def us_federal_holidays(year: int) -> set[date]:
    """Observed dates of the ten US federal holidays of a year (Juneteenth, from 2021, excluded).

    Returns:
        The set of observed holiday dates.
    """
    return {
        _observed(date(year, 1, 1)),  # New Year's Day
        _nth_weekday(year, 1, 0, 3),  # Martin Luther King Jr. Day
        _nth_weekday(year, 2, 0, 3),  # Washington's Birthday
        _nth_weekday(year, 5, 0, -1),  # Memorial Day
        _observed(date(year, 7, 4)),  # Independence Day
        _nth_weekday(year, 9, 0, 1),  # Labor Day
        _nth_weekday(year, 10, 0, 2),  # Columbus Day
        _observed(date(year, 11, 11)),  # Veterans Day
        _nth_weekday(year, 11, 3, 4),  # Thanksgiving
        _observed(date(year, 12, 25)),  # Christmas
    }


def _read_csv(name: str) -> pd.DataFrame:
    import pandas as pd  # loaded with the data, not with the module: a job spec validates without it

    with resources.as_file(resources.files(__package__) / "data" / name) as path:
        return pd.read_csv(path)


@functools.lru_cache(maxsize=1)
def load_district() -> District:
    """Load the packaged district data (cached: the same read-only object on every call).

    Returns:
        The ``District`` with every series of the 17 homes and the shared signals.
    """
    loads = _read_csv("loads.csv.gz")
    solar = _read_csv("solar.csv.gz")
    series = _read_csv("timeseries.csv.gz")
    specs = json.loads((resources.files(__package__) / "data" / "buildings.json").read_text())
    names = [f"building_{n}" for n in range(1, NUM_BUILDINGS + 1)]
    day = (np.arange(NUM_HOURS) + 23) // 24  # hours 1..24 of a day; row 0 is hour 24 of day 0
    dates = [FIRST_ROW_DATE + timedelta(days=int(d)) for d in range(int(day[-1]) + 1)]
    years = {d.year for d in dates}
    holidays = set().union(*(us_federal_holidays(y) for y in years))
    holiday_day = np.array([d in holidays for d in dates])

    def col(frame: pd.DataFrame, name: str, dtype: type = float) -> np.ndarray:
        return frame[name].to_numpy(dtype=dtype)

    def spec(key: str) -> np.ndarray:
        return np.array([float(specs[name][key]) for name in names])

    arrays = {
        "load": loads[names].to_numpy(dtype=float),
        "solar_per_kw": solar[names].to_numpy(dtype=float),
        "pv_kw": spec("pv_nominal_power_kw"),
        "battery_capacity": spec("battery_capacity_kwh"),
        "battery_power": spec("battery_nominal_power_kw"),
        "battery_efficiency": spec("battery_efficiency"),
        "battery_capacity_loss": spec("battery_capacity_loss_coefficient"),
        "price": col(series, "price"),
        "carbon_intensity": col(series, "carbon_intensity"),
        "temperature": col(series, "temperature_c"),
        "diffuse_irradiance": col(series, "diffuse_w_m2"),
        "direct_irradiance": col(series, "direct_w_m2"),
        "month": col(series, "month", int),
        "hour": col(series, "hour", int),
        "day_type": col(series, "day_type", int),
        "holiday": holiday_day[day],
        "day": day,
    }
    for value in arrays.values():
        value.setflags(write=False)
    return District(**arrays)
