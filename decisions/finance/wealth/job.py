"""The goals-based wealth batch job: plan for one client with the MetaRL planner, beside the DP and the rule."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np
import pandas as pd

from decisions.core.agents.common import config_checkpoint
from decisions.core.progress import Progress, silent
from decisions.finance.wealth.distill import refine
from decisions.finance.wealth.dp import option_sets, solve, wealth_grid
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
from decisions.finance.wealth.report import WealthReport, goal_probabilities, goal_table, wealth_fan
from decisions.finance.wealth.rule import FundingRule, rule_policy
from decisions.finance.wealth.simulate import Paths, dp_policy, draw_normals, mean_and_se, simulate
from decisions.finance.wealth.spec import (  # the light spec module, re-exported for existing callers
    JOB_MODEL,
    EvaluationSettings,
    PlannerSettings,
    RuleSettings,
    WealthJob,
    prepare,
)
from decisions.kit.checkpoints import checkpoint_file

__all__ = [
    "JOB_MODEL", "REPORT_MODEL", "EvaluationSettings", "PlannerSettings", "RuleSettings", "WealthJob",
    "prepare", "run_job",
]

REPORT_MODEL = WealthReport
RESUMABLE = True
"""The planner's PPO training checkpoints into the run's folder: a stopped run can be resumed."""


def _planner(
    settings: PlannerSettings, market: Market, seed: int, progress: Progress, metrics: dict[str, float]
) -> tuple[Planner, dict[str, Any] | None]:
    """The planner ``settings`` ask for (trained or refined on ``market`` from ``seed`` when they
    say so), and how it was made when this run trained or refined it."""
    training: dict[str, Any] | None = None
    if settings.train_problems > 0:
        config = dataclasses.replace(DEFAULT_CONFIG, total_env_steps=settings.train_steps)
        checkpoint = config_checkpoint(checkpoint_file, "planner-ppo", config)
        start = time.perf_counter()
        planner, result = train_planner(
            settings.train_problems, config=config, market=market, seed=seed, progress=progress,
            checkpoint=checkpoint,
        )
        metrics["planner_train_seconds"] = time.perf_counter() - start
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
        metrics["planner_distill_seconds"] = time.perf_counter() - start
        metrics["planner_distill_greedy_regret"] = summary["final_greedy_regret"]
        before = training or (planner_training(settings.path) if settings.path else planner_training())
        training = {**before, "stages": [*before.get("stages", []), summary]}
    return planner, training


def run_job(job: WealthJob, *, progress: Progress = silent) -> WealthReport:
    """Plan for the client with the planner, solve the DP when feasible, score all on common paths."""
    problem = job.problem
    metrics: dict[str, float] = {}
    planner, training = _planner(job.planner, problem.market, job.seed, progress, metrics)
    trained = None if training is None else (planner, training)
    progress("planning", 0, 3)
    plan(planner, problem)  # compile, so plan_ms is the time an adviser waits
    answer = plan(planner, problem)
    metrics["plan_ms"] = answer.seconds * 1e3
    rule = FundingRule(margin=job.rule.margin, r1=job.rule.r1, r2=job.rule.r2)
    policies = {"planner": answer.policy, "funding_rule": rule_policy(problem, rule)}
    dp_result = None
    states = len(wealth_grid(problem)) + 1
    metrics["dp_states"] = float(states)
    if job.evaluation.dp and states <= job.evaluation.dp_max_states:
        start = time.perf_counter()
        dp_result = solve(problem)
        metrics["dp_ms"] = (time.perf_counter() - start) * 1e3
        metrics["dp_value"] = float(dp_result.value)
        policies = {"dp": dp_policy(dp_result), **policies}
    progress("planning", 1, 3)
    normals = draw_normals(job.seed, job.evaluation.paths, problem.horizon)
    paths: dict[str, Paths] = {name: simulate(problem, p, normals=normals) for name, p in policies.items()}
    progress("planning", 2, 3)
    rows = []
    for name, p in paths.items():
        mean, se = mean_and_se(p.utility)
        metrics[f"expected_utility_{name}"] = mean
        metrics[f"stderr_{name}"] = se
        rows.append({"policy": name, "expected_utility": mean, "stderr": se})
    comparison = pd.DataFrame(rows)
    if dp_result is not None:
        comparison["vs_dp"] = comparison["expected_utility"] / metrics["expected_utility_dp"]
        metrics["planner_vs_dp"] = metrics["expected_utility_planner"] / metrics["expected_utility_dp"]
        metrics["rule_vs_dp"] = metrics["expected_utility_funding_rule"] / metrics["expected_utility_dp"]
    sets = option_sets(problem)
    goals = goal_table(problem, {name: goal_probabilities(problem, sets, p) for name, p in paths.items()})
    plan_table = _plan_table(answer.wealth, answer.portfolio, answer.goal_option, dp_result)
    progress("planning", 3, 3)
    return WealthReport(
        comparison=comparison, goals=goals, plan=plan_table, wealth_fan=wealth_fan(paths), metrics=metrics, trained=trained
    )


def _plan_table(wealth: np.ndarray, portfolio: np.ndarray, option: np.ndarray, dp_result: Any) -> pd.DataFrame:
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
