"""Gas storage's policies answering today's state: the move, its value from today and its derivatives.

A state is a day ``t``, the inventory before today's move, today's forward curve for days ``t..D-1``
and today's spot. The run's problem (``params``) takes today's curve for those days; today's price
factor is the one that gives today's spot under the run's price model. From there a policy runs
on fixed common paths to the end, under the facility's hard rules, and is valued in cash
discounted to today. Every function here answers one state; ``answer`` answers a batch in one compiled
call (vmapped in chunks).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.smooth import hard_clip
from decisions.energy.gas_storage.facility import action_bounds, inventory_band
from decisions.energy.gas_storage.params import GasStorageParams, PriceKind
from decisions.energy.gas_storage.prices import (
    DT,
    daily_step,
    discount_factors,
    draw_normals,
    simulate_factor,
    spot,
)
from decisions.energy.gas_storage.simulator import Policy, clip_move, day_cash, inventory_recursion
from decisions.energy.gas_storage.valuation import terminal_value

PATHS = 64
"""Common price paths (antithetic) a state's value is estimated on."""
CHUNK = 256
"""States answered together (vmapped) inside ``answer``'s loop: bounds the reverse passes' memory."""
Z95 = 1.959963984540054
"""The standard normal's 97.5% quantile."""


@dataclass(frozen=True)
class Schedule:
    """A fixed desired move per day (implements ``simulator.Policy``): ``policy_params = {"moves": (D,)}``;
    the day-0 intrinsic LP schedule, or all zeros for do-nothing. The hard rules clip it."""

    def plan(self, policy_params: Any, x: Array, params: GasStorageParams) -> Array:
        """``(1, P, D)``: the day's scheduled move on every path."""
        del params
        return jnp.broadcast_to(policy_params["moves"], x.shape)[None]

    def act(self, plan_t: Array, inventory: Array, tau: Array | float, smooth: bool) -> Array:
        """The scheduled move, whatever the inventory."""
        del tau, smooth
        return plan_t[0] + 0.0 * inventory


