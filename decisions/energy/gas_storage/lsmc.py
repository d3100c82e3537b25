"""Least-Squares Monte Carlo (Boogert & de Jong 2008) on the inventory grid of ``rolling``."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from decisions.energy.gas_storage.facility import inventory_band
from decisions.energy.gas_storage.params import GasStorageParams
from decisions.energy.gas_storage.prices import implied_forward, stationary_std
from decisions.energy.gas_storage.rolling import (
    Grid,
    bellman,
    execute_move,
    gather_moves,
    move_cash,
    node_of,
    terminal_values,
)
from decisions.energy.gas_storage.valuation import path_values


class BasisKind(enum.Enum):
    """Which price-state variables the continuation value is regressed on."""

    FACTOR = "factor"
    """Polynomials in the OU factor ``x``."""
    SPOT = "spot"
    """Polynomials in the spot relative to the day-0 forward curve."""
    BOTH = "both"
    """Both sets of polynomials (one constant)."""


@dataclass(frozen=True)
class LSMCConfig:
    """Settings of the regression (static: they shape the program)."""

    degree: int = 3
    """Highest polynomial power per variable."""
    basis: BasisKind = BasisKind.FACTOR
    """Regression variables."""
    ridge: float = 1e-6
    """Ridge term added to the (normalised) normal matrix's diagonal."""

    @property
    def n_features(self) -> int:
        """Number of basis functions B."""
        per = self.degree
        return 1 + (2 * per if self.basis is BasisKind.BOTH else per)


class LSMCResult(NamedTuple):
    """LSMC policy fitted on training paths and applied to evaluation paths."""

    actions: Array  # (P, D) net injection on the evaluation paths
    values: Array  # (P,) out-of-sample discounted path values (valuation.path_values)
    in_sample: Array  # () mean training value at the start node on day 0 (in-sample estimate)
    in_sample_stderr: Array  # () its standard error
    coefficients: Array  # (D, N, B) regression coefficients per day and node


def features(t: Array, x: Array, spots: Array, params: GasStorageParams, config: LSMCConfig) -> Array:
    """Basis functions of the price state on day ``t``: ``(P, B)`` from ``x, spots`` of shape ``(P,)``."""
    std = stationary_std(params)
    scale = jnp.where(std > 0, std, 1.0)
    variables = []
    if config.basis in (BasisKind.FACTOR, BasisKind.BOTH):
        variables.append(x / scale)
    if config.basis in (BasisKind.SPOT, BasisKind.BOTH):
        variables.append((spots / implied_forward(params)[t] - 1.0) / scale)
    powers = [jnp.ones_like(x)]
    for u in variables:
        powers += [u**k for k in range(1, config.degree + 1)]
    return jnp.stack(powers, axis=-1)


def _fit(phi: Array, targets: Array, ridge: float) -> Array:
    """Ridge least squares for many targets: ``(N, B)`` from ``phi (P, B)`` and ``targets (P, N)``."""
    n_paths = phi.shape[0]
    gram = phi.T @ phi / n_paths + ridge * jnp.eye(phi.shape[1], dtype=phi.dtype)
    return jnp.linalg.solve(gram, phi.T @ targets / n_paths).T


class _Moves(NamedTuple):
    """The inventory grid as (traced) jit arguments; its ``min_move`` stays a static argument."""

    allowed: Array  # (D, N, M) moves allowed per day and node
    levels: Array  # (N,) inventory of each node
    volumes: Array  # (M,) net injection of each move


def _moves(grid: Grid, dtype: jnp.dtype) -> _Moves:
    """The arrays of ``grid`` that training and evaluation share, in the paths' ``dtype``."""
    levels = jnp.asarray(grid.levels, dtype)
    allowed = jnp.asarray(grid.allowed)
    volumes = (jnp.arange(allowed.shape[-1]) + grid.min_move).astype(levels.dtype) * (levels[1] - levels[0])
    return _Moves(allowed, levels, volumes)


