"""Chronic care's batch job: the validated job unpacked into the study's settings, the study turned into a report."""

from __future__ import annotations

from decisions.core.progress import Progress, silent
from decisions.health.chronic.report import ChronicReport
from decisions.health.chronic.spec import ChronicJob
from decisions.health.chronic.study import run_study

REPORT_MODEL = ChronicReport


def run_job(job: ChronicJob, *, progress: Progress = silent) -> ChronicReport:
    """Run the study a validated job describes."""
    study = run_study(job.care(), seed=job.seed, neural=job.neural, progress=progress)
    return ChronicReport.of_study(study)