def common_noise(params: GasStorageParams) -> Array:
    """The factor's shocks on the fixed antithetic paths every state is valued on (``factor_noise``;
    same state, same answer)."""
    half = draw_normals(jax.random.PRNGKey(0), PATHS // 2, params.horizon, params.forward.dtype)
    return factor_noise(jnp.concatenate([half, -half]), params)


def today_factor(day: Array, spot_today: Array, params: GasStorageParams) -> Array:
    """The price factor that gives ``spot_today`` on ``day`` under the run's price model (0 when deterministic)."""
    if params.price_kind is PriceKind.DETERMINISTIC:
        return 0.0 * spot_today
    return jnp.log(spot_today) - jnp.log(spot(day, jnp.zeros_like(spot_today), params))


def factor_noise(normals: Array, params: GasStorageParams) -> Array:
    """``(P, D)``: the factor's paths from 0 on day 0, driven by ``normals`` ``(P, D - 1)`` (0 when deterministic)."""
    if params.price_kind is PriceKind.DETERMINISTIC:
        return jnp.zeros((normals.shape[0], params.horizon), normals.dtype)
    return simulate_factor(normals, params.replace(price_kind=PriceKind.SEASONAL_OU))


def _factor_paths(day: Array, x0: Array, noise: Array, params: GasStorageParams) -> Array:
    """Factor paths ``(P, D)``: ``x0`` up to ``day``, then the model's exact daily steps on the paths'
    shocks (``factor_noise``: ``x_s = phi^(s - day) (x0 - e_day) + e_s``)."""
    days = jnp.arange(params.horizon)
    decay = jnp.exp(-params.mean_reversion * jnp.maximum(days - day, 0) * DT)
    later = decay * (x0 - noise[:, day][:, None]) + noise
    return jnp.where(days >= day, later, x0)


def value_from(
    policy: Policy, policy_params: Any, params: GasStorageParams, day: Array, inventory: Array,
    x0: Array, noise: Array, *, hold: bool = False,
) -> tuple[Array, Array, Array]:
    """``(value, move, plan)``: the policy's mean discounted value from ``(day, inventory, x0)`` on the
    paths, today's executed move and today's plan ``(K,)``. ``hold``: derivatives hold the policy's
    plan fixed (its decisions react to the inventory only: the envelope sensitivities)."""
    x = _factor_paths(day, x0, noise, params)
    days = jnp.arange(params.horizon)
    spots = spot(days[None, :], x, params)
    plan = policy.plan(policy_params, x, params)  # (K, P, D)
    if hold:
        plan = jax.lax.stop_gradient(plan)
    active = jnp.broadcast_to((days >= day).astype(plan.dtype), plan.shape[1:])[None]

    def local_move(t: Array, inv: Array, plan_t: Array, p: GasStorageParams, band: Any, tau: Any) -> Array:
        move = clip_move(t, inv, policy.act(plan_t[:-1], inv, tau, False), p, band, hard_clip, tau)
        return move * plan_t[-1]

    start = jnp.broadcast_to(inventory, noise.shape[:1])
    moves, _, final = inventory_recursion(local_move, start, jnp.concatenate([plan, active]), params,
                                          inventory_band(params), jnp.zeros((), plan.dtype))
    cash = day_cash(moves, spots, params, None, smooth=False)  # (P, D)
    df = discount_factors(params)
    weights = jnp.where(days >= day, df / df[day], 0.0)
    values = cash @ weights + df[-1] / df[day] * terminal_value(final, spots[:, -1], params)
    return jnp.mean(values), moves[0, day], plan[:, 0, day]


def next_spot(day: Array, x0: Array, params: GasStorageParams) -> tuple[Array, Array, Array]:
    """Tomorrow's spot under the model: ``(mean, low, high)`` with a central 95% interval (today's spot,
    certain, on the last day)."""
    phi, sd = daily_step(params)
    last = day >= params.horizon - 1
    tomorrow = jnp.minimum(day + 1, params.horizon - 1)
    mean_x = jnp.where(last, x0, phi * x0)
    sd = jnp.where(last | (params.price_kind is PriceKind.DETERMINISTIC), 0.0, sd)
    return (spot(tomorrow, mean_x + 0.5 * sd**2, params), spot(tomorrow, mean_x - Z95 * sd, params),
            spot(tomorrow, mean_x + Z95 * sd, params))


def _one(
    policy: Policy, other: Policy, policy_params: Any, other_params: Any, params: GasStorageParams,
    day: Array, inventory: Array, forward: Array, spot_today: Array, noise: Array,
) -> dict[str, Array]:
    """Everything a decision needs for one state (see ``answer``)."""

    def value(inv: Array, spot_now: Array, curve: Array) -> tuple[Array, tuple[Array, Array]]:
        today = params.replace(forward=curve)
        found, move, plan = value_from(policy, policy_params, today, day, inv, today_factor(day, spot_now, today),
                                       noise, hold=True)
        return found, (move, plan)

    grad = jax.value_and_grad(value, argnums=(0, 1, 2), has_aux=True)
    (found, (move, plan)), (d_inv, d_spot, d_curve) = grad(inventory, spot_today, forward)
    today = params.replace(forward=forward)
    x0 = today_factor(day, spot_today, today)
    alt_value, alt_move, _ = value_from(other, other_params, today, day, inventory, x0, noise)
    lower, upper = action_bounds(day, inventory, today, inventory_band(today))
    mean, low, high = next_spot(day, x0, today)
    return {"value": found, "move": move, "plan": plan, "alt_value": alt_value, "alt_move": alt_move,
            "lower": lower, "upper": upper, "mean": mean, "low": low, "high": high,
            "d_inventory": d_inv, "d_spot": d_spot, "d_forward": d_curve}


@partial(jax.jit, static_argnames=("policy", "other"))
def answer(
    policy: Policy, other: Policy, policy_params: Any, other_params: Any, params: GasStorageParams,
    day: Array, inventory: Array, forward: Array, spot_today: Array, noise: Array,
) -> dict[str, Array]:
    """A batch of states ``(B,)`` (``forward``: ``(B, D)``, today's curve in days ``day..``) answered by
    ``policy`` and the alternative ``other``: value, today's move and plan, the alternative's value and
    move, today's feasible moves, tomorrow's spot (mean, 95% interval) and the value's derivatives by
    today's inventory, spot and forward curve with the policy's plan held (``value_from``'s ``hold``)."""
    def one(inputs: tuple[Array, Array, Array, Array]) -> dict[str, Array]:
        return _one(policy, other, policy_params, other_params, params, *inputs, noise)

    return jax.lax.map(one, (day, inventory, forward, spot_today), batch_size=CHUNK)
