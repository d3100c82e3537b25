"""The differentiable gas storage simulator: one step rule, two users.

``step_inventory`` is the only place where the physical rules of a day are
written (clip the desired move into ``facility.action_bounds``, update the
inventory, pay for the gas and the unit costs). It is used by

- ``rollout``: SNAPO's differentiable rollout of a ``Policy`` over a batch of
  price paths, a ``lax.scan`` over days. With ``smooth=True`` the clip is
  ``core.smooth.smooth_clip`` and the unit costs use a smooth ``|move|`` (the
  training surrogate, temperature ``tau`` in inventory units); with
  ``smooth=False`` the rules are exact (``hard_clip``, exact ``|move|``), which
  is how every reported value is computed.
- ``GasStorageEnv``: the same rules as a gymnax-style ``Environment`` for RL
  agents (action in ``[-1, 1]`` mapped linearly onto the day's feasible range).

A ``Policy`` has two halves so that the network never sits inside the scan:
``plan`` maps the exogenous state of every (path, day) (the factor path and
the traced params) to a small decision vector in one batched call, and ``act``
turns a day's plan and the current inventory into a desired move with cheap
element-wise arithmetic. Base-stock policies (``policy.py``) fit this form
exactly: their targets depend on time and prices only.
"""

from __future__ import annotations

from collections.abc import Callable
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


def step_inventory(
    t: Array,
    inventory: Array,
    desired_move: Array,
    spot_price: Array,
    params: GasStorageParams,
    band: tuple[Array, Array],
    clip_fn: ClipFn,
    tau: Array | float | None,
    *,
    smooth_costs: bool = False,
) -> tuple[Array, Array, Array]:
    """One day of the facility: clip the desired move, update inventory, compute cash.

    Args:
        t: day index (scalar int).
        inventory: inventory before the move, any shape ``(...)``.
        desired_move: desired net injection (negative = withdrawal), shape ``(...)``.
        spot_price: spot price of the day, shape ``(...)``.
        params: problem parameters.
        band: ``facility.inventory_band(params)``.
        clip_fn: ``smooth_clip`` (training) or ``hard_clip`` (evaluation).
        tau: temperature of the smooth surrogates, in inventory units (ignored by ``hard_clip``).
        smooth_costs: use the smooth ``|move|`` (``core.smooth.smooth_abs``) in the unit costs.

    Returns:
        ``(move, next_inventory, cash)``: the executed move, the inventory after it and
        the undiscounted cash of the day, each of shape ``(...)``.
    """
    lower, upper = action_bounds(t, inventory, params, band)
    move = clip_fn(desired_move, lower, upper, tau)
    if smooth_costs:
        half_sum = 0.5 * (params.injection_cost + params.withdrawal_cost)
        half_diff = 0.5 * (params.injection_cost - params.withdrawal_cost)
        cash = -spot_price * move - half_sum * smooth_abs(move, tau) - half_diff * move
    else:
        cash = cash_flow(move, spot_price, params)
    return move, inventory + move, cash


class Policy(Protocol):
    """A policy split into a batched exogenous ``plan`` and a cheap per-day ``act``."""

    def plan(self, policy_params: PyTree, x: Array, params: GasStorageParams) -> Array:
        """Decision vector of every (path, day) from the factor paths ``x`` ``(P, D)``: ``(P, D, K)``."""
        ...

    def act(self, plan_t: Array, inventory: Array, tau: Array | float, smooth: bool) -> Array:
        """Desired move ``(P,)`` from one day's plan ``(P, K)`` and the inventory ``(P,)``."""
        ...


class Trajectory(NamedTuple):
    """What happened on each path of a rollout."""

    moves: Array  # (P, D) executed net injection per day
    inventory: Array  # (P, D + 1) inventory before each day and after the last
    spots: Array  # (P, D) spot price per day
    cash: Array  # (P, D) undiscounted cash per day
    plan: Array  # (P, D, K) the policy's plan (e.g. base-stock targets)


class _Carry(NamedTuple):
    inventory: Array  # (P,)


