"""Tests for decisions.core.optimal: HiGHS solves with hand-computed optima and duals."""

from __future__ import annotations

import numpy as np
import pyomo.environ as pyo
import pytest

from decisions.core.optimal import (
    InfeasibleError,
    SolveError,
    SolveStatus,
    UnboundedError,
    duals,
    solve,
)


def _production_lp() -> pyo.ConcreteModel:
    """max 3x + 5y  s.t.  x + y <= 4,  x + 3y <= 6,  x, y >= 0.

    Vertex x = 3, y = 1 (both constraints binding), objective 14. Duals solve
    u1 + u2 = 3, u1 + 3 u2 = 5: u1 = 2, u2 = 1.
    """
    m = pyo.ConcreteModel(name="production")
    m.x = pyo.Var(within=pyo.NonNegativeReals)
    m.y = pyo.Var(within=pyo.NonNegativeReals)
    m.land = pyo.Constraint(expr=m.x + m.y <= 4)
    m.labour = pyo.Constraint(expr=m.x + 3 * m.y <= 6)
    m.profit = pyo.Objective(expr=3 * m.x + 5 * m.y, sense=pyo.maximize)
    return m


def _diet_lp(rhs: tuple[float, float] = (4.0, 6.0)) -> pyo.ConcreteModel:
    """min x0 + x1  s.t.  x0 + 2 x1 >= 4,  3 x0 + x1 >= 6 (indexed constraint, mutable rhs).

    Optimum x = (1.6, 1.2), objective 2.8; duals solve u0 + 3 u1 = 1, 2 u0 + u1 = 1,
    so u = (0.4, 0.2).
    """
    m = pyo.ConcreteModel(name="diet")
    m.I = pyo.RangeSet(0, 1)
    m.x = pyo.Var(m.I, within=pyo.NonNegativeReals)
    m.rhs = pyo.Param(m.I, initialize=dict(enumerate(rhs)), mutable=True)
    coef = {(0, 0): 1.0, (0, 1): 2.0, (1, 0): 3.0, (1, 1): 1.0}
    m.need = pyo.Constraint(m.I, rule=lambda m, i: sum(coef[i, j] * m.x[j] for j in m.I) >= m.rhs[i])
    m.cost = pyo.Objective(expr=sum(m.x[j] for j in m.I))
    return m


def test_lp_optimum_and_duals_hand_computed() -> None:
    m = _production_lp()
    result = solve(m)
    assert result.status is SolveStatus.OPTIMAL
    assert result.objective == pytest.approx(14.0)
    assert result.bound == pytest.approx(14.0)
    assert result.solve_seconds >= 0.0
    assert pyo.value(m.x) == pytest.approx(3.0) and pyo.value(m.y) == pytest.approx(1.0)
    np.testing.assert_allclose(duals(m, m.land), [2.0])
    np.testing.assert_allclose(duals(m, m.labour), [1.0])
    assert m.dual[m.land] == pytest.approx(2.0)  # the import suffix itself is filled


def test_indexed_min_lp_duals_match_finite_differences() -> None:
    m = _diet_lp()
    result = solve(m)
    assert result.objective == pytest.approx(2.8)
    np.testing.assert_allclose([pyo.value(m.x[j]) for j in m.I], [1.6, 1.2], atol=1e-9)
    u = duals(m, m.need)
    np.testing.assert_allclose(u, [0.4, 0.2], atol=1e-9)
    # Dual = d objective / d rhs: re-solve with each right-hand side nudged both ways.
    h = 1e-3
    for i in (0, 1):
        values = []
        for sign in (1.0, -1.0):
            m.rhs[i] = (4.0, 6.0)[i] + sign * h
            values.append(solve(m).objective)
        m.rhs[i] = (4.0, 6.0)[i]
        assert (values[0] - values[1]) / (2 * h) == pytest.approx(u[i], abs=1e-6)


def test_user_declared_dual_suffix_is_filled() -> None:
    m = _production_lp()
    m.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    solve(m)
    assert m.dual[m.labour] == pytest.approx(1.0)


def test_milp_solves_but_has_no_duals() -> None:
    m = pyo.ConcreteModel(name="knap")
    m.n = pyo.Var(within=pyo.NonNegativeIntegers, bounds=(0, 10))
    m.cap = pyo.Constraint(expr=2 * m.n <= 7)
    m.obj = pyo.Objective(expr=m.n, sense=pyo.maximize)
    result = solve(m, time_limit=10.0)
    assert result.status is SolveStatus.OPTIMAL
    assert result.objective == pytest.approx(3.0)  # LP relaxation would give 3.5
    assert pyo.value(m.n) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="knap"):
        duals(m, m.cap)


def test_infeasible_lp_raises_naming_the_model() -> None:
    m = _production_lp()
    m.too_much = pyo.Constraint(expr=m.x >= 10)
    with pytest.raises(InfeasibleError, match="'production' is infeasible"):
        solve(m)


def test_unbounded_lp_raises() -> None:
    m = pyo.ConcreteModel(name="runaway")
    m.x = pyo.Var(within=pyo.NonNegativeReals)
    m.obj = pyo.Objective(expr=m.x, sense=pyo.maximize)
    with pytest.raises(UnboundedError, match="'runaway' is unbounded"):
        solve(m)
    assert issubclass(UnboundedError, SolveError) and issubclass(InfeasibleError, SolveError)


def test_bad_time_limit_and_missing_duals() -> None:
    m = _production_lp()
    with pytest.raises(ValueError, match="time_limit"):
        solve(m, time_limit=0.0)
    with pytest.raises(ValueError, match="no import suffix 'dual'"):
        duals(m, m.land)  # not solved yet
