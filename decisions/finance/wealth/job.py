"""The goals-based wealth batch job: plan for one client with the MetaRL planner, beside the DP and the rule.

``prepare(spec, base_dir)`` validates a job spec (TOML tables ``[job]``, ``[problem]`` with
``[[problem.goals]]``, ``[planner]``, ``[rule]``, ``[evaluation]``) into a ``WealthJob``;
``run_job(job)`` plans and scores and returns a ``WealthReport``; ``execute(job)`` does that
inside a recorded run of the store (the CLI's path).

The planner is the shipped one (``planner.default_planner``) unless ``planner.path`` names
another file or ``planner.train_problems > 0`` trains a new one first (recorded with the run).
The DP is solved beside it when ``evaluation.dp`` is on and its grid is small enough.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from decisions.core.progress import Progress, silent
from decisions.errors import InputError
from decisions.finance.wealth.dp import option_sets, solve, wealth_grid
from decisions.finance.wealth.meta_env import encode
from decisions.finance.wealth.planner import (
    DEFAULT_CONFIG,
    Planner,
    default_planner,
    load_planner,
    plan,
    save_planner,
    train_planner,
)
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.report import WealthReport, goal_probabilities, goal_table, wealth_fan
from decisions.finance.wealth.rule import FundingRule, rule_policy
from decisions.finance.wealth.simulate import Paths, dp_policy, draw_normals, mean_and_se, simulate
from decisions.jobs.record import execute_recorded
from decisions.jobs.validate import spec_data, validate_job

KIND = "wealth"
_STRICT = ConfigDict(extra="forbid", frozen=True)


class PlannerSettings(BaseModel):
    """Which planner plans: the shipped one, a file, or one trained for this run."""

    model_config = _STRICT

    path: str | None = Field(None, description="A planner file written by a training run (default: the shipped planner).")
    train_problems: int = Field(0, ge=0, le=1_000_000, description="> 0: train a new planner on this many sampled problems.")
    train_steps: int = Field(DEFAULT_CONFIG.total_env_steps, ge=DEFAULT_CONFIG.batch_size, le=10**9, description="PPO environment steps when training.")


class RuleSettings(BaseModel):
    """The funding-ratio rule's parameters (defaults: tuned on training problems by ``decisions bench wealth``)."""

    model_config = _STRICT

    margin: float = Field(FundingRule.margin, ge=0.0, le=100.0)
    r1: float = Field(FundingRule.r1, ge=0.0, le=100.0)
    r2: float = Field(FundingRule.r2, ge=0.0, le=100.0)


class EvaluationSettings(BaseModel):
    """How the policies are scored."""

    model_config = _STRICT

    paths: int = Field(10_000, gt=1, le=1_000_000, description="Common Monte Carlo paths.")
    dp: bool = Field(True, description="Also solve the exact DP (skipped when its grid is too large).")
    dp_max_states: int = Field(4_000, gt=1, le=100_000, description="Largest DP grid to solve.")


class WealthJob(BaseModel):
    """A validated wealth-planning job."""

    model_config = _STRICT

    name: str = Field("wealth", min_length=1, max_length=200)
    seed: int = Field(0, ge=0)
    output_dir: str | None = Field(None, description="Where tables and the chart go (default: next to the store).")
    problem: WealthProblem
    planner: PlannerSettings = Field(default_factory=PlannerSettings)
    rule: RuleSettings = Field(default_factory=RuleSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)

    def config(self) -> dict[str, Any]:
        """JSON-ready configuration for the run store."""
        return self.model_dump(mode="json")


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> WealthJob:
    """Validate a job spec into a ``WealthJob``; a relative ``planner.path`` is read from ``base_dir``.

    Raises:
        InputError: naming the first bad field (also a planner file that does not exist, a rule
            with ``r2 <= r1``, or a problem beyond the planner's reach).
    """
    sections = ("problem", "planner", "rule", "evaluation")
    job = validate_job(WealthJob, spec_data(spec, sections), sections)
    if job.planner.path is not None:
        path = Path(job.planner.path)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if not path.is_file():
            raise InputError("planner.path", f"no planner file at {path}")
        job = job.model_copy(update={"planner": job.planner.model_copy(update={"path": str(path)})})
    if job.rule.r2 <= job.rule.r1:
        raise InputError("rule.r2", f"must exceed rule.r1 ({job.rule.r1:g}), got {job.rule.r2:g}")
    encode(job.problem)  # raises InputError for a problem beyond the planner's padding
    return job


def _planner(job: WealthJob, progress: Progress, metrics: dict[str, float]) -> tuple[Planner, Any]:
    """The planner the job uses, and the training result when it trained one."""
    if job.planner.train_problems > 0:
        config = dataclasses.replace(DEFAULT_CONFIG, total_env_steps=job.planner.train_steps)
        start = time.perf_counter()
        trained, result = train_planner(
            job.planner.train_problems, config=config, market=job.problem.market, seed=job.seed, progress=progress
        )
        metrics["planner_train_seconds"] = time.perf_counter() - start
        return trained, result
    if job.planner.path is not None:
        return load_planner(job.planner.path), None
    return default_planner(), None


def run_job(job: WealthJob, *, progress: Progress = silent) -> WealthReport:
    """Plan for the client with the planner, solve the DP when feasible, score all on common paths."""
    problem = job.problem
    metrics: dict[str, float] = {}
    planner, trained = _planner(job, progress, metrics)
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
        comparison=comparison, goals=goals, plan=plan_table, fan=wealth_fan(paths), metrics=metrics, trained=trained
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


def execute(job: WealthJob, *, url: str | None = None, progress: Progress = silent, sweep_id: str | None = None) -> int:
    """Run a job inside a recorded run: config, metrics, tables, chart (and a trained planner) are stored.

    Returns:
        The run id. On an exception the run is recorded as failed and the exception re-raised.
    """

    def save_trained(report: WealthReport, folder: Path) -> dict[str, Path]:
        if report.trained is None:
            return {}
        path = folder / "planner.msgpack"
        save_planner(path, report.trained, problems=job.planner.train_problems)
        return {"planner": path}

    return execute_recorded(
        KIND, job.name, job.config(), lambda: run_job(job, progress=progress),
        url=url, sweep_id=sweep_id, output_dir=job.output_dir, extra_files=save_trained,
    )
