"""LSMC and the baseline runner: probe with a known answer, value ordering, feasibility of every baseline."""

from __future__ import annotations

from datetime import date

import jax
import numpy as np
import pytest

from decisions.energy.gas_storage.baselines import Baseline, do_nothing_schedule, run_baselines
from decisions.energy.gas_storage.intrinsic import solve_intrinsic
from decisions.energy.gas_storage.lsmc import BasisKind, LSMCConfig, lsmc
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rolling import make_grid
from decisions.energy.gas_storage.scenario import (
    DeterministicPrices,
    Facility,
    Scenario,
    SeasonalOU,
    seasonal_forward_curve,
)
from decisions.energy.gas_storage.valuation import feasibility_violation

DAYS, PATHS, TRAIN = 60, 256, 2048  # shared by the tests below: one compile per program


def _scenario(prices=None, facility: Facility | None = None) -> Scenario:
    start = date(2026, 9, 1)
    return Scenario(
        facility=facility or Facility(),
        forward_curve=seasonal_forward_curve(DAYS, start=start),
        start_date=start,
        prices=prices or SeasonalOU(),
    )


def test_lsmc_on_deterministic_prices_is_the_intrinsic_value() -> None:
    params = to_params(_scenario(DeterministicPrices()))
    paths = spot_paths(draw_normals(jax.random.PRNGKey(0), 8, DAYS), params)
    result = lsmc(paths, paths, params, make_grid(params))
    lp = solve_intrinsic(params).value
    assert float(result.in_sample) == pytest.approx(lp, rel=1e-5)
    np.testing.assert_allclose(np.asarray(result.values), lp, rtol=1e-5)


def test_do_nothing_holds_unless_the_band_forces_a_move() -> None:
    fac = Facility(max_inventory=100.0, start_inventory=50.0, max_withdrawal=20.0)
    scenario = Scenario(facility=fac, forward_curve=[20.0] * 10, prices=DeterministicPrices())
    schedule = np.asarray(do_nothing_schedule(to_params(scenario)))
    # the band's upper edge is 60, 40, 20, 0 on days 7..10: withdraw 10, 20, 20 to end empty
    np.testing.assert_allclose(schedule, [0.0] * 7 + [-10.0, -20.0, -20.0], atol=1e-5)


@pytest.fixture(scope="module")
def runs():
    scenario = _scenario()
    normals = draw_normals(jax.random.PRNGKey(11), PATHS, DAYS)
    seen = []
    result = run_baselines(
        scenario,
        normals,
        key=jax.random.PRNGKey(12),
        lsmc_paths=TRAIN,
        progress=lambda name, seconds: seen.append(name),
    )
    return scenario, result, seen


def test_run_baselines_reports_every_baseline_on_the_same_paths(runs) -> None:
    scenario, result, seen = runs
    assert seen == list(Baseline)
    assert set(result.values) == {"intrinsic_lp", "rolling_intrinsic", "lsmc", "do_nothing"}
    params = to_params(scenario)
    for name in Baseline:
        assert result.values[name].shape == (PATHS,)
        assert result.actions[name].shape == (PATHS, DAYS)
        assert float(feasibility_violation(result.actions[name], params).max()) <= 1e-4, name
    # the static schedule's expected value is the intrinsic value (E[S_t] = F_t)
    static = result.values[Baseline.INTRINSIC_LP]
    assert abs(static.mean() - result.intrinsic.value) < 4.0 * static.std(ddof=1) / np.sqrt(PATHS)
    np.testing.assert_allclose(result.values[Baseline.DO_NOTHING], 0.0, atol=1e-6)  # start = end = empty
    frame = result.summary()
    assert list(frame["baseline"]) == [str(b) for b in Baseline]
    assert (frame["stderr"] > 0).sum() == 3 and (frame["seconds"] > 0).all()


def test_lsmc_beats_do_nothing_and_is_close_to_rolling_intrinsic(runs) -> None:
    _, result, _ = runs
    lsmc_value = result.values[Baseline.LSMC].mean()
    rolling_value = result.values[Baseline.ROLLING_INTRINSIC].mean()
    assert lsmc_value > result.values[Baseline.DO_NOTHING].mean() + 0.5 * result.intrinsic.value
    assert lsmc_value == pytest.approx(rolling_value, rel=0.05)
    assert lsmc_value > result.intrinsic.value  # the option to react to prices is worth something
    assert result.lsmc_in_sample == pytest.approx(lsmc_value, rel=0.10)


def test_lsmc_bases_agree_out_of_sample() -> None:
    params = to_params(_scenario())
    grid = make_grid(params)
    train = spot_paths(draw_normals(jax.random.PRNGKey(12), TRAIN, DAYS), params)
    evaluate = spot_paths(draw_normals(jax.random.PRNGKey(11), PATHS, DAYS), params)
    values = [
        float(lsmc(train, evaluate, params, grid, LSMCConfig(basis=basis)).values.mean())
        for basis in (BasisKind.FACTOR, BasisKind.BOTH)
    ]
    assert max(values) - min(values) < 0.02 * max(values)
