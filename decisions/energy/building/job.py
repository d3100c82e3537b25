"""The building batch job: train the agents, score them with the baselines, explain, record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from decisions.core.progress import Progress, silent
from decisions.energy.building.agents import Overrides
from decisions.energy.building.report import BuildingReport
from decisions.energy.building.spec import AgentName, BuildingJob
from decisions.energy.building.study import run_study
from decisions.errors import from_validation_error

REPORT_MODEL = BuildingReport
RESUMABLE = True
"""Its agents checkpoint into the run's folder: a stopped run can be resumed."""


def run_job(
    job: BuildingJob,
    *,
    progress: Progress = silent,
    overrides: Mapping[AgentName, Overrides] | None = None,
) -> BuildingReport:
    """Run a job (``Domain.run_job``): the study (``study.run_study``) on the job's settings;
    ``overrides`` as there."""
    return run_study(
        job.scenario, job.agents, job.evaluation, seed=job.seed, progress=progress, overrides=overrides
    )


def recorded_job(config: Mapping[str, Any]) -> BuildingJob:
    """The job of a recorded run, rebuilt from the configuration the store holds (``BuildingJob.config``).

    Raises:
        InputError: the configuration no longer validates (naming the first bad field).
    """
    try:
        return BuildingJob.model_validate(config)
    except ValidationError as exc:
        raise from_validation_error(exc, data=config) from None
