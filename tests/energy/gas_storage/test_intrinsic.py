"""Intrinsic LP/MILP: hand-solved cases, envelope-theorem sensitivities vs finite differences, ratchets."""

from __future__ import annotations

import numpy as np
import pytest

from decisions.energy.gas_storage.intrinsic import (
    Formulation,
    choose_formulation,
    intrinsic_values_on_paths,
    solve_intrinsic,
)
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.rolling import grid_intrinsic, make_grid
from decisions.energy.gas_storage.scenario import (
    DeterministicPrices,
    Facility,
    RatchetCurve,
    Scenario,
    TerminalRule,
)
from decisions.energy.gas_storage.valuation import feasibility_violation, path_values


def _tiny(terminal: TerminalRule = TerminalRule.REQUIRED) -> Scenario:
    fac = Facility(max_inventory=1.0, max_injection=1.0, max_withdrawal=1.0,
                   injection_cost=0.1, withdrawal_cost=0.1, discount_rate=0.0, terminal=terminal)
    return Scenario(facility=fac, forward_curve=[1.0, 5.0, 1.0, 5.0], prices=DeterministicPrices())


def test_tiny_case_alternates_and_matches_hand_value() -> None:
    result = solve_intrinsic(to_params(_tiny()))
    # buy at 1, sell at 5, twice, paying 0.1 per unit moved: 2 * (5 - 1) - 4 * 0.1
    assert result.value == pytest.approx(7.6, abs=1e-6)  # costs are float32 in the params
    np.testing.assert_allclose(result.net_injection, [1.0, -1.0, 1.0, -1.0], atol=1e-9)
    np.testing.assert_allclose(result.inventory, [0.0, 1.0, 0.0, 1.0, 0.0], atol=1e-9)
    np.testing.assert_allclose(result.sensitivity, [-1.0, 1.0, -1.0, 1.0], atol=1e-9)
    assert result.formulation is Formulation.LP


def test_tiny_case_spot_value_keeps_the_last_unit() -> None:
    result = solve_intrinsic(to_params(_tiny(TerminalRule.SPOT_VALUE)))
    # inject, withdraw, inject, then hold: the unit left is worth 5 with no withdrawal cost
    assert result.value == pytest.approx(-1.1 + 4.9 - 1.1 + 5.0, abs=1e-6)
    np.testing.assert_allclose(result.net_injection, [1.0, -1.0, 1.0, 0.0], atol=1e-9)
    # last day: no trade, but the end inventory is valued at F_3
    np.testing.assert_allclose(result.sensitivity, [-1.0, 1.0, -1.0, 1.0], atol=1e-9)


def test_lp_value_equals_path_value_of_its_schedule_on_the_curve() -> None:
    scenario = _curve_scenario(TerminalRule.SPOT_VALUE)
    params = to_params(scenario)
    result = solve_intrinsic(params)
    spots = np.asarray(params.forward)[None, :]
    assert float(path_values(result.net_injection[None, :], spots, params)[0]) == pytest.approx(
        result.value, rel=1e-5
    )
    assert float(intrinsic_values_on_paths(result, spots, params)[0]) == pytest.approx(result.value, rel=1e-5)
    assert float(feasibility_violation(result.net_injection, params)) <= 1e-4


def _curve_scenario(terminal: TerminalRule, days: int = 20, start: float = 0.0) -> Scenario:
    """A generic (tie-free) curve and rates that are not multiples of each other: a unique optimum."""
    rng = np.random.default_rng(3)
    curve = 20.0 + 4.0 * np.sin(np.arange(days) / 3.0) + rng.uniform(-1.0, 1.0, days)
    fac = Facility(
        max_inventory=10.0,
        start_inventory=start,
        max_injection=3.0,
        max_withdrawal=4.3,
        injection_cost=0.05,
        withdrawal_cost=0.07,
        terminal=terminal,
    )
    return Scenario(facility=fac, forward_curve=curve.tolist(), prices=DeterministicPrices())


@pytest.mark.parametrize("terminal", [TerminalRule.REQUIRED, TerminalRule.SPOT_VALUE])
def test_sensitivities_match_central_finite_differences(terminal: TerminalRule) -> None:
    params = to_params(_curve_scenario(terminal))
    result = solve_intrinsic(params)
    bump = 1e-3
    fd = np.empty_like(result.forward)
    for t in range(fd.shape[0]):
        up, down = result.forward.copy(), result.forward.copy()
        up[t] += bump
        down[t] -= bump
        fd[t] = (solve_intrinsic(params, up).value - solve_intrinsic(params, down).value) / (2 * bump)
    np.testing.assert_allclose(result.sensitivity, fd, atol=1e-5)
    assert np.abs(result.sensitivity).max() > 1.0  # the schedule really trades


