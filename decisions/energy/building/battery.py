"""Battery physics of one hourly step, written once for the environment (the LP mirrors it)."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array


class BatteryStep(NamedTuple):
    """Result of one battery step; every field has the shape of the inputs (one entry per home)."""

    charge: Array  # energy drawn from the grid to charge, kWh >= 0
    discharge: Array  # energy delivered to the grid by discharging, kWh >= 0
    energy: Array  # stored energy after the step, kWh
    capacity: Array  # capacity after fade, kWh


def battery_step(
    fraction: Array,
    energy: Array,
    capacity: Array,
    *,
    nominal_capacity: Array,
    power: Array,
    charge_efficiency: Array,
    discharge_efficiency: Array,
    soc_min: Array,
    soc_max: Array,
    capacity_fade: Array,
) -> BatteryStep:
    """Apply a (dis)charge request for one hour, clipped to the power and SoC limits.

    ``fraction`` of nominal ``power`` (kW = kWh per step) is clipped to ``[-1, 1]`` (+ charge); energies
    and capacities are kWh, ``nominal_capacity`` scales the fade, SoC bounds are fractions of the
    current capacity, efficiencies are stored / drawn and delivered / withdrawn.
    Returns ``BatteryStep(charge, discharge, energy, capacity)``.
    """
    request = jnp.clip(fraction, -1.0, 1.0) * power
    headroom = jnp.maximum(soc_max * capacity - energy, 0.0)
    available = jnp.maximum(energy - soc_min * capacity, 0.0)
    charge = jnp.minimum(jnp.maximum(request, 0.0), headroom / charge_efficiency)
    discharge = jnp.minimum(jnp.maximum(-request, 0.0), available * discharge_efficiency)
    stored_in = charge_efficiency * charge
    stored_out = discharge / discharge_efficiency
    new_capacity = capacity - capacity_fade * nominal_capacity * (stored_in + stored_out) / (2.0 * capacity)
    new_energy = jnp.clip(energy + stored_in - stored_out, soc_min * new_capacity, soc_max * new_capacity)
    return BatteryStep(charge, discharge, new_energy, new_capacity)
