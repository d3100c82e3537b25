"""Traced parameters of the building environment: the data series and the battery constants."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.energy.building.battery import BatteryStep, battery_step
from decisions.energy.building.observation import shared_features
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.windows import padded_starts, starts_inside


@struct.dataclass
class BuildingParams:
    """Everything ``BuildingEnv`` reads; all leaves traced."""

    features: Array  # (T, F) float32, shared observation features (already scaled)
    load: Array  # (T, N) float32, non-shiftable load of each home, kWh
    pv: Array  # (T, N) float32, PV generation of each home, kWh
    price: Array  # (T,) float32, import price, $/kWh
    carbon: Array  # (T,) float32, carbon intensity, kg CO2/kWh
    feed_in_price: Array  # () float32, export price, $/kWh
    carbon_price: Array  # () float32, $/kg CO2 (reward only)
    capacity: Array  # (N,) float32, nominal battery capacity, kWh
    power: Array  # (N,) float32, max (dis)charge power (grid side), kW
    charge_efficiency: Array  # (N,) float32, stored / drawn when charging
    discharge_efficiency: Array  # (N,) float32, delivered / withdrawn when discharging
    soc_min: Array  # (N,) float32, lowest SoC (fraction of current capacity)
    soc_max: Array  # (N,) float32, highest SoC
    initial_soc: Array  # (N,) float32, SoC at an episode's start
    capacity_fade: Array  # (N,) float32, capacity loss coefficient
    start_hours: Array  # (S,) int32, rows where an episode may start (first num_starts valid)
    num_starts: Array  # () int32, number of valid entries of start_hours
    episode_length: Array  # () int32, steps before truncation
    reward_scale: Array  # () float32, reward multiplier
    relative_reward: Array  # () float32, 1: subtract the no-battery cost from the cost in the reward
    month: Array  # (T,) int32, calendar month of each row, 1-12
    hour: Array  # (T,) int32, hour of the day of each row, 1-24
    date_ordinal: Array  # (T,) int32, proleptic Gregorian ordinal of each row's date (``date.fromordinal``)

    @property
    def num_hours(self) -> int:
        """Rows of the data year ``T`` (static)."""
        return self.price.shape[-1]

    @property
    def num_buildings(self) -> int:
        """Homes ``N`` (static)."""
        return self.load.shape[-1]

    def battery_step(self, fraction: Array, energy: Array, capacity: Array) -> BatteryStep:
        """One hour of ``battery.battery_step`` for every home (``(N,)`` arrays), with these params' battery constants."""
        return battery_step(
            fraction,
            energy,
            capacity,
            nominal_capacity=self.capacity,
            power=self.power,
            charge_efficiency=self.charge_efficiency,
            discharge_efficiency=self.discharge_efficiency,
            soc_min=self.soc_min,
            soc_max=self.soc_max,
            capacity_fade=self.capacity_fade,
        )


def to_params(scenario: Scenario, split: Split | str = Split.TRAIN) -> BuildingParams:
    """Build the traced params of a validated scenario for one split.

    Args:
        split: ``"train"`` or ``"eval"``: which rows (months, or an own home's days) ``reset`` draws
            episode starts from (``reset_at`` and ``simulate`` may start anywhere).
    """
    district = scenario.data()
    idx = scenario.indices
    prices = scenario.prices()
    starts, count = padded_starts(
        starts_inside(district, scenario.split_rows(Split(split)), scenario.episode_hours)
    )
    battery = scenario.battery_constants()

    def f32(x: object) -> Array:
        return jnp.asarray(np.asarray(x, dtype=np.float64), dtype=jnp.float32)

    return BuildingParams(
        features=f32(shared_features(district, prices)),
        load=f32(district.load[:, idx]),
        pv=f32(district.pv[:, idx]),
        price=f32(prices),
        carbon=f32(district.carbon_intensity),
        feed_in_price=f32(scenario.feed_in_price),
        carbon_price=f32(scenario.carbon_price),
        capacity=f32(battery["capacity"]),
        power=f32(battery["power"]),
        charge_efficiency=f32(battery["charge_efficiency"]),
        discharge_efficiency=f32(battery["discharge_efficiency"]),
        soc_min=f32(battery["soc_min"]),
        soc_max=f32(battery["soc_max"]),
        initial_soc=f32(battery["initial_soc"]),
        capacity_fade=f32(battery["capacity_fade"]),
        start_hours=jnp.asarray(starts, dtype=jnp.int32),
        num_starts=jnp.asarray(count, dtype=jnp.int32),
        episode_length=jnp.asarray(scenario.episode_hours, dtype=jnp.int32),
        reward_scale=f32(scenario.default_reward_scale),
        relative_reward=f32(1.0 if scenario.relative_reward else 0.0),
        month=jnp.asarray(district.month, dtype=jnp.int32),
        hour=jnp.asarray(district.hour, dtype=jnp.int32),
        date_ordinal=jnp.asarray(district.ordinals, dtype=jnp.int32),
    )


def per_building_params(scenario: Scenario, split: Split | str = Split.TRAIN) -> BuildingParams:
    """One single-home params (``N = 1``) per building of ``scenario``, stacked on a leading axis (for
    ``VmapEnv``); ``reset`` draws from the months of ``split``.
    """
    singles = [
        to_params(
            scenario.model_copy(update={"buildings": (b,), "reward_scale": scenario.reward_scale}), split
        )
        for b in scenario.buildings
    ]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *singles)
