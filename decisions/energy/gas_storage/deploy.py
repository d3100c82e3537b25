"""Gas storage's policies answering today's state: the move, its value from today and its derivatives.

A state is a day ``t``, the inventory before today's move, today's forward curve for days ``t..D-1``
and today's spot. The run's problem (``params``) takes today's curve for those days; today's price
factor is the one that gives today's spot under the run's price model. From there a policy runs
on fixed common paths to the end, under the facility's hard rules, and is valued in cash
discounted to today. Every function here answers one state; ``answer`` answers a batch in one compiled
call (vmapped in chunks of alike days; a chunk skips the days before its earliest state's day, where
every path of every state in it stands still).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.scans import skip_before
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
from decisions.energy.gas_storage.simulator import Policy, clip_move, day_cash
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


def _spots(day: Array, spot_now: Array, curve: Array, noise: Array, params: GasStorageParams) -> Array:
    """``(P, D)``: the spot paths from today's spot on today's curve (``params`` with ``forward = curve``)."""
    today = params.replace(forward=curve)
    x = _factor_paths(day, today_factor(day, spot_now, today), noise, today)
    return spot(jnp.arange(params.horizon)[None, :], x, today)


def _discounted(moves: Array, final: Array, spots: Array, day: Array, params: GasStorageParams) -> Array:
    """The mean over paths of the moves' cash from ``day`` on and the final inventory's terminal value,
    discounted to ``day`` (``moves``, ``spots``: ``(P, D)``; ``final``: ``(P,)``)."""
    days = jnp.arange(params.horizon)
    cash = day_cash(moves, spots, params, None, smooth=False)  # (P, D)
    df = discount_factors(params)
    weights = jnp.where(days >= day, df / df[day], 0.0)
    values = cash @ weights + df[-1] / df[day] * terminal_value(final, spots[:, -1], params)
    return jnp.mean(values)


class Rollouts(NamedTuple):
    """Both policies' moves ``(P, D)`` on the paths (0 before today) and final inventories ``(P,)``, with
    the slopes ``d move_t / d inventory_t`` of the first policy's day rule ``(P, D)``, its plan held."""

    moves: Array
    slope: Array
    final: Array
    alt_moves: Array
    alt_final: Array


def _local_move(policy: Policy, params: GasStorageParams, day: Array) -> Callable[[Array, Array, Array], Array]:
    """``local_move(t, inventory, plan_t)``: the policy's executed move on day ``t`` (element-wise in paths
    and days) under the hard rules, 0 before ``day``."""
    band = inventory_band(params)

    def local_move(t: Array, inventory: Array, plan_t: Array) -> Array:
        tau = jnp.zeros((), plan_t.dtype)
        move = clip_move(t, inventory, policy.act(plan_t, inventory, tau, False), params, band, hard_clip, tau)
        return move * (t >= day).astype(plan_t.dtype)

    return local_move


def _day_of(xs: tuple[Array, ...]) -> Array:
    return xs[0]


def rollouts(
    policy: Policy, other: Policy, plan: Array, alt_plan: Array, params: GasStorageParams, day: Array,
    inventory: Array, start: Array | int = 0,
) -> Rollouts:
    """Run ``policy`` on its plan ``(K, P, D)`` and ``other`` on ``alt_plan`` from ``inventory`` under the
    hard rules: the paths stand still before ``day`` and move from then on. The days before ``start``
    (at most ``day``; unbatched) are skipped, the same as standing still."""
    move_of, alt_move_of = _local_move(policy, params, day), _local_move(other, params, day)

    def live(carry: tuple[Array, Array], xs: tuple[Array, Array, Array]) -> tuple[tuple, tuple]:
        inv, alt_inv = carry
        t, plan_t, alt_plan_t = xs
        move, slope = jax.jvp(lambda i: move_of(t, i, plan_t), (inv,), (jnp.ones_like(inv),))
        alt_move = alt_move_of(t, alt_inv, alt_plan_t)
        return (inv + move, alt_inv + alt_move), (move, slope, alt_move)

    first = jnp.broadcast_to(inventory, plan.shape[1:2])
    days = (jnp.arange(params.horizon), jnp.moveaxis(plan, -1, 0), jnp.moveaxis(alt_plan, -1, 0))
    (final, alt_final), (moves, slope, alt_moves) = jax.lax.scan(
        skip_before(live, start, _day_of), (first, first), days)
    return Rollouts(moves.T, slope.T, final, alt_moves.T, alt_final)


