"""Monte Carlo evaluation of wealth policies (common random numbers) and the funding-ratio rule."""

from __future__ import annotations

import numpy as np
import pytest

from decisions.finance.wealth import WealthProblem, solve
from decisions.finance.wealth.rule import FundingRule, remaining_need, rule_policy, tune_rule
from decisions.finance.wealth.simulate import (
    dp_policy,
    draw_normals,
    evaluate,
    mean_and_se,
    never_fund,
    simulate,
)

GOALS = [
    {"year": 2, "options": [{"cost": 20.0, "utility": 10.0}, {"cost": 40.0, "utility": 15.0}]},
    {"year": 5, "options": [{"cost": 60.0, "utility": 30.0}]},
    {"year": 8, "options": [{"cost": 50.0, "utility": 15.0}, {"cost": 100.0, "utility": 35.0}]},
]
FLOWS = [10.0] * 4 + [0.0] * 4


def _multi(w0: float = 100.0, **kw: object) -> WealthProblem:
    return WealthProblem.parse({"horizon": 8, "initial_wealth": w0, "cash_flows": FLOWS, "goals": GOALS, **kw})


def test_dp_policy_mc_matches_dp_value_single_goal() -> None:
    p = WealthProblem.parse({"horizon": 10, "initial_wealth": 100.0, "target": 200.0})
    r = solve(p)
    mc, se = mean_and_se(evaluate(p, dp_policy(r), normals=draw_normals(0, 20_000, 10)))
    print(f"single goal: DP {r.value:.4f}, MC of nearest-node DP play {mc:.4f} +- {se:.4f}")
    assert abs(mc - r.value) <= 3 * se + 0.02


def test_common_random_numbers_reproduce() -> None:
    p = _multi()
    z = draw_normals(3, 2_000, 8)
    policy = rule_policy(p, FundingRule())
    assert np.array_equal(evaluate(p, policy, normals=z), evaluate(p, policy, normals=z))
    assert np.array_equal(z, draw_normals(3, 2_000, 8))


def test_dp_beats_tuned_rule_beats_never_fund() -> None:
    train = [_multi(80.0), _multi(130.0)]
    rule, score = tune_rule(train, [draw_normals(10 + i, 2_000, 8) for i in range(len(train))])
    p = _multi(rho=1.5)  # a coarser DP grid than the default (a fifth of the solve's time): the order holds on it too
    r = solve(p)
    z = draw_normals(1, 20_000, 8)
    dp_mc, dp_se = mean_and_se(evaluate(p, dp_policy(r), normals=z))
    rule_mc, rule_se = mean_and_se(evaluate(p, rule_policy(p, rule), normals=z))
    never, _ = mean_and_se(evaluate(p, never_fund(), normals=z))
    print(
        f"multi-goal: DP {r.value:.3f}, DP play MC {dp_mc:.3f} +- {dp_se:.3f}, tuned {rule} "
        f"(train {score:.3f}) MC {rule_mc:.3f} +- {rule_se:.3f}, ratio {rule_mc / dp_mc:.3f}"
    )
    assert dp_mc >= rule_mc - 3 * rule_se
    assert rule_mc > never == 0.0
    assert dp_mc <= r.value * 1.01 + 3 * dp_se  # MC of a feasible policy cannot beat the optimum much
    assert rule_mc > 0.85 * dp_mc


def test_affordability_enforced_and_bankruptcy_absorbing() -> None:
    p = WealthProblem.parse(
        {"horizon": 8, "initial_wealth": 100.0, "cash_flows": [-12.0] * 8, "goals": GOALS}
    )

    def greedy(t: int, cash: np.ndarray, wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        big = np.full(cash.shape, 99, dtype=np.int64)  # always ask for the dearest (often unaffordable)
        return big, np.full(cash.shape, 14, dtype=np.int64)

    paths = simulate(p, greedy, normals=draw_normals(5, 5_000, 8))
    alive = paths.option >= 0
    assert np.all(paths.paid_down >= 0.0)
    assert np.all(paths.wealth >= 0.0)
    # bankrupt paths stay at 0 and take nothing afterwards
    dead = ~alive
    assert dead[:, -1].any()
    assert np.all(dead[:, :-1] <= dead[:, 1:])
    assert np.all(paths.wealth[:, 1:][dead[:, :-1]] == 0.0)
    # the fallback is the dearest affordable option: the year-8 goal takes 100 whenever cash >= 100
    cash8 = paths.wealth[:, 8]
    took = paths.option[:, 8]
    assert np.all(took[alive[:, 8] & (cash8 >= 100.0)] == 2)
    assert np.all(took[alive[:, 8] & (cash8 >= 50.0) & (cash8 < 100.0)] == 1)


def test_rule_need_and_bad_params() -> None:
    need = remaining_need(_multi())
    mu, _ = _multi().market.frontier()  # the DP's portfolio means (``solve(...).mu``), without solving it
    assert need[-1] == 0.0 and need[7] == pytest.approx(100.0 * np.exp(-mu[0]))
    with pytest.raises(ValueError):
        FundingRule(r1=2.0, r2=1.0)
    with pytest.raises(ValueError):
        evaluate(_multi(), never_fund(), normals=np.zeros((10, 3)))
