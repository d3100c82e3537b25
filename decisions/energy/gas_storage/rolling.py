"""Rolling intrinsic (Lai, Margot & Secomandi 2010) by a vectorised dynamic programme on an inventory grid."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.energy.gas_storage.facility import action_bounds, cash_flow, inventory_band
from decisions.energy.gas_storage.params import GasStorageParams
from decisions.energy.gas_storage.prices import discount_factors, forward_view, implied_forward
from decisions.energy.gas_storage.scenario import TerminalRule
from decisions.energy.gas_storage.valuation import path_values

_REL_TOL = 1e-5
_MAX_SLICED_MOVES = 8


@dataclass(frozen=True)
class Grid:
    """Inventory grid and the moves allowed on it (static: built once per problem, in numpy)."""

    minimum: float
    """Inventory of node 0 (the facility minimum)."""
    step: float
    """Inventory between neighbouring nodes."""
    min_move: int
    """Largest withdrawal as a (non-positive) number of steps."""
    allowed: np.ndarray  # (D, N, M) bool: move min_move + j allowed at node k on day t

    @property
    def n_nodes(self) -> int:
        """Number of nodes N."""
        return self.allowed.shape[1]

    @property
    def n_moves(self) -> int:
        """Number of candidate moves M."""
        return self.allowed.shape[2]

    @property
    def levels(self) -> np.ndarray:
        """Inventory at each node: shape ``(N,)``."""
        return self.minimum + self.step * np.arange(self.n_nodes)

    @property
    def moves(self) -> np.ndarray:
        """Candidate moves in steps: shape ``(M,)``."""
        return self.min_move + np.arange(self.n_moves)


def _as_fraction(value: float) -> Fraction | None:
    frac = Fraction(value).limit_denominator(1000)
    return frac if abs(float(frac) - value) <= 1e-6 * max(1.0, abs(value)) else None


def commensurate_step(params: GasStorageParams) -> float | None:
    """Largest step dividing the capacity, the start/end offsets and every rate value (None if none).

    Returns:
        The step, or None when a quantity is not a simple rational number.
    """
    lo = float(params.min_inventory)
    values = [float(params.capacity), float(params.start_inventory) - lo]
    if params.terminal is TerminalRule.REQUIRED:
        values.append(float(params.end_inventory) - lo)
    values += [float(r) for r in np.asarray(params.injection_rates)]
    values += [float(r) for r in np.asarray(params.withdrawal_rates)]
    fracs = [_as_fraction(v) for v in values if abs(v) > 1e-9]
    if any(f is None for f in fracs):
        return None
    denominator = math.lcm(*(f.denominator for f in fracs))
    numerator = math.gcd(*(int(f * denominator) for f in fracs))
    return numerator / denominator


def make_grid(
    params: GasStorageParams, *, step: float | None = None, resolution: int = 101, max_nodes: int = 401
) -> Grid:
    """Build the inventory grid and its allowed-move table.

    Args:
        step: node spacing; default ``commensurate_step(params)`` when that gives at most
            ``max_nodes`` nodes, else ``capacity / (resolution - 1)``.
        resolution: number of nodes of the fallback grid.
        max_nodes: largest commensurate grid accepted before falling back.

    Raises:
        ValueError: the step is so coarse that no injection or no withdrawal fits in one day.
    """
    lo, cap = float(params.min_inventory), float(params.capacity)
    if step is None:
        step = commensurate_step(params)
        if step is None or cap / step + 1 > max_nodes:
            step = cap / (resolution - 1)
    n_nodes = int(math.floor(cap / step + 1e-6)) + 1
    levels = lo + step * np.arange(n_nodes)
    tol = _REL_TOL * max(cap, 1.0)
    inj = np.interp(
        levels, np.asarray(params.injection_knots, float), np.asarray(params.injection_rates, float)
    )
    wd = np.interp(
        levels, np.asarray(params.withdrawal_knots, float), np.asarray(params.withdrawal_rates, float)
    )
    if min(inj.max(), wd.max()) < step - tol:
        raise ValueError(f"step: {step:g} exceeds the largest injection or withdrawal rate; use a finer grid")
    min_move = -int(math.floor(wd.max() / step + 1e-6))
    moves = min_move + np.arange(int(math.floor(inj.max() / step + 1e-6)) - min_move + 1)  # (M,)
    volume = moves[None, :] * step  # (1, M)
    target = np.arange(n_nodes)[:, None] + moves[None, :]  # (N, M)
    rate_ok = (volume <= inj[:, None] + tol) & (-volume <= wd[:, None] + tol)
    rate_ok &= (target >= 0) & (target < n_nodes)

    low, high = (np.asarray(b, float) for b in inventory_band(params))  # (D + 1,) each
    band_ok = (levels[None, :] >= low[:, None] - tol) & (levels[None, :] <= high[:, None] + tol)  # (D+1, N)
    horizon = params.horizon
    node_ok = np.zeros((horizon + 1, n_nodes), bool)
    if params.terminal is TerminalRule.REQUIRED:
        node_ok[horizon, int(np.argmin(np.abs(levels - float(params.end_inventory))))] = True
    else:
        node_ok[horizon] = band_ok[horizon]
    allowed = np.zeros((horizon, n_nodes, moves.shape[0]), bool)
    safe_target = np.clip(target, 0, n_nodes - 1)
    for t in range(horizon - 1, -1, -1):
        allowed[t] = rate_ok & node_ok[t + 1][safe_target]
        node_ok[t] = band_ok[t] & allowed[t].any(axis=1)
    return Grid(minimum=lo, step=float(step), min_move=int(min_move), allowed=allowed)


def bellman(value_next: Array, cash: Array, allowed: Array, min_move: int) -> tuple[Array, Array]:
    """One backward step of the grid DP.

    Args:
        value_next: ``(P, N)`` value of each node tomorrow.
        cash: ``(P, M)`` discounted cash of each move today.
        allowed: ``(N, M)`` allowed moves today.
        min_move: move of column 0, in steps.

    Returns:
        ``(value, best)``: ``(P, N)`` value today and ``(P, N)`` index of the best move.
    """
    n_nodes, n_moves = allowed.shape
    padded = jnp.pad(value_next, ((0, 0), (-min_move, n_moves - 1 + min_move)), constant_values=-jnp.inf)
    if n_moves <= _MAX_SLICED_MOVES:  # a few static slices: the fastest form on CPU
        cand = jnp.stack([padded[:, j : j + n_nodes] for j in range(n_moves)], axis=-1)  # (P, N, M)
    else:  # one gather: keeps the program small (and compiles fast) for fine grids
        cand = padded[:, np.arange(n_nodes)[:, None] + np.arange(n_moves)[None, :]]  # (P, N, M)
    cand = jnp.where(allowed, cand + cash[:, None, :], -jnp.inf)
    return cand.max(axis=-1), cand.argmax(axis=-1)


def move_cash(prices: Array, day: Array, volumes: Array, params: GasStorageParams) -> Array:
    """Discounted cash of every candidate move: ``(P, M)`` from prices ``(P,)`` and volumes ``(M,)``."""
    return discount_factors(params)[day] * cash_flow(volumes[None, :], prices[:, None], params)


def terminal_values(last_price: Array, levels: Array, params: GasStorageParams) -> Array:
    """Discounted value of each end node: ``(P, N)`` from the last day's price ``(P,)``."""
    if params.terminal is TerminalRule.SPOT_VALUE:
        return discount_factors(params)[-1] * last_price[:, None] * levels[None, :]
    return jnp.zeros((last_price.shape[0], levels.shape[0]), levels.dtype)


