"""Control variates of a storage valuation: the trading gain on each day's unexpected price move."""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from decisions.energy.gas_storage.intrinsic import solve_intrinsic
from decisions.energy.gas_storage.params import GasStorageParams, PriceKind
from decisions.energy.gas_storage.prices import (
    daily_step,
    discount_factors,
    implied_forward,
    spot,
    spot_paths,
)
from decisions.energy.gas_storage.valuation import inventory_paths


def price_surprises(x: Array, spots: Array, params: GasStorageParams) -> Array:
    """``S_t - E_{t-1}[S_t]`` on each path and day ``(P, D)``; day 0 (known) is 0."""
    if params.price_kind is PriceKind.DETERMINISTIC:
        return jnp.zeros_like(spots)
    phi, sd = daily_step(params)
    days = jnp.arange(1, params.horizon)
    expected = spot(days[None, :], phi * x[:, :-1], params) * jnp.exp(0.5 * sd**2)
    return jnp.concatenate([jnp.zeros_like(spots[:, :1]), spots[:, 1:] - expected], axis=1)


def storage_controls(
    net_injection: Array, normals: Array, params: GasStorageParams, hedge: Array | None = None
) -> Array:
    """The mean-zero controls of a schedule on the paths of ``normals``: ``(P, 3)``.

    Args:
        net_injection: ``(P, D)`` the method's executed net injection on those paths.
        normals: ``(P, D - 1)`` the paths' standard normals.
        hedge: ``(D,)`` the static schedule hedged with forwards (default: the intrinsic LP's
            net injection, solved here; pass it to solve once for several methods).

    Returns:
        Columns ``sum_t DF_t V_t e_t`` (``V_t`` the inventory held into day ``t``),
        ``sum_t DF_t e_t`` and ``sum_t DF_t (-hedge_t) (S_t - F_t)``.
    """
    x, spots = spot_paths(normals, params)
    discount = discount_factors(params)
    surprise = price_surprises(x, spots, params) * discount
    held = inventory_paths(jnp.broadcast_to(net_injection, spots.shape), params)[:, :-1]
    if hedge is None:
        hedge = jnp.asarray(solve_intrinsic(params).net_injection, spots.dtype)
    forward_gain = jnp.sum(discount * -hedge * (spots - implied_forward(params)), axis=1)
    return jnp.stack([jnp.sum(held * surprise, axis=1), jnp.sum(surprise, axis=1), forward_gain], axis=1)
