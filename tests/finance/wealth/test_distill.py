"""DP regret distillation of the wealth planner: the DP's action values reproduce ``solve``
exactly, regrets resolve slots as the environment does, and fitting them lowers the regret."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from decisions.finance.wealth import distill as distill_module
from decisions.finance.wealth import job as wealth_job
from decisions.finance.wealth.bench import EXAMPLE_MULTI_GOAL
from decisions.finance.wealth.distill import distill, merge_labels, regret_labels, slot_regrets
from decisions.finance.wealth.dp import ActionValues, action_values, solve
from decisions.finance.wealth.market import Market
from decisions.finance.wealth.meta_env import MAX_OPTIONS
from decisions.finance.wealth.planner import PPO_PLANNER_PATH, default_planner, plan, planner_training
from decisions.finance.wealth.problem import WealthProblem


@pytest.fixture(scope="module")
def problems() -> list[WealthProblem]:
    """The bench's three-goal client from two starting wealths, on a coarser DP grid than the default
    (rho 1.5: about 380 nodes, not 770): the identities and the regret's fall hold on any grid, and
    each solve takes a fifth of the time."""
    return [WealthProblem.parse({**EXAMPLE_MULTI_GOAL, "initial_wealth": w, "rho": 1.5}) for w in (100.0, 60.0)]


@pytest.fixture(scope="module", autouse=True)
def _dp_once_per_problem() -> Iterator[None]:
    """The labels' DP solves each problem once for the whole module (it is deterministic)."""
    solved: dict[str, ActionValues] = {}

    def cached(problem: WealthProblem) -> ActionValues:
        key = problem.model_dump_json()
        if key not in solved:
            solved[key] = action_values(problem)
        return solved[key]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(distill_module, "action_values", cached)
        yield


def test_action_values_give_the_dp_value_and_decisions(problems: list[WealthProblem]) -> None:
    problem = problems[0]
    result, values = solve(problem), action_values(problem)
    np.testing.assert_array_equal(values.wealth, result.wealth)
    np.testing.assert_array_equal(values.distribution, result.distribution)
    for t in range(problem.horizon + 1):  # solve's choice attains the best action value (ties may pick another index)
        q = values.q[t]
        alive = np.flatnonzero(result.goal_option[t] >= 0)
        port = result.portfolio[t, alive] if t < problem.horizon else np.zeros(len(alive), dtype=np.int64)
        chosen = q[result.goal_option[t, alive], port, alive]
        np.testing.assert_allclose(chosen, q[:, :, alive].max(axis=(0, 1)), rtol=1e-12)
        assert np.isinf(q[:, :, result.goal_option[t] < 0]).all()
    assert values.q[0][:, :, result.initial_state].max() == pytest.approx(result.value, rel=1e-12)
    # the single-goal form too (target indicator at the horizon)
    single = WealthProblem.parse({"horizon": 10, "initial_wealth": 100.0, "target": 200.0})
    start = solve(single)
    assert action_values(single).q[0][:, :, start.initial_state].max() == pytest.approx(start.value, rel=1e-12)


def test_slot_regrets_resolve_like_the_environment(problems: list[WealthProblem]) -> None:
    problem = problems[0]
    values = action_values(problem)
    t = problem.goals[-1].year  # year 8: options cost 0, 50, 100
    nodes = np.flatnonzero(np.isfinite(values.q[t]).any(axis=(0, 1)))
    cash = values.wealth[nodes]
    regret = slot_regrets(values, t, nodes, cash, 1.0).astype(float)
    assert regret.shape == (len(nodes), MAX_OPTIONS, values.q[0].shape[1])
    assert (regret >= 0).all()
    np.testing.assert_allclose(regret.min(axis=(1, 2)), 0.0, atol=1e-3)
    n_opts = len(values.options[t].costs)
    np.testing.assert_array_equal(regret[:, n_opts - 1], regret[:, MAX_OPTIONS - 1])  # padding = dearest
    poor = cash < values.options[t].costs[-1]
    assert poor.any()
    np.testing.assert_array_equal(regret[poor, n_opts - 1], regret[poor, n_opts - 2])  # falls back to the affordable one


