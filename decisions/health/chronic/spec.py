"""Chronic care's job spec: its validated model and ``prepare``, with no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from decisions.errors import InputError
from decisions.health.chronic.settings import (
    ACTIONS,
    Care,
    Clinicians,
    Data,
    HtnMachine,
    Neural,
    Problem,
    Reward,
    T2dMachine,
)
from decisions.kit.base import JobBase, Section


class ChronicJob(JobBase, name="chronic"):
    """A validated chronic-care job: ``[job]``, ``[problem]``, ``[htn]``, ``[t2d]``, ``[reward]``,
    ``[clinicians]``, ``[data]``, ``[neural]``."""

    SPEC_PATHS = ("data.log",)

    problem: Section[Problem]
    htn: Section[HtnMachine]
    t2d: Section[T2dMachine]
    reward: Section[Reward]
    clinicians: Section[Clinicians]
    data: Section[Data]
    neural: Section[Neural]

    def care(self) -> Care:
        """The study's settings, all but the seed and the neural learner's."""
        return Care(self.problem, self.htn, self.t2d, self.reward, self.clinicians, self.data)


JOB_MODEL = ChronicJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> ChronicJob:
    """Validate a job spec (raises ``InputError`` naming the first bad field); a ``data.log`` is read
    and checked cell by cell (``visit_log.read_visit_log``: the error names its row and column)."""
    job = ChronicJob.from_spec(spec, base_dir)
    if job.data.log is not None:
        if job.data.log_disease not in job.problem.diseases:
            raise InputError("data.log_disease", f"{job.data.log_disease!r} is not studied "
                                                 f"(problem.diseases: {', '.join(job.problem.diseases)})")
        from decisions.health.chronic.visit_log import read_visit_log  # pandas: only for a log file

        read_visit_log(job.data.log, job.problem.horizon, habit=ACTIONS.index(job.clinicians.habit))
    return job
