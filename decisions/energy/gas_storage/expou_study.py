"""QuantLib's storage test instance, solved by every method side by side: the bench's ``expou_*`` block."""

from __future__ import annotations

import importlib.metadata
import time
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.evaluate import compare
from decisions.core.progress import Progress
from decisions.energy.gas_storage import quantlib_peer, snapo_policy
from decisions.energy.gas_storage.controls import storage_controls
from decisions.energy.gas_storage.intrinsic import solve_intrinsic
from decisions.energy.gas_storage.lsmc import LSMCConfig
from decisions.energy.gas_storage.lsmc_study import best_fit, fit_figures, lsmc_by_paths
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rolling import make_grid, rolling_intrinsic
from decisions.energy.gas_storage.scenario import Scenario
from decisions.energy.gas_storage.snapo_policy import SnapoSettings

EXPOU_PATH_COUNTS = (4_096, 16_384, 65_536)
"""LSMC regression paths tried on the instance."""

FD_GRIDS = {"coarse": quantlib_peer.COARSE_GRID, "medium": quantlib_peer.FdGrid(200, 4), "fine": quantlib_peer.FdGrid(400, 4)}
"""QuantLib grids: its test's own, and two finer ones whose gap bounds the discretisation error."""


def quantlib_figures() -> dict[str, Any]:
    """QuantLib's values of the instance (``expou_quantlib_*``): its own test reproduced, then our grid."""
    scenario = Scenario.parse(quantlib_peer.QUANTLIB_INSTANCE)
    figures: dict[str, Any] = {
        "expou_quantlib_version": importlib.metadata.version("QuantLib"),
        "expou_quantlib_published_test": quantlib_peer.published_test_value(),
        "expou_quantlib_published_expected": quantlib_peer.PUBLISHED_TEST_VALUE,
    }
    for name, grid in FD_GRIDS.items():
        value, seconds = quantlib_peer.fd_storage_value(scenario, grid)
        figures[f"expou_quantlib_{name}_value"] = value
        figures[f"expou_quantlib_{name}_seconds"] = seconds
    figures["expou_quantlib_value"] = figures["expou_quantlib_fine_value"]
    figures["expou_quantlib_seconds"] = figures["expou_quantlib_fine_seconds"]
    figures["expou_quantlib_grid_gap"] = abs(figures["expou_quantlib_fine_value"] - figures["expou_quantlib_medium_value"])
    return figures


def exponential_ou_figures(
    progress: Progress | None = None,
    *,
    path_counts: Sequence[int] = EXPOU_PATH_COUNTS,
    paths: int = 4_096,
    seed: int = 0,
    settings: SnapoSettings | None = None,
    lsmc_config: LSMCConfig = LSMCConfig(),
    peer: bool = True,
) -> dict[str, Any]:
    """Every method on QuantLib's storage instance, on the same ``paths`` test paths (module docstring)."""
    report = progress or (lambda task, done, total: None)
    scenario = Scenario.parse(quantlib_peer.QUANTLIB_INSTANCE)
    params = to_params(scenario)
    key_train, key_lsmc, key_val, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    test = draw_normals(key_test, paths, scenario.horizon)
    figures: dict[str, Any] = {"expou_test_paths": paths}
    steps = 4
    report("exponential-OU instance", 0, steps)
    hedge = jnp.asarray(solve_intrinsic(params).net_injection, test.dtype)
    started = time.perf_counter()
    rolled = rolling_intrinsic(*spot_paths(test, params), params, make_grid(params))
    rolling_values = np.asarray(jax.block_until_ready(rolled.values), np.float64)
    rolling_seconds = time.perf_counter() - started
    report("exponential-OU instance", 1, steps)
    fits = lsmc_by_paths(
        scenario, path_counts, key=key_lsmc, validation=draw_normals(key_val, paths, scenario.horizon), test=test,
        config=lsmc_config, hedge=hedge,
    )
    figures.update(fit_figures(fits, "expou_lsmc"))
    best = best_fit(fits)
    figures["expou_lsmc_best_paths"] = best.paths
    report("exponential-OU instance", 2, steps)
    trained = snapo_policy.train_policy(scenario, settings or SnapoSettings(), key=key_train)
    snapo_values, moves = snapo_policy.values_and_moves(trained, test, params)
    report("exponential-OU instance", 3, steps)
    rolling = "rolling_intrinsic"
    values = {
        "snapo": np.asarray(snapo_values, np.float64),
        "lsmc_best": best.test_values,
        rolling: rolling_values,
    }
    controls = {
        "snapo": np.asarray(storage_controls(moves, test, params, hedge), np.float64),
        "lsmc_best": best.test_controls,
        rolling: np.asarray(storage_controls(rolled.actions, test, params, hedge), np.float64),
    }
    seconds = {"snapo": trained.train_seconds, "lsmc_best": best.seconds,
               rolling: rolling_seconds}
    table = compare(values, reference="snapo", controls=controls)
    for name in values:
        figures[f"expou_{name}_value"] = float(table.loc[name, "mean"])
        figures[f"expou_{name}_stderr"] = float(table.loc[name, "stderr"])
        figures[f"expou_{name}_seconds"] = float(seconds[name])
        if name != "snapo":
            figures[f"expou_snapo_minus_{name}"] = -float(table.loc[name, "diff_mean"])
            figures[f"expou_snapo_minus_{name}_stderr"] = float(table.loc[name, "diff_stderr"])
    if peer and quantlib_peer.available():
        started = time.perf_counter()
        figures.update(quantlib_figures())
        figures["expou_quantlib_block_seconds"] = time.perf_counter() - started
        for name in values:
            figures[f"expou_{name}_vs_quantlib"] = figures[f"expou_{name}_value"] / figures["expou_quantlib_value"]
            figures[f"expou_{name}_seconds_vs_quantlib"] = seconds[name] / figures["expou_quantlib_seconds"]
    figures["expou_quantlib_available"] = quantlib_peer.available()
    report("exponential-OU instance", steps, steps)
    return figures
