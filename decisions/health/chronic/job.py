"""Chronic care's batch job: the validated job unpacked into the study's settings, the study turned into a report."""

from __future__ import annotations

from decisions.core.progress import Progress, silent
from decisions.health.chronic.report import ChronicReport
from decisions.health.chronic.spec import ChronicJob
from decisions.health.chronic.study import Study, run_study

REPORT_MODEL = ChronicReport


def report_of(study: Study) -> ChronicReport:
    """The report of a study: its tables, train regime and headline figures."""
    tables = {name: getattr(study, name) for name in ChronicReport.TABLES}
    return ChronicReport(**tables, train_regime=study.train_regime, metrics=study.metrics())


def run_job(job: ChronicJob, *, progress: Progress = silent) -> ChronicReport:
    """Run the study a validated job describes."""
    return report_of(run_study(job.problem, job.htn, job.t2d, job.reward, job.clinicians, job.data,
                               seed=job.seed, progress=progress))
