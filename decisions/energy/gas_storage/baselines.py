"""All gas storage baselines scored on common price paths, so comparisons are like for like."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.energy.gas_storage.facility import action_bounds, inventory_band
from decisions.energy.gas_storage.intrinsic import IntrinsicResult, intrinsic_values_on_paths, solve_intrinsic
from decisions.energy.gas_storage.lsmc import LSMCConfig, lsmc
from decisions.energy.gas_storage.params import GasStorageParams, to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rolling import make_grid, rolling_intrinsic
from decisions.energy.gas_storage.scenario import Scenario
from decisions.energy.gas_storage.spec import DEFAULT_LSMC_PATHS
from decisions.energy.gas_storage.valuation import path_values


class Baseline(enum.StrEnum):
    """Names of the baselines (string-valued: usable as plain ``str`` keys)."""

    INTRINSIC_LP = "intrinsic_lp"
    """The day-0 intrinsic LP schedule, fixed, on every path (static intrinsic)."""
    ROLLING_INTRINSIC = "rolling_intrinsic"
    """Re-solve the intrinsic problem every day on the forward view, act on the first move."""
    LSMC = "lsmc"
    """Least-squares Monte Carlo policy, fitted on separate paths, applied out of sample."""
    DO_NOTHING = "do_nothing"
    """Hold, except for the moves the inventory band forces."""


def do_nothing_schedule(params: GasStorageParams) -> Array:
    """The hold schedule: move 0 clipped to ``facility.action_bounds`` every day.

    Returns:
        ``(D,)`` net injection (zero unless the band forces a move).
    """
    band = inventory_band(params)

    def day(inventory: Array, t: Array) -> tuple[Array, Array]:
        lower, upper = action_bounds(t, inventory, params, band)
        act = jnp.clip(jnp.zeros_like(inventory), lower, upper)
        return inventory + act, act

    _, acts = jax.lax.scan(day, params.start_inventory, jnp.arange(params.horizon))
    return acts


@dataclass
class BaselineValues:
    """Per-path values (and actions, timings) of every baseline on the same evaluation paths."""

    values: dict[Baseline, np.ndarray] = field(default_factory=dict)  # name -> (P,) path values
    actions: dict[Baseline, np.ndarray] = field(default_factory=dict)  # name -> (P, D) net injection
    seconds: dict[Baseline, float] = field(default_factory=dict)  # name -> wall time (compile included)
    intrinsic: IntrinsicResult | None = None
    """The day-0 intrinsic LP solution (its ``value`` is the intrinsic value)."""
    lsmc_in_sample: float = float("nan")
    """LSMC's in-sample day-0 estimate on its training paths."""

    def summary(self) -> pd.DataFrame:
        """One row per baseline: ``baseline, mean, stderr, seconds``."""
        rows = []
        for name, vals in self.values.items():
            rows.append(
                {
                    "baseline": str(name),
                    "mean": float(vals.mean()),
                    "stderr": float(vals.std(ddof=1) / np.sqrt(vals.shape[0]))
                    if vals.shape[0] > 1
                    else np.nan,
                    "seconds": self.seconds.get(name, np.nan),
                }
            )
        return pd.DataFrame(rows)


def run_baselines(
    scenario: Scenario,
    normals_eval: Array,
    *,
    key: Array,
    lsmc_paths: int = DEFAULT_LSMC_PATHS,
    lsmc_config: LSMCConfig = LSMCConfig(),
    grid_step: float | None = None,
    intrinsic: IntrinsicResult | None = None,
    progress: Callable[[Baseline, float], None] | None = None,
) -> BaselineValues:
    """Value every baseline on the evaluation paths given by ``normals_eval``.

    Args:
        normals_eval: ``(P, D - 1)`` standard normals of the evaluation paths (``prices.draw_normals``),
            shared with whatever the baselines are compared against.
        key: PRNG key of LSMC's training paths (independent of the evaluation paths).
        lsmc_paths: number of LSMC training paths.
        grid_step: inventory grid step of rolling intrinsic and LSMC (default ``rolling.make_grid``'s).
        intrinsic: the day-0 intrinsic LP solution when the caller already has it (else it is solved).
        progress: called as ``progress(name, seconds)`` after each baseline.

    Returns:
        ``BaselineValues``: ``values[name]`` is the ``(P,)`` array of discounted path values.
    """
    params = to_params(scenario, dtype=normals_eval.dtype)
    x, spots = spot_paths(normals_eval, params)
    out = BaselineValues()

    def record(name: Baseline, started: float, actions: Array, values: Array) -> None:
        out.values[name] = np.asarray(jax.block_until_ready(values))
        out.actions[name] = np.broadcast_to(np.asarray(actions), spots.shape)
        out.seconds[name] = time.perf_counter() - started
        if progress is not None:
            progress(name, out.seconds[name])

    started = time.perf_counter()
    out.intrinsic = solve_intrinsic(params) if intrinsic is None else intrinsic
    record(
        Baseline.INTRINSIC_LP,
        started,
        out.intrinsic.net_injection,
        intrinsic_values_on_paths(out.intrinsic, spots, params),
    )

    started = time.perf_counter()
    grid = make_grid(params, step=grid_step)
    rolling = rolling_intrinsic(x, spots, params, grid)
    record(Baseline.ROLLING_INTRINSIC, started, rolling.actions, rolling.values)

    started = time.perf_counter()
    train = spot_paths(draw_normals(key, lsmc_paths, params.horizon, normals_eval.dtype), params)
    fitted = lsmc(train, (x, spots), params, grid, lsmc_config)
    out.lsmc_in_sample = float(fitted.in_sample)
    record(Baseline.LSMC, started, fitted.actions, fitted.values)

    started = time.perf_counter()
    hold = jnp.broadcast_to(do_nothing_schedule(params), spots.shape)
    record(Baseline.DO_NOTHING, started, hold, path_values(hold, spots, params))
    return out