def execute_move(
    score: Array,
    inventory: Array,
    day: Array,
    levels: Array,
    min_move: int,
    params: GasStorageParams,
    band: tuple[Array, Array],
) -> Array:
    """Turn move scores at the current node into a feasible net injection.

    Args:
        score: ``(P, M)`` score of each move (``-inf`` where not allowed).
        inventory: ``(P,)`` current inventory.
        levels: ``(N,)`` node inventories.
        min_move: move of column 0, in steps.
        band: ``facility.inventory_band(params)``.

    Returns:
        ``(P,)`` net injection: the best move's target node minus the inventory, clipped to
        ``facility.action_bounds`` (hold is chosen when no move is allowed).
    """
    step = levels[1] - levels[0]
    node = node_of(inventory, levels)
    best = jnp.argmax(score, axis=-1)
    best = jnp.where(jnp.isfinite(score.max(axis=-1)), best, -min_move)
    target = levels[0] + (node + best + min_move).astype(levels.dtype) * step
    lower, upper = action_bounds(day, inventory, params, band)
    return jnp.clip(target - inventory, lower, upper)


def node_of(inventory: Array, levels: Array) -> Array:
    """Nearest node index of each inventory: ``(P,)`` ints."""
    step = levels[1] - levels[0]
    return jnp.clip(jnp.round((inventory - levels[0]) / step), 0, levels.shape[0] - 1).astype(jnp.int32)


def gather_moves(value: Array, node: Array, min_move: int, n_moves: int) -> Array:
    """Values of the nodes each move reaches: ``(P, M)`` from ``(P, N)`` values and ``(P,)`` nodes."""
    padded = jnp.pad(value, ((0, 0), (-min_move, n_moves - 1 + min_move)), constant_values=-jnp.inf)
    return jnp.take_along_axis(padded, node[:, None] + jnp.arange(n_moves)[None, :], axis=1)


