"""Physical rules of the facility: inventory-dependent rates and the feasible inventory band."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from decisions.energy.gas_storage.params import GasStorageParams
from decisions.energy.gas_storage.scenario import TerminalRule


def max_injection(inventory: Array, params: GasStorageParams) -> Array:
    """Max injection per day at this inventory (ratchet interpolation)."""
    return piecewise_linear(inventory, params.injection_knots, params.injection_rates)


def max_withdrawal(inventory: Array, params: GasStorageParams) -> Array:
    """Max withdrawal per day at this inventory (ratchet interpolation)."""
    return piecewise_linear(inventory, params.withdrawal_knots, params.withdrawal_rates)


def piecewise_linear(x: Array, knots: Array, values: Array) -> Array:
    """``jnp.interp(x, knots, values)`` (constant beyond the ends) as a sum of ramps.

    Args:
        x: points, any shape ``(...)``.
        knots: ``(K,)`` strictly increasing breakpoints.
        values: ``(K,)`` values at the breakpoints.
    """
    widths = knots[1:] - knots[:-1]  # (K-1,)
    slopes = (values[1:] - values[:-1]) / widths  # (K-1,)
    ramps = jnp.clip(x[..., None] - knots[:-1], 0.0, widths)  # (..., K-1)
    return values[0] + jnp.sum(slopes * ramps, axis=-1)


def inventory_band(params: GasStorageParams) -> tuple[Array, Array]:
    """Feasible inventory band per day, including the day after the last decision.

    Returns:
        ``(low, high)``, each ``(D + 1,)``: inventory on day ``t`` must lie in
        ``[low[t], high[t]]``; ``low[D] = high[D] = end_inventory`` under the
        REQUIRED terminal rule, else the capacity bounds.
    """
    horizon = params.horizon
    lo_cap, hi_cap = params.min_inventory, params.max_inventory
    if params.terminal is not TerminalRule.REQUIRED:
        ones = jnp.ones((horizon + 1,), params.forward.dtype)
        return lo_cap * ones, hi_cap * ones
    # high_t: the largest inventory that full withdrawal for one day brings down to high_{t+1}.
    after_withdrawal = params.withdrawal_knots - params.withdrawal_rates
    after_injection = params.injection_knots + params.injection_rates

    def back(carry: tuple[Array, Array], _) -> tuple[tuple[Array, Array], tuple[Array, Array]]:
        low_next, high_next = carry
        high = jnp.minimum(hi_cap, _inverse(high_next, after_withdrawal, params.withdrawal_knots))
        low = jnp.maximum(lo_cap, _inverse(low_next, after_injection, params.injection_knots))
        return (low, high), (low, high)

    end = params.end_inventory
    _, (lows, highs) = jax.lax.scan(back, (end, end), None, length=horizon)
    low = jnp.concatenate([lows[::-1], end[None]])
    high = jnp.concatenate([highs[::-1], end[None]])
    return low, high


def _inverse(y: Array, fx: Array, x: Array) -> Array:
    """Inverse of the increasing piecewise-linear map ``x -> fx`` (extended linearly past the knots)."""
    slope_lo = (x[1] - x[0]) / (fx[1] - fx[0])
    slope_hi = (x[-1] - x[-2]) / (fx[-1] - fx[-2])
    inside = jnp.interp(y, fx, x)
    below = x[0] + (y - fx[0]) * slope_lo
    above = x[-1] + (y - fx[-1]) * slope_hi
    return jnp.where(y < fx[0], below, jnp.where(y > fx[-1], above, inside))


def action_bounds(
    t: Array, inventory: Array, params: GasStorageParams, band: tuple[Array, Array]
) -> tuple[Array, Array]:
    """Hard bounds on the net injection (negative = withdrawal) on day ``t``.

    Args:
        band: ``inventory_band(params)``.

    Returns:
        ``(lower, upper)`` with ``lower <= 0 <= upper`` whenever holding is feasible.
    """
    low, high = band
    lower = jnp.maximum(-max_withdrawal(inventory, params), low[t + 1] - inventory)
    upper = jnp.minimum(max_injection(inventory, params), high[t + 1] - inventory)
    return lower, jnp.maximum(upper, lower)


def cash_flow(net_injection: Array, spot_price: Array, params: GasStorageParams) -> Array:
    """Undiscounted cash of one day's move: buy injections, sell withdrawals, pay unit costs."""
    injected = jnp.maximum(net_injection, 0.0)
    withdrawn = jnp.maximum(-net_injection, 0.0)
    return (
        -spot_price * net_injection
        - params.injection_cost * injected
        - params.withdrawal_cost * withdrawn
    )
