"""The wealth study for one client: the planner's plan beside the exact DP and the funding rule, on common paths."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from decisions.core.agents.common import config_checkpoint
from decisions.core.progress import Progress, silent
from decisions.finance.wealth.deployable import deployment
from decisions.finance.wealth.distill import refine
from decisions.finance.wealth.dp import WealthResult, option_sets, solve, wealth_grid
from decisions.finance.wealth.families import sample_problems
from decisions.finance.wealth.market import Market
from decisions.finance.wealth.planner import (
    DEFAULT_CONFIG,
    Planner,
    default_planner,
    load_planner,
    plan,
    planner_training,
    train_planner,
    training_summary,
)
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.report import goal_probabilities, goal_table, wealth_fan
from decisions.finance.wealth.rule import FundingRule, rule_policy
from decisions.finance.wealth.simulate import Paths, Policy, dp_policy, draw_normals, mean_and_se, simulate
from decisions.finance.wealth.spec import EvaluationSettings, PlannerSettings, RuleSettings
from decisions.kit.checkpoints import checkpoint_file


@dataclass(frozen=True, kw_only=True)
class PlannerRun:
    """What a run of the planner carries beside its tables (keyword-only fields, after the tables).

    Attributes:
        figures: the flat figures, timings included (``metrics()``).
        trained: ``(planner, training metadata)`` when the run trained or refined its planner.
    """

    figures: dict[str, float] = field(default_factory=dict)
    trained: tuple[Planner, dict[str, Any]] | None = None

    def metrics(self) -> dict[str, float]:
        """The headline figures (a copy of ``figures``)."""
        return dict(self.figures)


@dataclass(frozen=True)
class Study(PlannerRun):
    """What one client's study found; its figures: each policy's expected utility and standard error,
    ratios to the DP, timings.

    Attributes:
        comparison: one row per policy: ``policy, expected_utility, stderr`` (and ``vs_dp`` with the DP).
        goals: funding probability of each goal option under each policy.
        plan: the planner's (and the DP's) decisions on the planner's table nodes.
        wealth_fan: wealth percentiles per year and policy.
        deployment: what deciding a year needs (``deployable.deployment``), when the DP was solved.
    """

    comparison: pd.DataFrame
    goals: pd.DataFrame
    plan: pd.DataFrame
    wealth_fan: pd.DataFrame
    deployment: dict[str, Any] | None = None


def make_planner(
    settings: PlannerSettings, market: Market, seed: int, progress: Progress, figures: dict[str, float]
) -> tuple[Planner, dict[str, Any] | None]:
    """The planner ``settings`` ask for (trained or refined on ``market`` from ``seed`` when they
    say so), and how it was made when this run trained or refined it; its timings go into ``figures``."""
    training: dict[str, Any] | None = None
    if settings.train_problems > 0:
        config = dataclasses.replace(DEFAULT_CONFIG, total_env_steps=settings.train_steps)
        checkpoint = config_checkpoint(checkpoint_file, "planner-ppo", config)
        start = time.perf_counter()
        planner, result = train_planner(
            settings.train_problems, config=config, market=market, seed=seed, progress=progress,
            checkpoint=checkpoint,
        )
        figures["planner_train_seconds"] = time.perf_counter() - start
        training = training_summary(result, problems=settings.train_problems)
    elif settings.path is not None:
        planner = load_planner(settings.path)
    else:
        planner = default_planner()
    if settings.distill_problems > 0:
        start = time.perf_counter()
        problems = sample_problems(settings.distill_problems, "mixed", market=market)
        planner, summary = refine(
            planner, problems, rounds=settings.distill_rounds, steps=settings.distill_steps,
            learning_rate=settings.distill_learning_rate, temperature=settings.distill_temperature,
            seed=seed, progress=progress,
        )
        figures["planner_distill_seconds"] = time.perf_counter() - start
        figures["planner_distill_greedy_regret"] = summary["final_greedy_regret"]
        before = training or (planner_training(settings.path) if settings.path else planner_training())
        training = {**before, "stages": [*before.get("stages", []), summary]}
    return planner, training


def score_policies(
    problem: WealthProblem, policies: Mapping[str, Policy], normals: np.ndarray
) -> tuple[dict[str, Paths], pd.DataFrame]:
    """Every policy simulated on the common ``normals``: its paths by name and the comparison table,
    one row per policy in the given order (``policy, expected_utility, stderr``)."""
    paths = {name: simulate(problem, p, normals=normals) for name, p in policies.items()}
    rows = []
    for name, p in paths.items():
        mean, se = mean_and_se(p.utility)
        rows.append({"policy": name, "expected_utility": mean, "stderr": se})
    return paths, pd.DataFrame(rows)


def comparison_figures(comparison: pd.DataFrame) -> dict[str, float]:
    """``expected_utility_<policy>`` and ``stderr_<policy>`` of each row of a ``score_policies`` table."""
    figures: dict[str, float] = {}
    for row in comparison.itertuples():
        figures[f"expected_utility_{row.policy}"] = float(row.expected_utility)
        figures[f"stderr_{row.policy}"] = float(row.stderr)
    return figures


def run_study(
    problem: WealthProblem, planner_settings: PlannerSettings, rule_settings: RuleSettings,
    evaluation: EvaluationSettings, *, seed: int, progress: Progress = silent,
) -> Study:
    """Plan for the client with the planner, solve the DP when feasible, score all on common paths drawn from ``seed``."""
    figures: dict[str, float] = {}
    planner, training = make_planner(planner_settings, problem.market, seed, progress, figures)
    progress("planning", 0, 3)
    plan(planner, problem)  # compile, so plan_ms is the time an adviser waits
    answer = plan(planner, problem)
    figures["plan_ms"] = answer.seconds * 1e3
    rule = FundingRule(margin=rule_settings.margin, r1=rule_settings.r1, r2=rule_settings.r2)
    policies = {"planner": answer.policy, "funding_rule": rule_policy(problem, rule)}
    dp_result = None
    states = len(wealth_grid(problem)) + 1
    figures["dp_states"] = float(states)
    if evaluation.dp and states <= evaluation.dp_max_states:
        start = time.perf_counter()
        dp_result = solve(problem)
        figures["dp_ms"] = (time.perf_counter() - start) * 1e3
        figures["dp_value"] = float(dp_result.value)
        policies = {"dp": dp_policy(dp_result), **policies}
    progress("planning", 1, 3)
    normals = draw_normals(seed, evaluation.paths, problem.horizon)
    paths, comparison = score_policies(problem, policies, normals)
    figures.update(comparison_figures(comparison))
    progress("planning", 2, 3)
    if dp_result is not None:
        comparison["vs_dp"] = comparison["expected_utility"] / figures["expected_utility_dp"]
        figures["planner_vs_dp"] = figures["expected_utility_planner"] / figures["expected_utility_dp"]
        figures["rule_vs_dp"] = figures["expected_utility_funding_rule"] / figures["expected_utility_dp"]
    sets = option_sets(problem)
    goals = goal_table(problem, {name: goal_probabilities(problem, sets, p) for name, p in paths.items()})
    plan_table = _plan_table(answer.wealth, answer.portfolio, answer.goal_option, dp_result)
    deployed = None if dp_result is None else deployment(problem, rule, planner, dp_result, policies)
    progress("planning", 3, 3)
    return Study(
        comparison=comparison, goals=goals, plan=plan_table, wealth_fan=wealth_fan(paths), figures=figures,
        trained=None if training is None else (planner, training), deployment=deployed,
    )


def _plan_table(
    wealth: np.ndarray, portfolio: np.ndarray, option: np.ndarray, dp_result: WealthResult | None
) -> pd.DataFrame:
    """Long table of the planner's (and the DP's) decisions on the planner's table nodes."""
    years, nodes = option.shape
    table = pd.DataFrame(
        {
            "year": np.repeat(np.arange(years), nodes),
            "wealth": np.tile(wealth, years),
            "planner_option": option.ravel(),
            "planner_portfolio": np.vstack([portfolio, np.full((1, nodes), -1)]).ravel(),
        }
    )
    if dp_result is not None:
        index = np.searchsorted(dp_result.wealth, wealth).clip(0, len(dp_result.wealth) - 1)
        dp_port = np.vstack([dp_result.portfolio, np.full((1, len(dp_result.wealth)), -1)])
        table["dp_option"] = dp_result.goal_option[:, index].ravel()
        table["dp_portfolio"] = dp_port[:, index].ravel()
    return table