def rollout(
    policy: Policy,
    policy_params: PyTree,
    params: GasStorageParams,
    normals: Array,
    *,
    tau: Array | float,
    smooth: bool,
    policy_view: GasStorageParams | None = None,
    unroll: int = 1,
) -> tuple[Array, Trajectory]:
    """Run a policy over a batch of price paths and value each path.

    Args:
        policy: the policy (``plan`` + ``act``).
        policy_params: its parameters.
        params: problem parameters (the simulator's inputs).
        normals: ``(P, D - 1)`` standard normals driving the prices.
        tau: temperature in inventory units (used when ``smooth``).
        smooth: smooth surrogates (training) or the exact rules (evaluation).
        policy_view: the parameters the policy *sees* (its features); defaults to
            ``params``. Pass ``jax.lax.stop_gradient(params)`` to hold the policy's
            decisions fixed with respect to the inputs (envelope-theorem sensitivities).
        unroll: days per iteration of the scan body (speed only).

    Returns:
        ``(values, trajectory)``: discounted value of each path ``(P,)`` (cash flows plus
        the discounted terminal value) and the ``Trajectory``.
    """
    x, spots = spot_paths(normals, params)  # (P, D) each
    view = params if policy_view is None else policy_view
    x_view = x if policy_view is None else simulate_factor(normals, view)
    plan = policy.plan(policy_params, x_view, view)  # (P, D, K)
    band = inventory_band(params)
    clip_fn = smooth_clip if smooth else hard_clip
    days = jnp.arange(params.horizon)
    start = jnp.broadcast_to(params.start_inventory, (normals.shape[0],)).astype(spots.dtype)

    def day(carry: _Carry, inputs: tuple[Array, Array, Array]) -> tuple[_Carry, tuple[Array, Array, Array]]:
        t, spot_t, plan_t = inputs
        desired = policy.act(plan_t, carry.inventory, tau, smooth)
        move, nxt, cash = step_inventory(
            t, carry.inventory, desired, spot_t, params, band, clip_fn, tau, smooth_costs=smooth
        )
        return _Carry(nxt), (move, cash, carry.inventory)

    final, (moves, cash, before) = jax.lax.scan(
        day, _Carry(start), (days, spots.T, jnp.swapaxes(plan, 0, 1)), unroll=unroll
    )
    moves, cash = moves.T, cash.T  # (P, D)
    inventory = jnp.concatenate([before.T, final.inventory[:, None]], axis=1)  # (P, D + 1)
    df = discount_factors(params)
    values = cash @ df + df[-1] * terminal_value(final.inventory, spots[:, -1], params)
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

    Observation ``[t / D, inventory fraction, x / stationary std, spot / forward - 1]``.
    The action ``a`` in ``[-1, 1]`` is mapped linearly onto the day's feasible range
    ``[lower, upper]`` (``a = -1``: withdraw as much as allowed, ``a = 1``: inject as
    much as allowed), so every action is feasible and the end condition always holds.
    The reward is the discounted cash of the day (plus the discounted terminal value on
    the last day); the episode terminates after the last day.

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
            [state.day / params.horizon, (state.inventory - params.min_inventory) / params.capacity, scaled_x, spot_ratio]
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
        new_state = state.replace(day=t + 1, inventory=nxt, factor=self._next_factor(key, state.factor, params))
        info = {"move": move, "spot": spot_t}
        return self._obs(new_state, params), new_state, reward, terminated, jnp.asarray(False), info

    @staticmethod
    def _next_factor(key: PRNGKey, x: Array, params: GasStorageParams) -> Array:
        """Exact OU step (``prices.simulate_factor``'s rule); 0 for deterministic prices."""
        if params.price_kind is PriceKind.DETERMINISTIC:
            return x
        phi = jnp.exp(-params.mean_reversion * DT)
        sd = params.volatility * jnp.sqrt((1.0 - phi**2) / (2.0 * params.mean_reversion))
        return phi * x + sd * jax.random.normal(key, (), x.dtype)

    def observation_space(self, params: GasStorageParams) -> Box:
        """Four unbounded reals (time and inventory fractions lie in ``[0, 1]``)."""
        return Box(-jnp.inf, jnp.inf, (4,), jnp.float32)

    def action_space(self, params: GasStorageParams) -> Box:
        """One number in ``[-1, 1]``: the position of the move within the day's feasible range."""
        return Box(-1.0, 1.0, (1,), jnp.float32)
