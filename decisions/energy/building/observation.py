"""The observation vector of ``BuildingEnv``: feature order, names and scales."""

from __future__ import annotations

import numpy as np

from decisions.energy.building.dataset import FORECAST_HORIZONS, District

_HORIZON_TAGS = tuple(f"{h}h" for h in FORECAST_HORIZONS)

SHARED_FEATURES: tuple[tuple[str, float], ...] = (
    ("hour_sin", 1.0),
    ("hour_cos", 1.0),
    ("weekend", 1.0),
    ("holiday", 1.0),
    ("month_sin", 1.0),
    ("month_cos", 1.0),
    ("price_usd_per_kwh", 1.0),
    *((f"price_{tag}_usd_per_kwh", 1.0) for tag in _HORIZON_TAGS),
    ("carbon_kg_per_kwh", 1.0),
    ("temperature_c", 10.0),
    *((f"temperature_{tag}_c", 10.0) for tag in _HORIZON_TAGS),
    ("direct_irradiance_w_m2", 1000.0),
    *((f"direct_irradiance_{tag}_w_m2", 1000.0) for tag in _HORIZON_TAGS),
    ("diffuse_irradiance_w_m2", 1000.0),
    *((f"diffuse_irradiance_{tag}_w_m2", 1000.0) for tag in _HORIZON_TAGS),
)
"""``(name, scale)`` of each shared feature, in observation order."""

BUILDING_FEATURES: tuple[tuple[str, float], ...] = (
    ("load_kwh", 1.0),
    ("pv_kwh", 1.0),
    ("soc", 1.0),
    ("prev_net_load_kwh", 1.0),
)
"""``(name, scale)`` of each per-home feature, in observation order."""

NUM_SHARED = len(SHARED_FEATURES)
NUM_PER_BUILDING = len(BUILDING_FEATURES)


def observation_size(num_buildings: int) -> int:
    """Length of the observation vector for ``num_buildings`` homes."""
    return NUM_SHARED + NUM_PER_BUILDING * num_buildings


def feature_names(num_buildings: int) -> tuple[str, ...]:
    """Name of every observation entry, in order.

    Args:
        num_buildings: number of homes in the environment.

    Returns:
        ``observation_size(num_buildings)`` names; per-home names get ``[i]`` when there are several.
    """
    names = [name for name, _ in SHARED_FEATURES]
    for i in range(num_buildings):
        suffix = f"[{i}]" if num_buildings > 1 else ""
        names += [f"{name}{suffix}" for name, _ in BUILDING_FEATURES]
    return tuple(names)


def feature_scales(num_buildings: int) -> np.ndarray:
    """Divisor of every observation entry (raw value = observation x scale): ``(size,)`` float64."""
    shared = [scale for _, scale in SHARED_FEATURES]
    per = [scale for _, scale in BUILDING_FEATURES]
    return np.asarray(shared + per * num_buildings, dtype=np.float64)


def shared_features(district: District, prices: np.ndarray) -> np.ndarray:
    """The shared features of every hour, already divided by their scales.

    Args:
        prices: ``(T,)`` import price of the chosen tariff.

    Returns:
        ``(T, NUM_SHARED)`` float64, columns in ``SHARED_FEATURES`` order.
    """
    hour_angle = 2 * np.pi * (district.hour % 24) / 24
    month_angle = 2 * np.pi * (district.month - 1) / 12

    def with_forecasts(series: np.ndarray) -> list[np.ndarray]:
        return [series, *district.forecasts(series).T]

    columns = [
        np.sin(hour_angle),
        np.cos(hour_angle),
        district.weekend.astype(float),
        district.holiday.astype(float),
        np.sin(month_angle),
        np.cos(month_angle),
        *with_forecasts(prices),
        district.carbon_intensity,
        *with_forecasts(district.temperature),
        *with_forecasts(district.direct_irradiance),
        *with_forecasts(district.diffuse_irradiance),
    ]
    scales = np.asarray([scale for _, scale in SHARED_FEATURES])
    return np.stack(columns, axis=1) / scales[None, :]
