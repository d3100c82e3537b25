"""Chronic care's job spec: its validated model and ``prepare``, with no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import Field

from decisions.health.chronic.settings import Clinicians, Data, HtnMachine, Problem, Reward, T2dMachine
from decisions.kit.base import JobBase


class ChronicJob(JobBase):
    """A validated chronic-care job: ``[job]``, ``[problem]``, ``[htn]``, ``[t2d]``, ``[reward]``,
    ``[clinicians]``, ``[data]``."""

    SECTIONS = ("problem", "htn", "t2d", "reward", "clinicians", "data")

    name: str = Field("chronic", min_length=1, max_length=200)
    problem: Problem = Field(default_factory=Problem)
    htn: HtnMachine = Field(default_factory=HtnMachine)
    t2d: T2dMachine = Field(default_factory=T2dMachine)
    reward: Reward = Field(default_factory=Reward)
    clinicians: Clinicians = Field(default_factory=Clinicians)
    data: Data = Field(default_factory=Data)


JOB_MODEL = ChronicJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> ChronicJob:
    """Validate a job spec (raises ``InputError`` naming the first bad field)."""
    return ChronicJob.from_spec(spec, base_dir)
