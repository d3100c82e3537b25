"""Rolling intrinsic: the grid, DP == LP on deterministic curves, feasibility, value >= static intrinsic."""

from __future__ import annotations

from datetime import date

import jax
import numpy as np
import pytest

from decisions.energy.gas_storage.intrinsic import intrinsic_values_on_paths, solve_intrinsic
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rolling import (
    _rolling,
    commensurate_step,
    grid_intrinsic,
    make_grid,
    rolling_intrinsic,
)
from decisions.energy.gas_storage.scenario import (
    DeterministicPrices,
    Facility,
    Scenario,
    SeasonalOU,
    TerminalRule,
    seasonal_forward_curve,
)
from decisions.energy.gas_storage.valuation import feasibility_violation


def test_default_grid_is_commensurate() -> None:
    params = to_params(Scenario())
    assert commensurate_step(params) == 25.0
    grid = make_grid(params)
    assert grid.n_nodes == 41 and grid.step == 25.0
    np.testing.assert_array_equal(grid.moves, [-2, -1, 0, 1])
    assert grid.allowed.shape == (365, 41, 4)
    # day 0 from empty: hold or inject only; last day: only moves landing on the empty node
    assert grid.allowed[0, 0].tolist() == [False, False, True, True]
    assert grid.allowed[-1, 2].tolist() == [True, False, False, False]


def test_fallback_grid_when_not_commensurate() -> None:
    fac = Facility(max_inventory=1000.0, max_injection=25.0, max_withdrawal=50.0 + 1e-4)
    params = to_params(Scenario(facility=fac, forward_curve=[20.0, 21.0, 22.0]))
    grid = make_grid(params, resolution=51)
    assert grid.n_nodes == 51 and grid.step == pytest.approx(20.0)
    np.testing.assert_array_equal(grid.moves, [-2, -1, 0, 1])
    with pytest.raises(ValueError, match="finer grid"):
        make_grid(params, step=40.0)


def _short(days: int, terminal: TerminalRule, prices=None) -> Scenario:
    fac = Facility(terminal=terminal)
    curve = seasonal_forward_curve(days, start=date(2026, 9, 1))
    return Scenario(
        facility=fac, forward_curve=curve, start_date=date(2026, 9, 1), prices=prices or DeterministicPrices()
    )


@pytest.mark.parametrize(
    ("days", "terminal"),
    [(60, TerminalRule.REQUIRED), (60, TerminalRule.SPOT_VALUE), (365, TerminalRule.REQUIRED)],
)
def test_grid_dp_equals_lp_on_the_default_facility(days: int, terminal: TerminalRule) -> None:
    scenario = Scenario() if days == 365 else _short(days, terminal)
    params = to_params(scenario)
    lp = solve_intrinsic(params)
    value, schedule = grid_intrinsic(params, make_grid(params))
    assert float(value) == pytest.approx(lp.value, rel=2e-6)
    assert float(feasibility_violation(schedule, params)) <= 1e-4
    assert lp.value > 0.0


@pytest.mark.parametrize("terminal", [TerminalRule.REQUIRED, TerminalRule.SPOT_VALUE])
def test_rolling_on_the_deterministic_curve_is_the_intrinsic_value(terminal: TerminalRule) -> None:
    params = to_params(_short(60, terminal))
    lp = solve_intrinsic(params)
    x, spots = spot_paths(draw_normals(jax.random.PRNGKey(0), 2, params.horizon), params)
    result = rolling_intrinsic(x, spots, params, make_grid(params))
    assert float(result.day0_value) == pytest.approx(lp.value, rel=2e-6)
    np.testing.assert_allclose(np.asarray(result.values), lp.value, rtol=2e-6)


PATHS = 256  # one path count and horizon for every stochastic test: one compile


def _paths(scenario: Scenario):
    params = to_params(scenario)
    return params, spot_paths(draw_normals(jax.random.PRNGKey(7), PATHS, params.horizon), params)


def test_rolling_beats_the_static_intrinsic_schedule_on_common_paths() -> None:
    params, (x, spots) = _paths(_short(60, TerminalRule.REQUIRED, SeasonalOU()))
    grid = make_grid(params)
    rolling = rolling_intrinsic(x, spots, params, grid)
    static = intrinsic_values_on_paths(solve_intrinsic(params), spots, params)
    gain = np.asarray(rolling.values) - np.asarray(static)  # (P,) paired differences
    stderr = gain.std(ddof=1) / np.sqrt(gain.shape[0])
    assert gain.mean() > 3.0 * stderr and gain.mean() > 0.05 * float(np.mean(static))
    assert float(feasibility_violation(rolling.actions, params).max()) <= 1e-4
    assert rolling.actions.shape == spots.shape
    # same shapes: no re-trace
    traces = _rolling._cache_size()
    rolling_intrinsic(x + 0.01, spots, params, grid)
    assert _rolling._cache_size() == traces


def test_rolling_keeps_off_grid_start_feasible() -> None:
    scenario = _short(60, TerminalRule.REQUIRED, SeasonalOU())
    scenario = scenario.model_copy(update={"facility": Facility(start_inventory=110.0, end_inventory=30.0)})
    params, (x, spots) = _paths(scenario)
    result = rolling_intrinsic(x, spots, params, make_grid(params, step=25.0))
    assert float(feasibility_violation(result.actions, params).max()) <= 1e-4
    end = float(params.start_inventory) + np.asarray(result.actions).sum(axis=1)
    np.testing.assert_allclose(end, 30.0, atol=1e-3)
