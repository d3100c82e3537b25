"""Value of a schedule of daily moves on given price paths, with the hard rules."""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from decisions.energy.gas_storage.facility import (
    cash_flow,
    inventory_band,
    max_injection,
    max_withdrawal,
)
from decisions.energy.gas_storage.params import GasStorageParams
from decisions.energy.gas_storage.prices import discount_factors
from decisions.energy.gas_storage.scenario import TerminalRule


def inventory_paths(net_injection: Array, params: GasStorageParams) -> Array:
    """Inventory before each day and after the last: ``(..., D + 1)`` from moves ``(..., D)``."""
    start = jnp.broadcast_to(params.start_inventory, net_injection.shape[:-1])[..., None]
    return jnp.concatenate([start, start + jnp.cumsum(net_injection, axis=-1)], axis=-1)


def terminal_value(end_inventory: Array, last_spot: Array, params: GasStorageParams) -> Array:
    """Undiscounted value of the gas left at expiry (zero under the REQUIRED rule)."""
    if params.terminal is TerminalRule.SPOT_VALUE:
        return end_inventory * last_spot
    return jnp.zeros_like(end_inventory * last_spot)


def path_values(net_injection: Array, spots: Array, params: GasStorageParams) -> Array:
    """Discounted value of each path.

    Args:
        net_injection: ``(..., D)`` daily net injection (negative = withdrawal), assumed feasible.
        spots: ``(..., D)`` spot price per day on the same paths.

    Returns:
        ``(...)`` discounted cash flows plus the discounted terminal value.
    """
    df = discount_factors(params)
    cash = jnp.sum(df * cash_flow(net_injection, spots, params), axis=-1)
    end = params.start_inventory + jnp.sum(net_injection, axis=-1)
    return cash + df[-1] * terminal_value(end, spots[..., -1], params)


def feasibility_violation(net_injection: Array, params: GasStorageParams) -> Array:
    """Largest breach of the hard rules by a schedule (0 when feasible), for tests and checks."""
    inv = inventory_paths(net_injection, params)
    low, high = inventory_band(params)
    before = inv[..., :-1]
    breaches = [
        jnp.max(low - inv, axis=-1),
        jnp.max(inv - high, axis=-1),
        jnp.max(net_injection - max_injection(before, params), axis=-1),
        jnp.max(-net_injection - max_withdrawal(before, params), axis=-1),
    ]
    return jnp.maximum(0.0, jnp.max(jnp.stack(breaches), axis=0))
