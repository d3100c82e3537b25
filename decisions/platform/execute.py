"""Validate job specs, then execute them: one job in this process, a sweep through a ``Runner``.

Every spec is validated before any run starts. A stopped job or sweep leaves its runs recorded
``interrupted`` and raises ``JobsInterrupted``. ``prepare_resume`` and ``execute_resume``
continue a stopped run from its checkpoints, into the same run record.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from decisions.core.progress import Progress, silent
from decisions.errors import InputError, error_line
from decisions.kit.parts import parts_runner
from decisions.platform.interrupt import JobsInterrupted, signal_number
from decisions.platform.record import execute_domain
from decisions.platform.registry import find, get, spec_domain
from decisions.platform.runner import LocalProcessRunner, Runner, SerialRunner

if TYPE_CHECKING:
    from decisions.kit.checkpoints import ResumePoint

log = logging.getLogger(__name__)

DEAD_WORKER_ERROR = (
    "WorkerDied: process {pid} on {host} died before the run ended (killed or out of memory); "
    "the runner retries such a point in a new attempt"
)
"""The error line of a run whose worker died (``{pid}`` and ``{host}`` are the run's)."""

BACKENDS = ("process", "serial", "ray")
"""Where a sweep runs: worker processes here, one after another in this process, or Ray tasks."""


@dataclass(frozen=True)
class PreparedJob:
    """A validated job of domain ``kind``; its spec re-creates it in a worker process."""

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
    """Validate each spec (``base_dir``: where its relative paths start) into its domain's job, in order.

    Raises:
        InputError: for the first bad spec.
    """
    prepared = []
    for spec in specs:
        domain = spec_domain(spec)
        job = domain.prepare(spec, base_dir)
        prepared.append(PreparedJob(domain.name, job, dict(spec), str(base_dir) if base_dir else None))
    return prepared


def choose_runner(backend: str = "process", *, workers: int = 1, address: str | None = None) -> Runner:
    """The sweep's ``Runner`` for ``backend`` (one of ``BACKENDS``); Ray is neither imported nor started.

    ``process`` uses ``workers`` processes (serial when 1); ``address`` is the ``ray`` backend's cluster.

    Raises:
        InputError: on ``backend`` for an unknown name or when Ray is not installed, on
            ``address`` when it is malformed or given without the ``ray`` backend.
    """
    if backend not in BACKENDS:
        raise InputError("backend", f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if address is not None and backend != "ray":
        raise InputError("address", f"is used only with backend 'ray', not {backend!r}")
    if backend == "ray":
        from decisions.platform.ray_runner import RayRunner

        return RayRunner(address=address)
    if backend == "serial":
        return SerialRunner()
    return LocalProcessRunner(max_workers=workers) if workers > 1 else SerialRunner()


def execute_specs(
    prepared: Sequence[PreparedJob],
    *,
    workers: int = 1,
    progress: Progress = silent,
    url: str | None = None,
    runner: Runner | None = None,
    backend: str = "process",
    address: str | None = None,
) -> list[ExecutionOutcome]:
    """Execute prepared jobs into the store at ``url``; one outcome per job, in order.

    A single job runs in this process (its independent parts go to a runner with ``runs_parts``);
    a sweep goes to ``runner``, else to ``choose_runner(backend, workers=..., address=...)``.

    Raises:
        InputError: on ``backend``, ``address`` or an unusable store, before any job starts.
        JobsInterrupted: when stopped by Ctrl-C or SIGTERM, once its runs are recorded as interrupted.
    """
    from decisions.store import get_engine

    chosen = runner or choose_runner(backend, workers=workers, address=address)
    get_engine(url)  # connects and creates the schema (once per process), or names the problem
    if len(prepared) == 1:
        with parts_runner(chosen if getattr(chosen, "runs_parts", False) else None):
            return [_execute_one(prepared[0], progress=progress, url=url)]
    sweep_id = uuid.uuid4().hex[:12]
    configs = [
        {"kind": p.kind, "spec": p.spec, "base_dir": p.base_dir, "url": url, "sweep_id": sweep_id}
        for p in prepared
    ]
    try:
        outcomes = chosen.run(
            execute_config, configs, progress=lambda done, total: progress(f"sweep {sweep_id}", done, total)
        )
    except KeyboardInterrupt as exc:
        stopped = _interrupted_runs(url, "its worker was stopped with the sweep", sweep_id=sweep_id)
        known = getattr(exc, "outcomes", None)
        unfinished = len(configs) if known is None else sum(o.stopped is not None for o in known)
        cancelled = max(unfinished - len(stopped), 0)
        raise JobsInterrupted(stopped, cancelled, sweep_id=sweep_id, signum=signal_number(exc)) from None
    if getattr(chosen, "retries_dead_workers", False):
        fail_dead_attempts(sweep_id, url=url)
    return [ExecutionOutcome(o.result, o.error) for o in outcomes]


def fail_dead_attempts(sweep_id: str, *, url: str | None = None) -> list[int]:
    """Mark the runs an ended sweep left ``running`` or ``lost`` (their workers died) as ``failed``.

    Returns the ids marked, oldest first; empty when the store cannot be reached.
    """
    from decisions.store.lifecycle import fail_dead_runs

    try:
        return fail_dead_runs(sweep_id, DEAD_WORKER_ERROR, url=url)
    except Exception:  # the sweep's outcomes must still be reported
        log.warning("could not mark the runs of dead workers as failed", exc_info=True)
        return []


def _execute_one(only: PreparedJob, *, progress: Progress, url: str | None) -> ExecutionOutcome:
    """Run one prepared job in this process; an interruption leaves its run recorded as interrupted."""
    started = datetime.now(UTC)
    try:
        run_id = execute_domain(get(only.kind), only.job, url=url, progress=progress, sweep_id=None)
    except Exception as exc:  # recorded as failed by the domain; reported here in one line
        return ExecutionOutcome(None, error_line(exc))
    except KeyboardInterrupt as exc:
        stopped = _interrupted_runs(url, error_line(exc), pid=os.getpid(), since=started)
        raise JobsInterrupted(stopped, 0, sweep_id=None, signum=signal_number(exc)) from None
    return ExecutionOutcome(run_id, None)


def _interrupted_runs(url: str | None, why: str, **which: Any) -> list[int]:
    """Mark the runs a stopped job or sweep left running as interrupted (``why``); return all its interrupted runs.

    ``which`` filters as ``store.interrupt_running`` does; empty when the store cannot be reached.
    """
    from decisions.store import interrupt_running
    from decisions.store.liveness import this_host

    try:
        host = this_host() if "pid" in which else None
        return interrupt_running(url=url, host=host, error=f"interrupted: {why}", **which)
    except Exception:  # the stop must still be reported
        log.warning("could not mark the interrupted runs", exc_info=True)
        return []


def execute_config(config: dict[str, Any]) -> int:
    """Worker entry point: re-validate a spec and execute it (module level, so processes can import it)."""
    domain = get(config["kind"])
    base_dir = Path(config["base_dir"]) if config["base_dir"] else None
    job = domain.prepare(config["spec"], base_dir)
    return execute_domain(domain, job, url=config["url"], progress=silent, sweep_id=config["sweep_id"])


@dataclass(frozen=True)
class PreparedResume:
    """A stopped run checked for a resume: its job rebuilt from its stored configuration, its checkpoints read."""

    run_id: int
    kind: str
    job: Any
    point: ResumePoint


def prepare_resume(run_id: int, *, url: str | None = None) -> PreparedResume:
    """Check that a run can be resumed and rebuild its job; nothing in the store changes.

    Raises:
        RunNotFoundError: no such run.
        RunNotResumableError: it succeeded, or its domain cannot resume (an ``InputError``).
        RunAliveError: it is running and its process alive (an ``InputError``).
        InputError: its stored configuration no longer validates.
    """
    from decisions.platform.record import run_folder, stopped_run_point
    from decisions.store import get_run
    from decisions.store.lifecycle import RunNotResumableError, check_resumable

    rec = get_run(run_id, url=url)
    check_resumable(rec)
    domain = find(rec.kind)
    if domain is None or not domain.resumable:
        what = f"{rec.kind} jobs keep no checkpoints" if domain is not None else f"no domain runs kind {rec.kind!r}"
        raise RunNotResumableError("run", f"run {run_id} cannot be resumed: {what}; run its spec again")
    job = domain.job_from_config(rec.config)
    return PreparedResume(run_id, domain.name, job, stopped_run_point(run_folder(run_id, job.output_dir, url), rec))


def execute_resume(prepared: PreparedResume, *, url: str | None = None, progress: Progress = silent) -> ExecutionOutcome:
    """Continue a prepared resume in this process, into the same run record; its outcome.

    Raises:
        RunNotFoundError, RunNotResumableError, RunAliveError: the run changed since it was
            prepared; nothing was changed.
        JobsInterrupted: when stopped by Ctrl-C or SIGTERM (the run is then recorded as interrupted).
    """
    from decisions.store import get_engine
    from decisions.store.lifecycle import RunAliveError, RunNotResumableError
    from decisions.store.repository import RunNotFoundError

    get_engine(url)
    domain = get(prepared.kind)
    try:
        execute_domain(domain, prepared.job, url=url, progress=progress, resume=prepared.run_id)
    except (RunNotFoundError, RunNotResumableError, RunAliveError):
        raise
    except Exception as exc:  # recorded as failed by the domain; reported here in one line
        return ExecutionOutcome(prepared.run_id, error_line(exc))
    except KeyboardInterrupt as exc:
        stopped = _interrupted_runs(url, error_line(exc), pid=os.getpid())
        ids = [run_id for run_id in stopped if run_id == prepared.run_id]
        raise JobsInterrupted(ids, 0, sweep_id=None, signum=signal_number(exc)) from None
    return ExecutionOutcome(prepared.run_id, None)
