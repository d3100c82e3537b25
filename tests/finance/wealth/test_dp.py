"""Tests for the goals-based wealth DP: frontier, grid, transitions, values and input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from decisions.finance.wealth import WealthProblem, solve, transitions, wealth_grid
from decisions.finance.wealth.market import DEFAULT_COVARIANCE, DEFAULT_MEANS, efficient_frontier
from decisions.finance.wealth.simulate import dp_policy, draw_normals, evaluate, mean_and_se
from tests.helpers import assert_input_error


def _problem(**kw: object) -> WealthProblem:
    data: dict[str, object] = {"horizon": 10, "initial_wealth": 100.0, "target": 200.0}
    data.update(kw)
    return WealthProblem.parse(data)


def test_frontier_matches_min_variance_qp() -> None:
    m, s = np.array(DEFAULT_MEANS), np.array(DEFAULT_COVARIANCE)
    mu, sigma = efficient_frontier(m, s, 15)
    assert mu[-1] == pytest.approx(0.0886)
    for target, vol in zip(mu[[0, 5, 14]], sigma[[0, 5, 14]], strict=True):
        # KKT system of min w'Sw s.t. 1'w = 1, m'w = target
        kkt = np.zeros((5, 5))
        kkt[:3, :3] = 2 * s
        kkt[:3, 3], kkt[:3, 4] = 1.0, m
        kkt[3, :3], kkt[4, :3] = 1.0, m
        w = np.linalg.solve(kkt, np.array([0, 0, 0, 1.0, target]))[:3]
        assert math.sqrt(w @ s @ w) == pytest.approx(vol, rel=1e-9)
    assert np.all(np.diff(sigma) > 0)


def test_grid_contains_w0_with_step() -> None:
    p = _problem()
    grid = wealth_grid(p)
    _, sigma = p.market.frontier()
    steps = np.diff(np.log(grid))
    assert np.allclose(steps, sigma.min() / 3.0)
    assert np.min(np.abs(np.log(grid) - math.log(100.0))) < 1e-12
    assert grid[0] < 100.0 < 200.0 < grid[-1]


def test_transition_rows_sum_to_one() -> None:
    p = _problem()
    mu, sigma = p.market.frontier()
    grid = wealth_grid(p)
    post = np.concatenate([[-5.0, 0.0], grid, [1e-9, 1e9]])
    tr = transitions(post, np.log(grid), mu, sigma)
    assert tr.shape == (15, len(post), len(grid) + 1)
    assert np.allclose(tr.sum(axis=2), 1.0)
    assert np.all(tr[:, :2, 0] == 1.0)  # non-positive wealth -> bankrupt


def test_forward_mean_matches_lognormal_one_portfolio() -> None:
    p = WealthProblem.parse(
        {"horizon": 5, "initial_wealth": 100.0, "market": {"n_portfolios": 1}, "n_sd": 5.0}
    )
    r = solve(p)
    mean = r.distribution[-1] @ r.wealth
    assert mean == pytest.approx(100.0 * math.exp(r.mu[0] * 5), rel=5e-3)
    assert np.allclose(r.distribution.sum(axis=1), 1.0)


def test_default_single_goal_value() -> None:
    """The DP's value on the default single-goal problem (its speed is a bench figure, not a test)."""
    r = solve(_problem())
    assert abs(r.value - 0.66) < 0.02
    # the forward pass reproduces the value: P[W(T) >= G] under the optimal policy
    assert r.distribution[-1][r.wealth >= 200.0].sum() == pytest.approx(r.value, abs=1e-9)


def test_monotone_in_w0_and_goal() -> None:
    # a coarser DP grid than the default (rho 1.5: a fifth of the time); the order holds on it too
    values_w0 = [solve(_problem(initial_wealth=w, rho=1.5)).value for w in (80.0, 100.0, 120.0)]
    values_g = [solve(_problem(target=g, rho=1.5)).value for g in (150.0, 200.0, 250.0)]
    assert values_w0[0] < values_w0[1] < values_w0[2]
    assert values_g[0] > values_g[1] > values_g[2]


def test_unreachable_goal_never_taken() -> None:
    goals = [
        {"year": 3, "options": [{"cost": 1e7, "utility": 1000.0}]},
        {"year": 5, "options": [{"cost": 50.0, "utility": 10.0}, {"cost": 80.0, "utility": 15.0}]},
    ]
    # a coarser DP grid than the default (rho 1.5: half the nodes, a fifth of the time); the identities hold on any
    r = solve(WealthProblem.parse({"horizon": 10, "initial_wealth": 100.0, "goals": goals, "rho": 1.5}))
    assert r.goal_probability[0][1] == pytest.approx(0.0, abs=1e-12)
    assert r.goal_probability[0][0] == pytest.approx(1.0)
    assert r.goal_probability[1].sum() == pytest.approx(1.0)
    assert r.value == pytest.approx(r.goal_probability[1] @ np.array([0.0, 10.0, 15.0]), rel=1e-9)


