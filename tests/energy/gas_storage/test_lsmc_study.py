"""LSMC at several numbers of regression paths: out-of-sample scoring, selection on validation paths."""

from __future__ import annotations

from datetime import date

import jax
import numpy as np
import pytest

from decisions.energy.gas_storage.lsmc import lsmc, lsmc_actions
from decisions.energy.gas_storage.lsmc_study import (
    best_fit,
    lsmc_by_paths,
    lsmc_figures,
)
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rolling import make_grid
from decisions.energy.gas_storage.scenario import Scenario, seasonal_forward_curve

DAYS, PATHS = 60, 256  # the shapes of test_lsmc_baselines: its programs are reused


def _scenario() -> Scenario:
    start = date(2026, 9, 1)
    return Scenario(forward_curve=seasonal_forward_curve(DAYS, start=start), start_date=start)


def test_applying_a_fit_to_its_evaluation_paths_gives_its_actions() -> None:
    scenario = _scenario()
    params, grid = to_params(scenario), make_grid(to_params(scenario))
    train = spot_paths(draw_normals(jax.random.PRNGKey(1), PATHS, DAYS), params)
    paths = spot_paths(draw_normals(jax.random.PRNGKey(2), PATHS, DAYS), params)
    fitted = lsmc(train, paths, params, grid)
    np.testing.assert_array_equal(np.asarray(lsmc_actions(fitted, paths, params, grid)), np.asarray(fitted.actions))


def test_fits_are_scored_out_of_sample_and_the_best_is_chosen_on_validation_paths() -> None:
    scenario = _scenario()
    validation, test = (draw_normals(jax.random.PRNGKey(k), PATHS, DAYS) for k in (3, 4))
    fits = lsmc_by_paths(scenario, (64, 1024), key=jax.random.PRNGKey(5), validation=validation, test=test)
    assert [fit.paths for fit in fits] == [64, 1024] and all(fit.seconds > 0 for fit in fits)
    small, large = fits
    # 64 regression paths overfit: the in-sample estimate is above what the policy earns on fresh paths
    assert small.in_sample > max(small.validation_value, small.test_values.mean()) + small.in_sample_stderr
    assert large.validation_value > small.validation_value and best_fit(fits) is large

    snapo = large.test_values + 1.0  # a stand-in policy worth 1 more on every test path
    figures = lsmc_figures(fits, snapo, large.test_controls)
    assert figures["lsmc_best_paths"] == 1024 and figures["lsmc_test_paths"] == PATHS
    assert figures["snapo_minus_lsmc_best"] == pytest.approx(1.0) and figures["snapo_minus_lsmc_best_stderr_raw"] < 1e-9
    assert figures["snapo_minus_lsmc_best_cv"] == pytest.approx(1.0)
    assert figures["lsmc_64_in_sample"] == small.in_sample
    assert figures["lsmc_64_in_sample_minus_value"] == pytest.approx(small.in_sample - small.test_values.mean())
    assert figures["lsmc_1024_value"] == pytest.approx(large.test_values.mean())
