"""The pharma process-chain batch job: the validated job unpacked into the study's settings."""

from __future__ import annotations

from decisions.core.progress import Progress, silent
from decisions.health.pharma.report import PharmaReport
from decisions.health.pharma.spec import PharmaJob
from decisions.health.pharma.study import run_study

REPORT_MODEL = PharmaReport


def run_job(job: PharmaJob, *, progress: Progress = silent) -> PharmaReport:
    """Run a job (``Domain.run_job``): the study (``study.run_study``) on the job's settings. The report
    carries the tables, the metrics and the SNAPO result."""
    study = run_study(job.scenario, job.method, job.optimise, job.baseline, job.design_space, progress=progress)
    return PharmaReport.of_study(study, compliance_target=job.optimise.compliance_target, scenario=job.scenario)