class RollingResult(NamedTuple):
    """Rolling intrinsic on simulated paths."""

    actions: Array  # (P, D) net injection executed on each day
    values: Array  # (P,) discounted path values (valuation.path_values)
    day0_value: Array  # () grid intrinsic value of the day-0 forward view (the first re-solve)


@partial(jax.jit, static_argnames=("min_move",))
def _rolling(x: Array, spots: Array, params: GasStorageParams, allowed: Array, levels: Array, min_move: int):
    horizon = params.horizon
    n_moves = allowed.shape[-1]
    volumes = (jnp.arange(n_moves) + min_move).astype(levels.dtype) * (levels[1] - levels[0])  # (M,)
    band = inventory_band(params)
    view_of = jax.vmap(forward_view, in_axes=(None, 0, None))

    def day(inventory: Array, t: Array) -> tuple[Array, tuple[Array, Array]]:
        view = view_of(t, x[:, t], params)  # (P, D)

        def back(i: Array, value: Array) -> Array:
            when = horizon - 1 - i
            return bellman(value, move_cash(view[:, when], when, volumes, params), allowed[when], min_move)[0]

        tomorrow = jax.lax.fori_loop(0, horizon - 1 - t, back, terminal_values(view[:, -1], levels, params))
        node = node_of(inventory, levels)
        score = move_cash(spots[:, t], t, volumes, params) + gather_moves(tomorrow, node, min_move, n_moves)
        score = jnp.where(allowed[t][node], score, -jnp.inf)  # (P, M)
        act = execute_move(score, inventory, t, levels, min_move, params, band)
        return inventory + act, (act, score.max(axis=-1))

    start = jnp.broadcast_to(params.start_inventory, x.shape[:1]).astype(levels.dtype)
    _, (acts, best) = jax.lax.scan(day, start, jnp.arange(horizon))
    return acts.T, best[0, 0]


def rolling_intrinsic(x: Array, spots: Array, params: GasStorageParams, grid: Grid) -> RollingResult:
    """Rolling intrinsic policy on simulated paths.

    Args:
        x: ``(P, D)`` factor paths (``prices.spot_paths``).
        spots: ``(P, D)`` spot prices on the same paths.
        grid: inventory grid (``make_grid(params)``).

    Returns:
        ``RollingResult(actions (P, D), values (P,), day0_value)``.
    """
    dtype = spots.dtype
    levels = jnp.asarray(grid.levels, dtype)
    actions, day0 = _rolling(x, spots, params, jnp.asarray(grid.allowed), levels, grid.min_move)
    return RollingResult(actions, path_values(actions, spots, params), day0)


@partial(jax.jit, static_argnames=("min_move",))
def _grid_intrinsic(forward: Array, params: GasStorageParams, allowed: Array, levels: Array, min_move: int):
    n_moves = allowed.shape[-1]
    volumes = (jnp.arange(n_moves) + min_move).astype(levels.dtype) * (levels[1] - levels[0])
    prices = forward[None, :]  # (1, D)

    def back(value: Array, t: Array) -> tuple[Array, Array]:
        value, best = bellman(value, move_cash(prices[:, t], t, volumes, params), allowed[t], min_move)
        return value, best[0]

    days = jnp.arange(params.horizon)
    value0, best = jax.lax.scan(back, terminal_values(prices[:, -1], levels, params), days, reverse=True)
    band = inventory_band(params)

    def forward_pass(inventory: Array, t: Array) -> tuple[Array, Array]:
        node = node_of(inventory, levels)
        score = jnp.where(jnp.arange(n_moves) == best[t, node[0]], 0.0, -jnp.inf)[None, :]
        act = execute_move(score, inventory, t, levels, min_move, params, band)
        return inventory + act, act[0]

    start = jnp.reshape(params.start_inventory, (1,)).astype(levels.dtype)
    _, acts = jax.lax.scan(forward_pass, start, days)
    return value0[0, node_of(start, levels)[0]], acts


def grid_intrinsic(params: GasStorageParams, grid: Grid, forward: Array | None = None) -> tuple[Array, Array]:
    """Intrinsic value and schedule by the grid DP on a deterministic curve.

    Args:
        forward: ``(D,)`` forward curve; default ``prices.implied_forward(params)``.

    Returns:
        ``(value, net_injection)``: the DP value at the start node and the ``(D,)`` schedule.
    """
    curve = implied_forward(params) if forward is None else jnp.asarray(forward, params.forward.dtype)
    levels = jnp.asarray(grid.levels, curve.dtype)
    return _grid_intrinsic(curve, params, jnp.asarray(grid.allowed), levels, grid.min_move)
