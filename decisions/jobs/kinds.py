"""The job kinds a spec file may name, mapped to their domain entry points at the edge.

A job spec is a TOML table with ``[job] kind = "..."``; this module maps that
user-chosen name through an Enum to the domain's ``prepare`` (validate a spec
into a job object, before any run starts) and ``execute`` (run a prepared job
and record it). Domain code never sees strings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from decisions.errors import InputError


class JobKind(StrEnum):
    """Domains that have a batch job."""

    GAS_STORAGE = "gas_storage"
    BUILDING = "building"
    PHARMA = "pharma"
    PENSION = "pension"
    WEALTH = "wealth"
    COMP = "comp"


@dataclass(frozen=True)
class JobEntry:
    """How to run one kind of job.

    Attributes:
        prepare: ``prepare(spec, base_dir) -> job``: validate a spec (raises ``InputError``).
        execute: ``execute(job, *, url, progress, sweep_id) -> run_id``: run and record it.
    """

    prepare: Callable[[Mapping[str, Any], Path | None], Any]
    execute: Callable[..., int]


def entry(kind: JobKind) -> JobEntry:
    """The entry points of a job kind (imported lazily: only the chosen domain loads)."""
    if kind is JobKind.GAS_STORAGE:
        from decisions.energy.gas_storage import job

        return JobEntry(prepare=job.prepare, execute=job.execute)
    if kind is JobKind.BUILDING:
        from decisions.energy.building import job as building_job

        return JobEntry(prepare=building_job.prepare, execute=building_job.execute)
    if kind is JobKind.PHARMA:
        from decisions.health.pharma import job as pharma_job

        return JobEntry(prepare=pharma_job.prepare, execute=pharma_job.execute)
    if kind is JobKind.PENSION:
        from decisions.finance.pension import job as pension_job

        return JobEntry(prepare=pension_job.prepare, execute=pension_job.execute)
    if kind is JobKind.WEALTH:
        from decisions.finance.wealth import job as wealth_job

        return JobEntry(prepare=wealth_job.prepare, execute=wealth_job.execute)
    if kind is JobKind.COMP:
        from decisions.telecom.comp import job as comp_job

        return JobEntry(prepare=comp_job.prepare, execute=comp_job.execute)
    raise AssertionError(kind)  # pragma: no cover - every enum member is mapped above


def job_kind(spec: Mapping[str, Any]) -> JobKind:
    """Read and check ``job.kind`` of a spec (default ``gas_storage``)."""
    table = spec.get("job", {})
    if not isinstance(table, Mapping):
        raise InputError("job", "must be a table")
    raw = table.get("kind", JobKind.GAS_STORAGE.value)
    try:
        return JobKind(raw)
    except ValueError:
        known = ", ".join(k.value for k in JobKind)
        raise InputError("job.kind", f"unknown job kind {raw!r} (known: {known})") from None
