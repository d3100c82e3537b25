"""LSMC at several numbers of regression paths, each scored out of sample: which one SNAPO meets."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.evaluate import compare
from decisions.energy.gas_storage.controls import storage_controls
from decisions.energy.gas_storage.intrinsic import solve_intrinsic
from decisions.energy.gas_storage.lsmc import LSMCConfig, lsmc, lsmc_actions
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rolling import make_grid
from decisions.energy.gas_storage.scenario import Scenario
from decisions.energy.gas_storage.valuation import path_values

PATH_COUNTS = (4_096, 16_384, 65_536)
"""Regression paths tried by the bench (4k, 16k, 64k)."""


@dataclass(frozen=True)
class LSMCFit:
    """One LSMC fit: its in-sample estimate and its values on validation and test paths."""

    paths: int
    """Regression (training) paths."""
    in_sample: float
    """Mean realised value on the training paths (in sample: biased upwards)."""
    in_sample_stderr: float
    validation_value: float
    """Mean value on the validation paths (out of sample), on which the best fit is chosen."""
    test_values: np.ndarray
    """Value of each test path (out of sample), shape ``(P_test,)``."""
    test_controls: np.ndarray
    """The mean-zero control variates of those values, ``(P_test, 2)`` (``controls.storage_controls``)."""
    seconds: float
    """Fit and validation wall time, compilation included."""


def lsmc_by_paths(
    scenario: Scenario,
    path_counts: Sequence[int],
    *,
    key: jax.Array,
    validation: jax.Array,
    test: jax.Array,
    config: LSMCConfig = LSMCConfig(),
    hedge: jax.Array | None = None,
) -> list[LSMCFit]:
    """Fit LSMC on each number of training paths and score it on validation and test paths.

    Args:
        key: PRNG key of the training paths (each count draws its own, independent of the others).
        validation: ``(P_val, D - 1)`` standard normals of the validation paths.
        test: ``(P_test, D - 1)`` standard normals of the test paths (those the comparison scores on).
        hedge: ``(D,)`` the intrinsic LP's net injection, hedged by the control variates
            (``controls.storage_controls``); solved here when not given.

    Returns:
        One ``LSMCFit`` per count, in order.
    """
    params = to_params(scenario)
    grid = make_grid(params)
    val_paths, test_paths = spot_paths(validation, params), spot_paths(test, params)
    if hedge is None:
        hedge = jnp.asarray(solve_intrinsic(params).net_injection, test_paths[1].dtype)
    fits = []
    for n in path_counts:
        started = time.perf_counter()
        train = spot_paths(draw_normals(jax.random.fold_in(key, n), n, scenario.horizon), params)
        fitted = lsmc(train, val_paths, params, grid, config)
        validation_value = float(np.asarray(fitted.values, np.float64).mean())
        seconds = time.perf_counter() - started
        actions = lsmc_actions(fitted, test_paths, params, grid, config)
        fits.append(
            LSMCFit(
                paths=n,
                in_sample=float(fitted.in_sample),
                in_sample_stderr=float(fitted.in_sample_stderr),
                validation_value=validation_value,
                test_values=np.asarray(path_values(actions, test_paths[1], params), np.float64),
                test_controls=np.asarray(storage_controls(actions, test, params, hedge), np.float64),
                seconds=seconds,
            )
        )
    return fits


def best_fit(fits: Sequence[LSMCFit]) -> LSMCFit:
    """The fit with the highest validation value (out of sample, not the test paths)."""
    return max(fits, key=lambda fit: fit.validation_value)


def fit_figures(fits: Sequence[LSMCFit], prefix: str) -> dict[str, float | int]:
    """Each fit's figures ``<prefix>_<n>_*``: its test value (out of sample) and standard error, its
    validation value, its in-sample estimate with its standard error and optimism, its time."""
    figures: dict[str, float | int] = {}
    for fit in fits:
        value = float(fit.test_values.mean())
        figures.update({
            f"{prefix}_{fit.paths}_value": value,
            f"{prefix}_{fit.paths}_value_stderr": float(fit.test_values.std(ddof=1) / np.sqrt(len(fit.test_values))),
            f"{prefix}_{fit.paths}_validation_value": fit.validation_value,
            f"{prefix}_{fit.paths}_in_sample": fit.in_sample,
            f"{prefix}_{fit.paths}_in_sample_stderr": fit.in_sample_stderr,
            f"{prefix}_{fit.paths}_in_sample_minus_value": fit.in_sample - value,
            f"{prefix}_{fit.paths}_seconds": fit.seconds,
        })
    return figures


def lsmc_figures(
    fits: Sequence[LSMCFit], snapo_test_values: np.ndarray, snapo_test_controls: np.ndarray | None = None
) -> dict[str, float | int]:
    """Flat bench figures: each fit's values and time, and SNAPO against the best on the test paths."""
    figures = fit_figures(fits, "lsmc")
    best = best_fit(fits)
    values = {"snapo": np.asarray(snapo_test_values, np.float64), "lsmc": best.test_values}
    raw = compare(values, reference="lsmc").loc["snapo"]
    figures.update({
        "lsmc_best_paths": best.paths,
        "lsmc_test_paths": len(best.test_values),
        "snapo_vs_lsmc_best": float(raw["ratio_to_reference"]),
        "snapo_minus_lsmc_best": float(raw["diff_mean"]),
        "snapo_minus_lsmc_best_stderr": float(raw["diff_stderr"]),
        "snapo_minus_lsmc_best_stderr_raw": float(raw["diff_stderr"]),
    })
    if snapo_test_controls is not None:
        controls = {"snapo": snapo_test_controls, "lsmc": best.test_controls}
        adjusted = compare(values, reference="lsmc", controls=controls).loc["snapo"]
        figures.update({
            "snapo_minus_lsmc_best_cv": float(adjusted["diff_mean"]),
            "snapo_minus_lsmc_best_stderr": float(adjusted["diff_stderr"]),
            "snapo_minus_lsmc_best_variance_reduction": float(adjusted["diff_variance_reduction"]),
        })
    return figures
