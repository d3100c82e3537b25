"""Validate job specs, then execute them (in process, or a sweep through a ``Runner``).

Every spec of a sweep is validated before any run starts, so bad input never
leaves half a sweep behind. A job that fails after it started is recorded as
failed by the domain's ``execute`` (through ``store.recorded_run``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decisions.core.progress import Progress, silent
from decisions.errors import error_line
from decisions.jobs.registry import get, spec_domain
from decisions.jobs.runner import LocalProcessRunner, Runner, SerialRunner


@dataclass(frozen=True)
class PreparedJob:
    """A validated job ready to run (the spec is kept to re-create it in a worker process).

    ``kind`` is the name of its domain in ``decisions.jobs.registry``.
    """

    kind: str
    job: Any
    spec: dict[str, Any]
    base_dir: str | None


@dataclass(frozen=True)
class ExecutionOutcome:
    """Run id of a finished job (None if it failed before recording) and its error line."""

    run_id: int | None
    error: str | None


def prepare_specs(specs: Sequence[Mapping[str, Any]], base_dir: Path | None) -> list[PreparedJob]:
    """Validate each spec into its domain job; raises ``InputError`` for the first bad one.

    Args:
        specs: expanded job specs (one per sweep point).
        base_dir: folder that relative paths in the specs (e.g. a curve CSV) refer to.

    Returns:
        Prepared jobs in the same order.
    """
    prepared = []
    for spec in specs:
        domain = spec_domain(spec)
        job = domain.prepare(spec, base_dir)
        prepared.append(PreparedJob(domain.name, job, dict(spec), str(base_dir) if base_dir else None))
    return prepared


def execute_specs(
    prepared: Sequence[PreparedJob],
    *,
    workers: int = 1,
    progress: Progress = silent,
    url: str | None = None,
    runner: Runner | None = None,
) -> list[ExecutionOutcome]:
    """Execute prepared jobs: one job runs in process with live progress; a sweep goes to a runner.

    Args:
        prepared: from ``prepare_specs``.
        workers: processes for a sweep (``LocalProcessRunner``); 1 runs the sweep serially.
        progress: progress callback for the single-job case and for sweep completion.
        url: run store URL (default: ``DECISIONS_DB_URL`` or the user's SQLite file).
        runner: a custom ``Runner`` (e.g. a distributed one) for sweeps.

    Returns:
        One outcome per job, in order.
    """
    if len(prepared) == 1:
        only = prepared[0]
        try:
            run_id = get(only.kind).execute(only.job, url=url, progress=progress, sweep_id=None)
        except Exception as exc:  # recorded as failed by the domain; reported here in one line
            return [ExecutionOutcome(None, error_line(exc))]
        return [ExecutionOutcome(run_id, None)]
    sweep_id = uuid.uuid4().hex[:12]
    configs = [
        {"kind": p.kind, "spec": p.spec, "base_dir": p.base_dir, "url": url, "sweep_id": sweep_id}
        for p in prepared
    ]
    chosen = runner or (LocalProcessRunner(max_workers=workers) if workers > 1 else SerialRunner())
    outcomes = chosen.run(
        execute_config, configs, progress=lambda done, total: progress(f"sweep {sweep_id}", done, total)
    )
    return [ExecutionOutcome(o.result, o.error) for o in outcomes]


def execute_config(config: dict[str, Any]) -> int:
    """Worker entry point: re-validate a spec and execute it (module level, so processes can import it)."""
    domain = get(config["kind"])
    base_dir = Path(config["base_dir"]) if config["base_dir"] else None
    job = domain.prepare(config["spec"], base_dir)
    return domain.execute(job, url=config["url"], progress=silent, sweep_id=config["sweep_id"])
