"""The pension ALM batch job: the validated job unpacked into the study's settings."""

from __future__ import annotations

from decisions.core.progress import Progress, silent
from decisions.finance.pension.report import PensionReport
from decisions.finance.pension.spec import JOB_MODEL, EvaluationSettings, PensionJob, prepare  # light
from decisions.finance.pension.study import run_study

__all__ = ["JOB_MODEL", "REPORT_MODEL", "EvaluationSettings", "PensionJob", "prepare", "run_job"]

REPORT_MODEL = PensionReport


def run_job(job: PensionJob, *, progress: Progress = silent) -> PensionReport:
    """Run the study a validated job describes (``study.run_study``)."""
    return run_study(job.scenario, job.snapo, job.evaluation, seed=job.seed, progress=progress)
