"""The gas storage batch job: run the methods, compare, record."""

from __future__ import annotations

from decisions.core.progress import Progress, silent
from decisions.energy.gas_storage.report import GasStorageReport
from decisions.energy.gas_storage.spec import (  # the light spec module, re-exported for existing callers
    JOB_MODEL,
    EvaluationSettings,
    GasStorageJob,
    Method,
    SnapoSettings,
    prepare,
)
from decisions.energy.gas_storage.study import count_leaves, run_study, scalar_sensitivities

__all__ = [
    "JOB_MODEL", "REPORT_MODEL", "EvaluationSettings", "GasStorageJob", "Method", "SnapoSettings",
    "count_leaves", "prepare", "run_job", "scalar_sensitivities",
]

REPORT_MODEL = GasStorageReport


def run_job(job: GasStorageJob, *, progress: Progress = silent) -> GasStorageReport:
    """Run a job (``Domain.run_job``): the study (``study.run_study``) on the job's settings."""
    return run_study(
        job.scenario, job.snapo, job.evaluation, method=job.method, seed=job.seed, progress=progress
    )