def test_labels_weigh_states_by_visits(problems: list[WealthProblem]) -> None:
    labels = regret_labels(problems, default_planner(), paths=500, dp_share=0.5)
    assert len(labels) == len(labels.regret) == len(labels.weight) and labels.regret.dtype == np.float16
    for i, problem in enumerate(problems):
        for t in (0, problem.horizon):
            mass = labels.weight[(labels.problem == i) & (labels.year == t)].sum()
            assert 0.9 < mass <= 1.0 + 1e-9  # nearly every path is alive and labelled
        start = (labels.problem == i) & (labels.year == 0)
        expected = (problem.initial_wealth + problem.flows()[0]) / problem.initial_wealth  # cash in units of W0
        assert labels.cash[start][np.argmax(labels.weight[start])] == pytest.approx(expected)


def test_merged_labels_equal_labels_of_all_problems_at_once(problems: list[WealthProblem]) -> None:
    planner = default_planner()
    whole = regret_labels(problems, planner, paths=200, seed=5)
    merged = merge_labels([regret_labels(problems[:1], planner, paths=200, seed=5), regret_labels(problems[1:], planner, paths=200, seed=6)])
    for name in ("problem", "year", "cash", "regret", "weight"):
        np.testing.assert_array_equal(getattr(merged, name), getattr(whole, name))
    np.testing.assert_array_equal(np.asarray(merged.bank.costs), np.asarray(whole.bank.costs))
    with pytest.raises(ValueError, match="parts"):
        merge_labels([])


def test_distillation_lowers_the_greedy_regret_and_changes_the_plan(problems: list[WealthProblem]) -> None:
    labels = regret_labels(problems, default_planner(), paths=500)
    before = plan(default_planner(), problems[1])
    refined, summary = distill(
        default_planner(), labels, steps=100, batch_size=256, learning_rate=1e-3, temperature=1e-2, chunk=50
    )
    assert refined.joint
    assert summary["final_greedy_regret"] < 0.6 * summary["first_greedy_regret"]
    assert summary["labelled_states"] == len(labels) and summary["problems"] == 2
    after = plan(refined, problems[1])
    assert not np.array_equal(before.portfolio, after.portfolio)


def test_bad_input_is_refused_naming_the_field(problems: list[WealthProblem]) -> None:
    with pytest.raises(ValueError, match="problems"):
        regret_labels([], default_planner())
    with pytest.raises(ValueError, match="dp_share"):
        regret_labels(problems, default_planner(), dp_share=1.5)
    other = problems[0].model_copy(update={"market": Market(n_portfolios=5)})
    with pytest.raises(ValueError, match="one market"):
        regret_labels([problems[0], other], default_planner())
    labels = regret_labels(problems[:1], default_planner(), paths=100)
    with pytest.raises(ValueError, match="steps"):
        distill(default_planner(), labels, steps=0)
    with pytest.raises(ValueError, match="temperature"):
        distill(default_planner(), labels, steps=1, temperature=0.0)


def test_refine_example_starts_from_the_ppo_planner_and_matches_the_shipped_metadata() -> None:
    """``examples/wealth_refine.toml`` is the recipe recorded in the shipped planner's metadata."""
    examples = Path(__file__).resolve().parents[3] / "examples"
    with open(examples / "wealth_refine.toml", "rb") as f:
        job = wealth_job.prepare(tomllib.load(f), examples)
    assert Path(job.planner.path).resolve() == PPO_PLANNER_PATH.resolve()
    assert [s["stage"] for s in planner_training(PPO_PLANNER_PATH)["stages"]] == ["train", "fine_tune"]
    refined = planner_training()["stages"][-1]
    assert refined["stage"] == "dp_regret_distillation"
    assert refined["problems"] == job.planner.distill_problems and refined["rounds"] == job.planner.distill_rounds
    assert refined["steps_per_round"] == job.planner.distill_steps
    assert refined["learning_rate"] == job.planner.distill_learning_rate
    assert refined["temperature"] == job.planner.distill_temperature