def test_first_balance_dual_is_the_value_of_start_inventory() -> None:
    bump = 2.0**-6  # exact in float32, the dtype of the params
    value = {
        s: solve_intrinsic(to_params(_curve_scenario(TerminalRule.REQUIRED, start=s))).value
        for s in (5.0 - bump, 5.0 + bump)
    }
    result = solve_intrinsic(to_params(_curve_scenario(TerminalRule.REQUIRED, start=5.0)))
    fd = (value[5.0 + bump] - value[5.0 - bump]) / (2 * bump)
    assert result.balance_duals is not None and result.balance_duals.shape == (20,)
    assert result.balance_duals[0] == pytest.approx(fd, abs=1e-5)


def _ratchet_scenario(injection: RatchetCurve, days: int = 30) -> Scenario:
    """Cheap first half, dear second half: the facility wants to fill fast, then empty."""
    curve = [10.0 + (t % 3) * 0.1 for t in range(days // 2)] + [
        20.0 - (t % 2) * 0.1 for t in range(days - days // 2)
    ]
    fac = Facility(max_inventory=100.0, max_injection=injection, max_withdrawal=20.0)
    return Scenario(facility=fac, forward_curve=curve, prices=DeterministicPrices())


CONCAVE = RatchetCurve(inventory=[0.0, 60.0, 100.0], rate=[10.0, 10.0, 4.0])
NON_CONCAVE = RatchetCurve(inventory=[0.0, 50.0, 100.0], rate=[10.0, 4.0, 8.0])


def test_concave_ratchet_is_an_exact_lp_that_slows_injection_near_full() -> None:
    params = to_params(_ratchet_scenario(CONCAVE))
    assert choose_formulation(params) is Formulation.LP
    result = solve_intrinsic(params)
    assert result.formulation is Formulation.LP
    assert float(feasibility_violation(result.net_injection, params)) <= 1e-4
    rate = np.interp(result.inventory[:-1], CONCAVE.inventory, CONCAVE.rate)
    above = result.inventory[:-1] > 60.0 + 1e-6
    assert above.any()
    np.testing.assert_array_less(result.injection[above], 10.0 - 1e-6)  # slower than the plain rate
    assert np.all(result.injection <= rate + 1e-7)
    assert np.isclose(result.injection, rate, atol=1e-7)[above].any()  # the ratchet binds
    milp = solve_intrinsic(params, formulation=Formulation.MILP)
    assert milp.formulation is Formulation.MILP and milp.balance_duals is None
    assert milp.value == pytest.approx(result.value, rel=1e-6)


def test_non_concave_ratchet_uses_a_milp_that_beats_every_grid_schedule() -> None:
    params = to_params(_ratchet_scenario(NON_CONCAVE))
    assert choose_formulation(params) is Formulation.MILP
    with pytest.raises(ValueError, match="concave"):
        solve_intrinsic(params, formulation=Formulation.LP)
    result = solve_intrinsic(params)
    assert float(feasibility_violation(result.net_injection, params)) <= 1e-4
    rate = np.interp(result.inventory[:-1], NON_CONCAVE.inventory, NON_CONCAVE.rate)
    assert np.all(result.injection <= rate + 1e-6)
    coarse, _ = grid_intrinsic(params, make_grid(params, step=1.0))
    fine, _ = grid_intrinsic(params, make_grid(params, step=0.25))
    # a grid schedule is feasible for the MILP, and finer grids close in on it
    assert float(coarse) < float(fine) <= result.value + 1e-3
    assert float(fine) >= 0.97 * result.value


def test_to_frame_is_tidy() -> None:
    scenario = _tiny()
    frame = solve_intrinsic(to_params(scenario)).to_frame(scenario)
    assert list(frame.columns) == [
        "date",
        "forward",
        "discount",
        "injection",
        "withdrawal",
        "net_injection",
        "inventory_start",
        "inventory",
        "sensitivity",
        "balance_dual",
    ]
    assert len(frame) == 4
    assert frame["date"].iloc[1] - frame["date"].iloc[0] == np.timedelta64(1, "D")
    np.testing.assert_allclose(frame["inventory"], [1.0, 0.0, 1.0, 0.0], atol=1e-9)
