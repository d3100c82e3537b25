"""Battery physics of one hourly step, written once for the environment (the LP mirrors it).

All quantities are energies over the hour (kWh); with one-hour steps a power in kW is the same
number. The action is a fraction ``a`` in ``[-1, 1]`` of the nominal power ``P``, measured on
the grid side (positive: charge). With stored energy ``E``, current capacity ``C``, SoC limits
``[s_lo, s_hi]`` and efficiencies ``eta_c`` (stored / drawn) and ``eta_d`` (delivered / withdrawn)::

    charge    = min(max(a, 0) P,  (s_hi C - E) / eta_c)      drawn from the grid
    discharge = min(max(-a, 0) P, (E - s_lo C) eta_d)        delivered to the grid
    E'        = E + eta_c charge - discharge / eta_d

Capacity fade follows CityLearn's battery model: the capacity shrinks by
``fade x C_nominal x |E' - E| / (2 C)`` after each step, and the stored energy is then kept
inside the (new) SoC band.
"""

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

    Args:
        fraction: requested fraction of nominal power, clipped to ``[-1, 1]`` (+ charge).
        energy: stored energy before the step, kWh.
        capacity: current capacity, kWh.
        nominal_capacity: capacity when new, kWh (scales the fade).
        power: nominal power, kW (= kWh per step).
        charge_efficiency: stored / drawn when charging.
        discharge_efficiency: delivered / withdrawn when discharging.
        soc_min: lowest SoC, fraction of the current capacity.
        soc_max: highest SoC.
        capacity_fade: capacity loss coefficient.

    Returns:
        ``BatteryStep(charge, discharge, energy, capacity)``.
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
