"""One hour to decide, as an operator states it (``HourState``), and the observation a policy reads.

The fields are the observation's features (``observation.py``) in their own units: the calendar,
the price now and its forecasts, carbon, the weather and its forecasts, and per home the hour's
load and PV (their forecasts), the battery's state of charge and the previous hour's net load.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import numpy as np
from pydantic import Field

from decisions.core.settings import Settings
from decisions.energy.building.dataset import NUM_BUILDINGS as MAX_HOMES
from decisions.energy.building.observation import BUILDING_FEATURES, SHARED_FEATURES
from decisions.energy.building.params import BuildingParams

Price = Annotated[float, Field(ge=0, le=10)]
Temperature = Annotated[float, Field(ge=-60, le=60)]
Irradiance = Annotated[float, Field(ge=0, le=1500)]
Energy = Annotated[float, Field(ge=0, le=1000)]
Share = Annotated[float, Field(ge=0, le=1)]
NetEnergy = Annotated[float, Field(ge=-1000, le=1000)]


class HourState(Settings):
    """The hour about to be decided for the run's homes (per-home fields: one value per home, in the
    run's order)."""

    section = "state"

    hour: int = Field(ge=1, le=24, description="Hour of the day, 1 for midnight to 1 am ... 24 for the last.")
    month: int = Field(ge=1, le=12, description="Month of the year.")
    weekend: bool = Field(False, description="Saturday or Sunday.")
    holiday: bool = Field(False, description="A public holiday.")
    price_usd_per_kwh: Price = Field(description="Import price this hour, $/kWh.")
    price_6h_usd_per_kwh: Price = Field(description="Import price forecast 6 hours ahead, $/kWh.")
    price_12h_usd_per_kwh: Price = Field(description="Import price forecast 12 hours ahead, $/kWh.")
    price_24h_usd_per_kwh: Price = Field(description="Import price forecast 24 hours ahead, $/kWh.")
    carbon_kg_per_kwh: float = Field(ge=0, le=5, description="Grid carbon intensity this hour, kg CO2/kWh.")
    temperature_c: Temperature = Field(description="Outdoor temperature, deg C.")
    temperature_6h_c: Temperature = Field(description="Temperature forecast 6 hours ahead, deg C.")
    temperature_12h_c: Temperature = Field(description="Temperature forecast 12 hours ahead, deg C.")
    temperature_24h_c: Temperature = Field(description="Temperature forecast 24 hours ahead, deg C.")
    direct_irradiance_w_m2: Irradiance = Field(description="Direct solar irradiance, W/m2.")
    direct_irradiance_6h_w_m2: Irradiance = Field(description="Direct irradiance forecast 6 hours ahead, W/m2.")
    direct_irradiance_12h_w_m2: Irradiance = Field(description="Direct irradiance forecast 12 hours ahead, W/m2.")
    direct_irradiance_24h_w_m2: Irradiance = Field(description="Direct irradiance forecast 24 hours ahead, W/m2.")
    diffuse_irradiance_w_m2: Irradiance = Field(description="Diffuse solar irradiance, W/m2.")
    diffuse_irradiance_6h_w_m2: Irradiance = Field(description="Diffuse irradiance forecast 6 hours ahead, W/m2.")
    diffuse_irradiance_12h_w_m2: Irradiance = Field(description="Diffuse irradiance forecast 12 hours ahead, W/m2.")
    diffuse_irradiance_24h_w_m2: Irradiance = Field(description="Diffuse irradiance forecast 24 hours ahead, W/m2.")
    load_kwh: tuple[Energy, ...] = Field(min_length=1, max_length=MAX_HOMES,
                                         description="Each home's load forecast over the hour, kWh.")
    pv_kwh: tuple[Energy, ...] = Field(min_length=1, max_length=MAX_HOMES,
                                       description="Each home's PV generation forecast over the hour, kWh.")
    soc: tuple[Share, ...] = Field(min_length=1, max_length=MAX_HOMES,
                                   description="Each battery's state of charge now, a fraction of its capacity.")
    prev_net_load_kwh: tuple[NetEnergy, ...] = Field(
        min_length=1, max_length=MAX_HOMES, description="Each home's net grid energy over the previous hour, kWh (+ import).")

    def homes(self) -> int:
        """How many homes the state describes (the length of ``soc``)."""
        return len(self.soc)


STATE_HOME_FIELDS = ("load_kwh", "pv_kwh", "soc", "prev_net_load_kwh")
"""The per-home fields, in ``BUILDING_FEATURES`` order."""

_CALENDAR = ("hour_sin", "hour_cos", "weekend", "holiday", "month_sin", "month_cos")


def observations(states: Sequence[HourState]) -> np.ndarray:
    """The observations a policy reads of ``states`` (``observation.py``'s order and scales), all of the
    same number of homes: ``(B, F)`` float32."""

    def column(name: str) -> np.ndarray:
        return np.asarray([getattr(state, name) for state in states], np.float64)

    hour, month = 2 * np.pi * (column("hour") % 24) / 24, 2 * np.pi * (column("month") - 1) / 12
    shared = [np.sin(hour), np.cos(hour), column("weekend"), column("holiday"), np.sin(month), np.cos(month)]
    shared += [column(name) / scale for name, scale in SHARED_FEATURES[len(_CALENDAR):]]
    homes = np.stack([column(name) / scale
                      for name, (_, scale) in zip(STATE_HOME_FIELDS, BUILDING_FEATURES, strict=True)], axis=2)
    return np.concatenate([np.stack(shared, axis=1), homes.reshape(len(states), -1)], axis=1).astype(np.float32)


def state_at(params: BuildingParams, row: int, *, hour: int, month: int, weekend: bool, holiday: bool,
             soc: np.ndarray) -> dict[str, object]:
    """The state (plain JSON) of data row ``row`` of a run's params, its calendar and batteries' ``soc`` given."""
    shared = np.asarray(params.features[row], np.float64)
    state: dict[str, object] = {"hour": hour, "month": month, "weekend": weekend, "holiday": holiday}
    for i, (name, scale) in enumerate(SHARED_FEATURES):
        if name not in _CALENDAR:
            state[name] = round(float(shared[i] * scale), 6)
    before = max(row - 1, 0)
    load, pv = np.asarray(params.load, np.float64), np.asarray(params.pv, np.float64)
    per_home = {"load_kwh": load[row], "pv_kwh": pv[row], "soc": np.asarray(soc, np.float64),
                "prev_net_load_kwh": load[before] - pv[before]}
    state.update({name: [round(float(v), 6) for v in values] for name, values in per_home.items()})
    return state
