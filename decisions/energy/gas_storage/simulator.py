"""The differentiable gas storage simulator: one set of day rules, two users."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.smooth import hard_clip, smooth_abs, smooth_clip
from decisions.core.spaces import Box
from decisions.energy.gas_storage.facility import action_bounds, cash_flow, inventory_band
from decisions.energy.gas_storage.params import GasStorageParams, PriceKind, to_params
from decisions.energy.gas_storage.prices import (
    DT,
    discount_factors,
    initial_factor,
    simulate_factor,
    spot,
    spot_paths,
    stationary_std,
)
from decisions.energy.gas_storage.scenario import Scenario
from decisions.energy.gas_storage.valuation import terminal_value

PyTree = Any
ClipFn = Callable[[Array, Array, Array, Any], Array]
"""``clip_fn(x, lo, hi, tau)``: ``core.smooth.smooth_clip`` or ``core.smooth.hard_clip``."""
Band = tuple[Array, Array]
"""The feasible inventory band ``(low, high)`` per day: ``facility.inventory_band(params)``."""


def clip_move(
    t: Array,
    inventory: Array,
    desired_move: Array,
    params: GasStorageParams,
    band: Band,
    clip_fn: ClipFn,
    tau: Array | float | None,
) -> Array:
    """The executed move: the desired move clipped into ``facility.action_bounds``.

    Args:
        inventory: inventory before the move, shape ``(...)``.
        desired_move: desired net injection (negative = withdrawal), shape ``(...)``.
        band: ``facility.inventory_band(params)``.
        clip_fn: ``smooth_clip`` (training) or ``hard_clip`` (evaluation).
        tau: temperature in inventory units (ignored by ``hard_clip``).
    """
    lower, upper = action_bounds(t, inventory, params, band)
    return clip_fn(desired_move, lower, upper, tau)


def day_cash(
    move: Array, spot_price: Array, params: GasStorageParams, tau: Array | float | None, *, smooth: bool
) -> Array:
    """Undiscounted cash of executed moves: pay for injected gas, sell withdrawn gas, pay unit costs.

    Args:
        move: net injection, any shape.
        spot_price: spot price, same shape.
        tau: temperature of the smooth ``|move|`` (used when ``smooth``).
        smooth: unit costs on ``core.smooth.smooth_abs(move, tau)`` instead of ``|move|``.

    Returns:
        The cash, same shape as ``move``.
    """
    if not smooth:
        return cash_flow(move, spot_price, params)
    half_sum = 0.5 * (params.injection_cost + params.withdrawal_cost)
    half_diff = 0.5 * (params.injection_cost - params.withdrawal_cost)
    return -spot_price * move - half_sum * smooth_abs(move, tau) - half_diff * move


def step_inventory(
    t: Array,
    inventory: Array,
    desired_move: Array,
    spot_price: Array,
    params: GasStorageParams,
    band: Band,
    clip_fn: ClipFn,
    tau: Array | float | None,
    *,
    smooth_costs: bool = False,
) -> tuple[Array, Array, Array]:
    """One day of the facility: clip the desired move, update inventory, compute cash.

    Args:
        inventory: inventory before the move, any shape ``(...)``.
        desired_move: desired net injection (negative = withdrawal), shape ``(...)``.
        spot_price: spot price of the day, shape ``(...)``.
        band: ``facility.inventory_band(params)``.
        clip_fn: ``smooth_clip`` (training) or ``hard_clip`` (evaluation).
        tau: temperature of the smooth surrogates, in inventory units (ignored by ``hard_clip``).
        smooth_costs: use the smooth ``|move|`` (``core.smooth.smooth_abs``) in the unit costs.

    Returns:
        ``(move, next_inventory, cash)``: the executed move, the inventory after it and
        the undiscounted cash of the day, each of shape ``(...)``.
    """
    move = clip_move(t, inventory, desired_move, params, band, clip_fn, tau)
    return move, inventory + move, day_cash(move, spot_price, params, tau, smooth=smooth_costs)


class Policy(Protocol):
    """A policy split into a batched exogenous ``plan`` and a cheap per-day ``act``."""

    def plan(self, policy_params: PyTree, x: Array, params: GasStorageParams) -> Array:
        """Decision vectors of every (path, day) from the factor paths ``x`` ``(P, D)``: ``(K, P, D)``."""
        ...

    def act(self, plan_t: Array, inventory: Array, tau: Array | float, smooth: bool) -> Array:
        """Desired move from a plan ``(K, ...)`` and the inventory ``(...)`` (one day, or all days at once)."""
        ...


class Trajectory(NamedTuple):
    """What happened on each path of a rollout."""

    moves: Array  # (P, D) executed net injection per day
    inventory: Array  # (P, D + 1) inventory before each day and after the last
    spots: Array  # (P, D) spot price per day
    cash: Array  # (P, D) undiscounted cash per day
    plan: Array  # (K, P, D) the policy's plan (e.g. base-stock targets), decision axis first


LocalMove = Callable[[Array, Array, Array, GasStorageParams, Band, Any], Array]
"""``local_move(t, inventory, plan_t, params, band, tau) -> move``, element-wise in paths and days."""


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def inventory_recursion(
    local_move: LocalMove,
    start: Array,
    plan: Array,
    params: GasStorageParams,
    band: Band,
    tau: Array,
) -> tuple[Array, Array, Array]:
    """Run ``inventory_{t+1} = inventory_t + move_t`` over all days, with an adjoint reverse pass.

    Args:
        start: ``(P,)`` inventory on day 0.
        plan: ``(K, P, D)`` the policy's plan.
        band: ``facility.inventory_band(params)``.

    Returns:
        ``(moves, before, final)``: ``(P, D)`` moves, ``(P, D)`` inventory before each day, ``(P,)`` final inventory.
    """

    def day(inventory: Array, inputs: tuple[Array, Array]) -> tuple[Array, tuple[Array, Array]]:
        t, plan_t = inputs
        move = local_move(t, inventory, plan_t, params, band, tau)
        return inventory + move, (move, inventory)

    days = jnp.arange(plan.shape[-1])
    final, (moves, before) = jax.lax.scan(day, start, (days, jnp.moveaxis(plan, -1, 0)))
    return moves.T, before.T, final


def _recursion_fwd(local_move, start, plan, params, band, tau):
    out = inventory_recursion(local_move, start, plan, params, band, tau)
    return out, (out[1], plan, params, band, tau)


def _recursion_bwd(local_move, residuals, cotangents):
    before, plan, params, band, tau = residuals  # before: (P, D)
    g_moves, g_before, g_final = cotangents  # (P, D), (P, D), (P,)
    days = jnp.arange(plan.shape[-1])
    # One linearisation of the day rule at the saved inventories serves both the
    # slope d move / d inventory (a jvp) and the pullback to the other inputs (its transpose).
    _, linear = jax.linearize(
        lambda inv, *rest: local_move(days, inv, *rest), before, plan, params, band, tau
    )
    zeros = jax.tree_util.tree_map(jnp.zeros_like, (plan, params, band, tau))
    slope = linear(jnp.ones_like(before), *zeros)  # (P, D)

    def back(lam_next: Array, inputs: tuple[Array, Array, Array]) -> tuple[Array, Array]:
        a_t, gm_t, gi_t = inputs
        total = gm_t + lam_next  # d value / d move_t
        return lam_next + total * a_t + gi_t, total

    lam0, total = jax.lax.scan(back, g_final, (slope.T, g_moves.T, g_before.T), reverse=True)
    pullback = jax.linear_transpose(lambda *rest: linear(jnp.zeros_like(before), *rest), *zeros)
    return (lam0, *pullback(total.T))


inventory_recursion.defvjp(_recursion_fwd, _recursion_bwd)


def rollout(
    policy: Policy,
    policy_params: PyTree,
    params: GasStorageParams,
    normals: Array,
    *,
    smooth: bool,
    tau: Array | float,
    policy_view: GasStorageParams | None = None,
    hold_policy: bool = False,
) -> tuple[Array, Trajectory]:
    """Run a policy over a batch of price paths and value each path.

    Args:
        policy: the policy (``plan`` + ``act``).
        params: problem parameters (the simulator's inputs).
        normals: ``(P, D - 1)`` standard normals driving the prices.
        smooth: smooth surrogates (training) or the exact rules (evaluation).
        tau: temperature in inventory units (used when ``smooth``).
        policy_view: the parameters the policy *sees* (its features); defaults to
            ``params``. With ``policy_view`` fixed and ``params`` bumped, finite
            differences hold the policy's decisions fixed.
        hold_policy: ``stop_gradient`` on the plan: derivatives hold the policy's
            decisions fixed with respect to the inputs (envelope-theorem sensitivities).

    Returns:
        ``(values, trajectory)``: discounted value of each path ``(P,)`` (cash flows plus
        the discounted terminal value) and the ``Trajectory``.
    """
    x, spots = spot_paths(normals, params)  # (P, D) each
    view = params if policy_view is None else policy_view
    x_view = x if policy_view is None else simulate_factor(normals, view)
    plan = policy.plan(policy_params, x_view, view)  # (K, P, D)
    if hold_policy:
        plan = jax.lax.stop_gradient(plan)
    band = inventory_band(params)
    clip_fn = smooth_clip if smooth else hard_clip
    start = jnp.broadcast_to(params.start_inventory, (normals.shape[0],)).astype(spots.dtype)

    def local_move(
        t: Array, inventory: Array, plan_t: Array, p: GasStorageParams, b: Band, tt
    ) -> Array:
        desired = policy.act(plan_t, inventory, tt, smooth)
        return clip_move(t, inventory, desired, p, b, clip_fn, tt)

    # The recursion yields only moves and inventories; the cash of all days is one
    # vectorised ``day_cash`` afterwards (``step_inventory``'s rule, split for speed).
    moves, before, final = inventory_recursion(
        local_move, start, plan, params, band, jnp.asarray(tau, spots.dtype)
    )
    cash = day_cash(moves, spots, params, tau, smooth=smooth)  # (P, D)
    inventory = jnp.concatenate([before, final[:, None]], axis=1)  # (P, D + 1)
    df = discount_factors(params)
    values = cash @ df + df[-1] * terminal_value(final, spots[:, -1], params)
    return values, Trajectory(moves=moves, inventory=inventory, spots=spots, cash=cash, plan=plan)


@struct.dataclass
class GasStorageState:
    """State of ``GasStorageEnv``."""

    day: Array  # () int32, next decision day
    inventory: Array  # () inventory before today's move
    factor: Array  # () OU factor x of today
    band_low: Array  # (D + 1,) feasible band (computed once per episode at reset)
    band_high: Array  # (D + 1,)


class GasStorageEnv(Environment[GasStorageState, GasStorageParams]):
    """Gas storage as a functional environment for RL agents (same rules as ``rollout``).

    Args:
        scenario: the scenario of ``default_params`` (default: ``Scenario()``).
    """

    def __init__(self, scenario: Scenario | None = None) -> None:
        self.scenario = Scenario() if scenario is None else scenario

    @property
    def default_params(self) -> GasStorageParams:
        """The traced params of the scenario."""
        return to_params(self.scenario)

    def _obs(self, state: GasStorageState, params: GasStorageParams) -> Array:
        t = jnp.minimum(state.day, params.horizon - 1)
        std = stationary_std(params)
        scaled_x = jnp.where(std > 0, state.factor / jnp.where(std > 0, std, 1.0), 0.0)
        spot_ratio = spot(t, state.factor, params) / params.forward[t] - 1.0
        obs = jnp.stack(
            [
                state.day / params.horizon,
                (state.inventory - params.min_inventory) / params.capacity,
                scaled_x,
                spot_ratio,
            ]
        )
        return obs.astype(jnp.float32)

    def reset(self, key: PRNGKey, params: GasStorageParams) -> tuple[Array, GasStorageState]:
        """Start on day 0 with the start inventory and the day-0 factor (deterministic)."""
        low, high = inventory_band(params)
        state = GasStorageState(
            day=jnp.int32(0),
            inventory=params.start_inventory,
            factor=initial_factor(params),
            band_low=low,
            band_high=high,
        )
        return self._obs(state, params), state

    def step(
        self, key: PRNGKey, state: GasStorageState, action: Array, params: GasStorageParams
    ) -> tuple[Array, GasStorageState, Array, Array, Array, Info]:
        """Execute today's move, pay for it and draw tomorrow's price factor."""
        normal = jax.random.normal(key, (), state.factor.dtype)
        return self.step_with_normal(state, action, normal, params)

    def step_with_normal(
        self, state: GasStorageState, action: Array, normal: Array, params: GasStorageParams
    ) -> tuple[Array, GasStorageState, Array, Array, Array, Info]:
        """``step`` with tomorrow's standard-normal shock given, so agents and baselines can be
        scored on common price paths (the ``normals`` of ``prices.draw_normals``)."""
        t = state.day
        band = (state.band_low, state.band_high)
        a = jnp.clip(jnp.reshape(action, ()), -1.0, 1.0)
        lower, upper = action_bounds(t, state.inventory, params, band)
        desired = lower + 0.5 * (a + 1.0) * (upper - lower)
        spot_t = spot(t, state.factor, params)
        move, nxt, cash = step_inventory(t, state.inventory, desired, spot_t, params, band, hard_clip, None)
        df = discount_factors(params)
        terminated = t + 1 >= params.horizon
        end_value = jnp.where(terminated, terminal_value(nxt, spot_t, params), 0.0)
        reward = (df[t] * (cash + end_value)).astype(jnp.float32)
        new_state = state.replace(
            day=t + 1, inventory=nxt, factor=self._next_factor(normal, state.factor, params)
        )
        info = {"move": move, "spot": spot_t}
        return self._obs(new_state, params), new_state, reward, terminated, jnp.asarray(False), info

    @staticmethod
    def _next_factor(normal: Array, x: Array, params: GasStorageParams) -> Array:
        """Exact OU step (``prices.simulate_factor``'s rule) driven by ``normal``; unchanged for
        deterministic prices."""
        if params.price_kind is PriceKind.DETERMINISTIC:
            return x
        phi = jnp.exp(-params.mean_reversion * DT)
        sd = params.volatility * jnp.sqrt((1.0 - phi**2) / (2.0 * params.mean_reversion))
        return phi * x + sd * normal

    def observation_space(self, params: GasStorageParams) -> Box:
        """Four unbounded reals (time and inventory fractions lie in ``[0, 1]``)."""
        return Box(-jnp.inf, jnp.inf, (4,), jnp.float32)

    def action_space(self, params: GasStorageParams) -> Box:
        """One number in ``[-1, 1]``: the position of the move within the day's feasible range."""
        return Box(-1.0, 1.0, (1,), jnp.float32)