@partial(jax.jit, static_argnames=("min_move", "config"))
def _train(
    paths: tuple[Array, Array], params: GasStorageParams, moves: _Moves, min_move: int, config: LSMCConfig
) -> tuple[Array, Array, Array]:
    """Backward fit on training ``paths = (x, spots)``: per-day coefficients, day-0 mean and its stderr."""
    (x, spots), (allowed, levels, volumes) = paths, moves
    n_paths = x.shape[0]
    rows = jnp.arange(n_paths)[:, None]

    def back(realised: Array, t: Array) -> tuple[Array, Array]:
        phi = features(t, x[:, t], spots[:, t], params, config)  # (P, B)
        beta = _fit(phi, realised, config.ridge)  # (N, B)
        cash = move_cash(spots[:, t], t, volumes, params)  # (P, M)
        _, best = bellman(phi @ beta.T, cash, allowed[t], min_move)  # (P, N)
        target = jnp.clip(jnp.arange(levels.shape[0])[None, :] + best + min_move, 0, levels.shape[0] - 1)
        realised = jnp.take_along_axis(cash, best, axis=1) + realised[rows, target]
        return realised, beta

    terminal = terminal_values(spots[:, -1], levels, params)  # (P, N)
    realised, betas = jax.lax.scan(back, terminal, jnp.arange(params.horizon), reverse=True)
    start = node_of(jnp.reshape(params.start_inventory, (1,)), levels)[0]
    y0 = realised[:, start]
    return betas, y0.mean(), y0.std() / jnp.sqrt(n_paths)


@partial(jax.jit, static_argnames=("min_move", "config"))
def _apply(
    paths: tuple[Array, Array], params: GasStorageParams, moves: _Moves, min_move: int, config: LSMCConfig, betas: Array
) -> Array:
    """The fitted policy's net injections ``(P, D)`` on evaluation ``paths = (x, spots)``."""
    (x, spots), (allowed, levels, volumes) = paths, moves
    n_moves = allowed.shape[-1]
    band = inventory_band(params)

    def day(inventory: Array, t: Array) -> tuple[Array, Array]:
        phi = features(t, x[:, t], spots[:, t], params, config)  # (P, B)
        node = node_of(inventory, levels)
        continuation = gather_moves(phi @ betas[t].T, node, min_move, n_moves)  # (P, M)
        score = jnp.where(
            allowed[t][node], move_cash(spots[:, t], t, volumes, params) + continuation, -jnp.inf
        )
        act = execute_move(score, inventory, t, levels, min_move, params, band)
        return inventory + act, act

    start = jnp.broadcast_to(params.start_inventory, x.shape[:1]).astype(levels.dtype)
    _, acts = jax.lax.scan(day, start, jnp.arange(params.horizon))
    return acts.T


def lsmc(
    train: tuple[Array, Array],
    evaluate: tuple[Array, Array],
    params: GasStorageParams,
    grid: Grid,
    config: LSMCConfig = LSMCConfig(),
) -> LSMCResult:
    """Fit the LSMC policy on training paths and apply it out of sample.

    Args:
        train: ``(x, spots)`` training paths, each ``(P_train, D)`` (``prices.spot_paths``).
        evaluate: ``(x, spots)`` evaluation paths, each ``(P, D)``.
        grid: inventory grid (``rolling.make_grid(params)``).

    Returns:
        ``LSMCResult`` with out-of-sample actions and values and the in-sample day-0 estimate.
    """
    moves = _moves(grid, train[1].dtype)
    betas, in_sample, stderr = _train(train, params, moves, grid.min_move, config)
    actions = _apply(evaluate, params, moves, grid.min_move, config, betas)
    return LSMCResult(actions, path_values(actions, evaluate[1], params), in_sample, stderr, betas)


def lsmc_actions(
    fitted: LSMCResult, paths: tuple[Array, Array], params: GasStorageParams, grid: Grid, config: LSMCConfig = LSMCConfig()
) -> Array:
    """Apply an already fitted LSMC policy to further paths: its net injections ``(P, D)``.

    Args:
        fitted: the result of ``lsmc`` (its coefficients are used).
        paths: ``(x, spots)`` paths, each ``(P, D)``.
        params: problem parameters (those it was fitted on).
    """
    return _apply(paths, params, _moves(grid, paths[1].dtype), grid.min_move, config, fitted.coefficients)