def test_dominated_options_dropped() -> None:
    goals = [{"year": 2, "options": [{"cost": 10.0, "utility": 5.0}, {"cost": 20.0, "utility": 5.0}]}]
    r = solve(WealthProblem.parse({"horizon": 3, "initial_wealth": 100.0, "goals": goals}))
    assert list(r.options[2].costs) == [0.0, 10.0]


def test_multi_goal_beats_fixed_strategy_by_monte_carlo() -> None:
    goals = [
        {"year": 2, "options": [{"cost": 20.0, "utility": 10.0}, {"cost": 40.0, "utility": 15.0}]},
        {"year": 5, "options": [{"cost": 60.0, "utility": 30.0}]},
        {"year": 8, "options": [{"cost": 50.0, "utility": 15.0}, {"cost": 100.0, "utility": 35.0}]},
    ]
    flows = [10.0] * 4 + [0.0] * 4
    # a coarser DP grid than the default (rho 1.5: half the nodes, a fifth of the time): its value is still far
    # above the fixed strategy's
    p = WealthProblem.parse({"horizon": 8, "initial_wealth": 100.0, "cash_flows": flows, "goals": goals, "rho": 1.5})
    r = solve(p)
    print(f"multi-goal value {r.value:.4f}, {len(r.wealth)} states")
    # fixed strategy: always the max-mean portfolio, take the dearest affordable option of each goal
    rng = np.random.default_rng(0)
    n = 200_000
    mu, sigma = r.mu[-1], r.sigma[-1]
    w = np.full(n, 100.0)
    total = np.zeros(n)
    for t in range(9):
        w = w + (flows[t] if t < 8 else 0.0)
        for goal in p.goals:
            if goal.year == t:
                taken = np.zeros(n, dtype=bool)
                for opt in sorted(goal.options, key=lambda o: -o.cost):  # dearest affordable option
                    take = ~taken & (w >= opt.cost)
                    total = np.where(take, total + opt.utility, total)
                    w = np.where(take, w - opt.cost, w)
                    taken |= take
        if t < 8:
            w = w * np.exp(mu - sigma**2 / 2 + sigma * rng.standard_normal(n))
    mc, se = total.mean(), total.std() / math.sqrt(n)
    print(f"fixed strategy MC value {mc:.4f} +- {se:.4f}")
    assert r.value >= mc - 3 * se - 0.01 * mc


def test_withdrawals_bankrupt_and_probabilities_exact() -> None:
    p = _problem(cash_flows=[-15.0] * 10, rho=1.5)  # a coarser DP grid (a fifth of the time): the identities hold on any
    r = solve(p)
    assert np.allclose(r.distribution.sum(axis=1), 1.0)
    assert r.distribution[-1][0] > 0.0  # some paths cannot pay the withdrawals
    assert 0.0 <= r.value < solve(_problem(rho=1.5)).value
    assert r.distribution[-1][r.wealth >= 200.0].sum() == pytest.approx(r.value, abs=1e-9)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"goals": [{"year": 11, "options": [{"cost": 1.0, "utility": 1.0}]}]}, "problem.goals"),
        (
            {"goals": [{"year": 1, "options": [{"cost": -1.0, "utility": 1.0}]}]},
            "problem.goals.0.options.0.cost",
        ),
        (
            {
                "goals": [
                    {"year": 1, "options": [{"cost": 1.0, "utility": 2.0}, {"cost": 2.0, "utility": 1.0}]}
                ]
            },
            "problem.goals.0.options",
        ),
        ({"market": {"covariance": [[1.0, 0, 0], [0, 1.0, 0], [0, 0, -1.0]]}}, "problem.market.covariance"),
        ({"rho": 0.0}, "problem.rho"),
        ({"rho": -1.0}, "problem.rho"),
        ({"cash_flows": [1.0, 2.0]}, "problem.cash_flows"),
    ],
)
def test_bad_input(data: dict[str, object], field: str) -> None:
    assert_input_error(WealthProblem.parse, {"horizon": 10, "initial_wealth": 100.0, **data}, field=field)


def test_infeasible_grid_is_refused_before_allocating() -> None:
    problem = WealthProblem.parse({"horizon": 30, "initial_wealth": 100.0, "target": 300.0, "rho": 60.0})
    with pytest.raises(ValueError, match="problem.rho: the DP grid would have"):
        solve(problem)


def test_grid_covers_wealth_left_after_a_large_goal() -> None:
    """Paying most of the wealth early must not land on an overstated lowest node: value = its own MC."""
    problem = WealthProblem.parse(
        {
            "horizon": 10,
            "initial_wealth": 100.0,
            "goals": [
                {"year": 1, "options": [{"cost": 85.0, "utility": 20.0}]},
                {"year": 10, "options": [{"cost": 60.0, "utility": 40.0}]},
            ],
        }
    )
    result = solve(problem)
    assert result.wealth[1] < 100.0 * 0.15 * 0.5  # the grid reaches below what is left after the goal
    mc, se = mean_and_se(evaluate(problem, dp_policy(result), normals=draw_normals(0, 20_000, 10)))
    assert abs(mc - result.value) <= 3 * se + 0.01 * result.value
