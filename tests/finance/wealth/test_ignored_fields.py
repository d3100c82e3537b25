"""Wealth input that used to be accepted and then ignored: now planned for, or refused naming the field."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from decisions.finance.wealth import job as wealth_job
from decisions.finance.wealth.beyond import glide_path_greedy
from decisions.finance.wealth.dp import option_sets, solve
from decisions.finance.wealth.market import Market
from decisions.finance.wealth.meta_env import encode
from decisions.finance.wealth.planner import Planner, default_planner, plan, target_options
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.simulate import dp_policy, draw_normals, evaluate
from tests.helpers import assert_input_error

TARGET_ONLY = {"horizon": 10, "initial_wealth": 100.0, "target": 200.0}
"""The single-goal problem of ``decisions bench wealth``: maximise ``P[W(10) >= 200]``."""

TARGET_AND_GOALS = {
    "horizon": 8,
    "initial_wealth": 100.0,
    "cash_flows": [5.0] * 4 + [0.0] * 4,
    "target": 60.0,
    "goals": [
        {"year": 3, "options": [{"cost": 30.0, "utility": 0.5}]},
        {"year": 8, "options": [{"cost": 40.0, "utility": 0.3}, {"cost": 80.0, "utility": 0.6}]},
    ],
}
"""A wealth target beside goals, one of them due at the horizon with it."""


@pytest.fixture(scope="module")
def planner() -> Planner:
    """The shipped planner."""
    return default_planner()


def _scores(problem: WealthProblem, planner: Planner, paths: int = 2_000) -> tuple[float, float]:
    """Monte Carlo expected utility of the DP's policy and the planner's on common paths."""
    normals = draw_normals(0, paths, problem.horizon)
    dp_mc = float(evaluate(problem, dp_policy(solve(problem)), normals=normals).mean())
    planner_mc = float(evaluate(problem, plan(planner, problem).policy, normals=normals).mean())
    return dp_mc, planner_mc


def test_target_as_goal_is_the_same_problem() -> None:
    for data in (TARGET_ONLY, TARGET_AND_GOALS):
        problem = WealthProblem.parse({**data, "rho": 1.5})  # a coarser DP grid (the values agree on any): 5x faster
        folded = problem.target_as_goal()
        assert folded.target is None and len(folded.goals) == len(problem.goals) + 1
        assert folded.goals[-1].year == problem.horizon and folded.goals[-1].options[0].cost == problem.target
        assert solve(folded).value == pytest.approx(solve(problem).value, abs=1e-9)
    plain = WealthProblem.parse({**TARGET_AND_GOALS, "target": None})
    assert plain.target_as_goal() is plain


def test_the_planner_sees_the_target() -> None:
    arrays, scale, total = encode(WealthProblem.parse(TARGET_ONLY))
    horizon = TARGET_ONLY["horizon"]
    assert int(arrays.n_options[horizon]) == 2 and total == 1.0
    assert arrays.costs[horizon, 1] == pytest.approx(200.0 / scale)


def test_plan_pursues_a_target_only_goal(planner: Planner) -> None:
    """It used to plan as if there were no goal: 0.24 where the DP scores 0.67."""
    dp_mc, planner_mc = _scores(WealthProblem.parse(TARGET_ONLY), planner)
    assert dp_mc > 0.6
    assert planner_mc >= 0.95 * dp_mc


def test_plan_with_a_target_and_goals_uses_the_problem_options(planner: Planner) -> None:
    problem = WealthProblem.parse(TARGET_AND_GOALS)
    sets = option_sets(problem)
    # year 8's menu with the target: costs 0, 40, 60 (target), 100 (40 + target), 140 (80 + target);
    # 80 alone (utility 0.6) is dominated by the target alone (60, utility 1). Mapped to costs 0, 40, 80:
    assert list(target_options(problem)) == [0, 1, 0, 1, 2]
    answer = plan(planner, problem)
    assert [list(o.costs) for o in answer.options] == [list(o.costs) for o in sets]
    assert all(answer.goal_option[t].max() < len(sets[t].costs) for t in range(problem.horizon + 1))
    cash = np.array([50.0, 70.0, 150.0, 500.0])
    option, _ = answer.policy(problem.horizon, cash, cash)
    assert ((option >= 0) & (option < len(sets[-1].costs))).all()
    dp_mc, planner_mc = _scores(problem, planner)
    assert planner_mc >= 0.9 * dp_mc


def test_glide_path_keeps_the_target_when_it_can() -> None:
    problem = WealthProblem.parse(TARGET_AND_GOALS)
    cash = np.array([50.0, 70.0, 110.0, 150.0])
    option, _ = glide_path_greedy(problem)(problem.horizon, cash, cash)
    # 50: 40 (the target is out of reach); 70: the target only; 110: 40 and the target; 150: 80 and the target
    assert list(option) == [1, 0, 1, 2]


def test_plan_refuses_a_market_with_another_portfolio_count(planner: Planner) -> None:
    problem = WealthProblem.parse(TARGET_ONLY).model_copy(update={"market": Market(n_portfolios=5)})
    assert_input_error(plan, planner, problem, field="problem.market.n_portfolios", words="15")


PROBLEM = {"horizon": 6, "initial_wealth": 100.0, "goals": [{"year": 6, "options": [{"cost": 90.0, "utility": 1.0}]}]}


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"planner": {"path": "planner.msgpack", "train_problems": 8}}, "planner.path"),
        ({"planner": {"train_steps": 100_000}}, "planner.train_steps"),
        ({"planner": {"distill_rounds": 2}}, "planner.distill_rounds"),
        ({"planner": {"distill_steps": [5]}}, "planner.distill_steps"),
        ({"planner": {"distill_learning_rate": 1e-3}}, "planner.distill_learning_rate"),
        ({"planner": {"distill_temperature": 0.1}}, "planner.distill_temperature"),
        ({"evaluation": {"dp": False, "dp_max_states": 100}}, "evaluation.dp_max_states"),
    ],
)
def test_job_refuses_settings_it_would_ignore(tmp_path: Path, sections: dict[str, object], field: str) -> None:
    (tmp_path / "planner.msgpack").write_bytes(b"")
    spec = {"job": {"kind": "wealth"}, "problem": PROBLEM, **sections}
    assert_input_error(wealth_job.prepare, spec, tmp_path, field=field)


def test_job_accepts_the_settings_of_stages_that_run(tmp_path: Path) -> None:
    spec = {
        "job": {"kind": "wealth"},
        "problem": {**PROBLEM, "target": 150.0},
        "planner": {"train_problems": 8, "train_steps": 100_000, "distill_problems": 2, "distill_rounds": 2},
        "evaluation": {"dp": True, "dp_max_states": 100},
    }
    job = wealth_job.prepare(spec, tmp_path)
    assert job.planner.train_steps == 100_000 and job.problem.target == 150.0
