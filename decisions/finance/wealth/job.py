"""The goals-based wealth batch job: the validated job unpacked into the study's settings."""

from __future__ import annotations

from decisions.core.progress import Progress, silent
from decisions.finance.wealth.batch import run_clients
from decisions.finance.wealth.report import WealthReport
from decisions.finance.wealth.spec import (  # the light spec module, re-exported for existing callers
    JOB_MODEL,
    EvaluationSettings,
    PlannerSettings,
    RuleSettings,
    WealthJob,
    prepare,
)
from decisions.finance.wealth.study import run_study

__all__ = [
    "JOB_MODEL", "REPORT_MODEL", "EvaluationSettings", "PlannerSettings", "RuleSettings", "WealthJob",
    "prepare", "run_job",
]

REPORT_MODEL = WealthReport
RESUMABLE = True
"""The planner's PPO training checkpoints into the run's folder: a stopped run can be resumed."""


def run_job(job: WealthJob, *, progress: Progress = silent) -> WealthReport:
    """Run the study a validated job describes (``study.run_study``, or ``batch.run_clients`` for many
    clients) and turn it into the report."""
    if job.clients is not None:
        batch = run_clients(job.clients, job.planner, job.rule, job.evaluation, seed=job.seed, progress=progress)
        return WealthReport(
            comparison=batch.comparison, goals=batch.goals, clients=batch.clients, plans=batch.plans,
            metrics=batch.metrics(), trained=batch.trained,
        )
    assert job.problem is not None  # prepare gives one of problem and clients
    study = run_study(job.problem, job.planner, job.rule, job.evaluation, seed=job.seed, progress=progress)
    return WealthReport(
        comparison=study.comparison, goals=study.goals, plan=study.plan, wealth_fan=study.wealth_fan,
        metrics=study.metrics(), trained=study.trained,
        deployment=study.deployment,
    )