def inventory_adjoint(slope: Array, d_moves: Array, d_final: Array, start: Array | int = 0) -> Array:
    """The derivative by today's inventory ``(P,)`` of a figure whose derivatives by the policy's moves
    ``(P, D)`` and final inventory ``(P,)`` are ``d_moves`` and ``d_final``, the plan held: the adjoint
    of ``inventory_{t+1} = inventory_t + move_t`` from the day rule's ``slope`` ``(P, D)`` (``rollouts``;
    the days before ``start`` stand still)."""
    days = jnp.arange(slope.shape[-1])

    def live(lam_next: Array, inputs: tuple[Array, Array, Array]) -> tuple[Array, None]:
        _, a_t, g_t = inputs
        return lam_next + (g_t + lam_next) * a_t, None

    lam, _ = jax.lax.scan(skip_before(live, start, _day_of), d_final, (days, slope.T, d_moves.T), reverse=True)
    return lam


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
    day: Array, inventory: Array, forward: Array, spot_today: Array, noise: Array, start: Array | int = 0,
) -> dict[str, Array]:
    """Everything a decision needs for one state (see ``answer``; ``start``: as ``rollouts``')."""
    today = params.replace(forward=forward)
    x0 = today_factor(day, spot_today, today)
    x = _factor_paths(day, x0, noise, today)
    plan = policy.plan(policy_params, x, today)  # (K, P, D)
    ran = rollouts(policy, other, plan, other.plan(other_params, x, today), today, day, inventory, start)

    # The plan held, the moves follow today's inventory only: spot and curve act through the spots.
    def value(moves: Array, final: Array, spot_now: Array, curve: Array) -> tuple[Array, Array]:
        spots = _spots(day, spot_now, curve, noise, params)
        return _discounted(moves, final, spots, day, params.replace(forward=curve)), spots

    grad = jax.value_and_grad(value, argnums=(0, 1, 2, 3), has_aux=True)
    (found, spots), (d_moves, d_final, d_spot, d_curve) = grad(ran.moves, ran.final, spot_today, forward)
    d_inv = jnp.sum(inventory_adjoint(ran.slope, d_moves, d_final, start))
    alt_value = _discounted(ran.alt_moves, ran.alt_final, spots, day, today)
    lower, upper = action_bounds(day, inventory, today, inventory_band(today))
    mean, low, high = next_spot(day, x0, today)
    return {"value": found, "move": ran.moves[0, day], "plan": plan[:, 0, day], "alt_value": alt_value,
            "alt_move": ran.alt_moves[0, day], "lower": lower, "upper": upper, "mean": mean, "low": low,
            "high": high, "d_inventory": d_inv, "d_spot": d_spot, "d_forward": d_curve}


def _chunked(answer_chunk: Any, inputs: tuple[Array, ...], size: int) -> dict[str, Array]:
    """``answer_chunk`` on consecutive chunks of ``size`` rows of ``inputs`` (the last one shorter when
    ``size`` does not divide the batch), one chunk after another, joined back into one batch."""
    batch = inputs[0].shape[0]
    size = max(min(size, batch), 1)
    whole = batch // size * size
    head = jax.tree_util.tree_map(lambda a: a[:whole].reshape(-1, size, *a.shape[1:]), inputs)
    found = jax.tree_util.tree_map(lambda a: a.reshape(whole, *a.shape[2:]), jax.lax.map(answer_chunk, head))
    if whole == batch:
        return found
    rest = answer_chunk(jax.tree_util.tree_map(lambda a: a[whole:], inputs))
    return jax.tree_util.tree_map(lambda a, b: jnp.concatenate([a, b]), found, rest)


@partial(jax.jit, static_argnames=("policy", "other"))
def answer(
    policy: Policy, other: Policy, policy_params: Any, other_params: Any, params: GasStorageParams,
    day: Array, inventory: Array, forward: Array, spot_today: Array, noise: Array,
) -> dict[str, Array]:
    """A batch of states ``(B,)`` (``forward``: ``(B, D)``, today's curve in days ``day..``) answered by
    ``policy`` and the alternative ``other``: value, today's move and plan, the alternative's value and
    move, today's feasible moves, tomorrow's spot (mean, 95% interval) and the value's derivatives by
    today's inventory, spot and forward curve with the policy's plan held (its decisions react to the
    inventory only: the envelope sensitivities). The answers come in the batch's order; inside, the
    states are answered sorted by day, so each chunk of ``CHUNK`` starts at its earliest day."""
    order = jnp.argsort(day)  # alike days together: a chunk starts at its earliest state's day

    def answer_chunk(inputs: tuple[Array, Array, Array, Array]) -> dict[str, Array]:
        one = partial(_one, policy, other, policy_params, other_params, params, noise=noise, start=jnp.min(inputs[0]))
        return jax.vmap(one)(*inputs)

    found = _chunked(answer_chunk, tuple(a[order] for a in (day, inventory, forward, spot_today)), CHUNK)
    back = jnp.argsort(order)
    return jax.tree_util.tree_map(lambda a: a[back], found)
