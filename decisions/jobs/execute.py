"""Validate job specs, then execute them (in process, or a sweep through a ``Runner``).

Every spec of a sweep is validated before any run starts, so bad input never
leaves half a sweep behind. A job that fails after it started is recorded as
failed by the domain's ``execute`` (through ``store.recorded_run``).

A job or sweep stopped by Ctrl-C or SIGTERM (see ``decisions.jobs.interrupt``) ends with
every run it started recorded as ``interrupted`` (a run its killed worker left running is
marked here) and raises ``JobsInterrupted``, which counts the stopped runs and the queued
sweep points that were cancelled. Cancelled points are counted, not recorded: a run in the
store is a job that started.

``choose_runner`` turns a backend name into the sweep's ``Runner``: ``process`` (worker
processes on this machine, the default), ``serial`` (one job after another in this process) or
``ray`` (Ray tasks, ``decisions.jobs.ray_runner``). Ray runs a point again when its worker dies;
the run the dead attempt left ``running`` is marked ``failed`` here once the sweep has ended.

``prepare_resume`` and ``execute_resume`` continue a stopped run (lost, interrupted or failed)
of a domain whose trainers checkpoint (``Domain.resumable``): its job is rebuilt from the run's
stored configuration and executed again into the same run record, from its checkpoints.
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
from decisions.jobs.interrupt import JobsInterrupted, signal_number
from decisions.jobs.parts import parts_runner
from decisions.jobs.registry import find, get, spec_domain
from decisions.jobs.runner import LocalProcessRunner, Runner, SerialRunner

if TYPE_CHECKING:
    from decisions.jobs.checkpoints import ResumePoint

log = logging.getLogger(__name__)

DEAD_WORKER_ERROR = (
    "WorkerDied: process {pid} on {host} died before the run ended (killed or out of memory); "
    "the runner retries such a point in a new attempt"
)
"""The error line of a run whose worker died (``fail_dead_attempts``; ``{pid}`` and ``{host}`` are the run's)."""

BACKENDS = ("process", "serial", "ray")
"""Where a sweep runs: worker processes here, one after another in this process, or Ray tasks."""


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


def choose_runner(backend: str = "process", *, workers: int = 1, address: str | None = None) -> Runner:
    """The ``Runner`` of a sweep, from a backend name (Ray is neither imported nor started here).

    Args:
        backend: ``process`` (``LocalProcessRunner`` with ``workers`` processes; serial when
            ``workers`` is 1), ``serial`` (``SerialRunner``) or ``ray`` (``RayRunner``).
        workers: processes of the ``process`` backend.
        address: with ``ray``, the cluster to join (``auto``, ``host:port``, ``ray://host:port``);
            None starts a local Ray on this machine's cores.

    Returns:
        The runner.

    Raises:
        InputError: on field ``backend`` for an unknown name or when Ray is not installed, on
            ``address`` when it is malformed or given without the ``ray`` backend.
    """
    if backend not in BACKENDS:
        raise InputError("backend", f"unknown backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if address is not None and backend != "ray":
        raise InputError("address", f"is used only with backend 'ray', not {backend!r}")
    if backend == "ray":
        from decisions.jobs.ray_runner import RayRunner

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
    """Execute prepared jobs: one job runs in process with live progress; a sweep goes to a runner.

    Args:
        prepared: from ``prepare_specs``.
        workers: processes for a sweep (``LocalProcessRunner``); 1 runs the sweep serially.
        progress: progress callback for the single-job case and for sweep completion.
        url: run store URL (default: ``DECISIONS_DB_URL`` or the user's SQLite file).
        runner: a custom ``Runner`` (e.g. a distributed one) for sweeps; it replaces ``backend``.
        backend: the sweep's runner by name (``choose_runner``); a single job runs in this process
            whatever the backend, and with ``ray`` its independent parts (``decisions.jobs.parts``)
            run as Ray tasks.
        address: the Ray cluster of the ``ray`` backend.

    Returns:
        One outcome per job, in order.

    Raises:
        InputError: on ``backend`` or ``address`` (see ``choose_runner``), on ``DECISIONS_DB_URL``
            when the run store cannot be used; raised before any job starts, so a bad store never
            leaves part of a sweep run or half recorded.
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
    """Mark the runs of an ended sweep still left ``running`` (or ``lost``) as ``failed``
    (``lifecycle.fail_dead_runs``): each was recorded by an attempt whose worker died (killed, out
    of memory) and which the runner ran again.

    Args:
        sweep_id: The sweep.
        url: Run store URL.

    Returns:
        The ids of the runs marked, oldest first (empty when the store cannot be reached: the
        runs then read back as lost).
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
        run_id = get(only.kind).execute(only.job, url=url, progress=progress, sweep_id=None)
    except Exception as exc:  # recorded as failed by the domain; reported here in one line
        return ExecutionOutcome(None, error_line(exc))
    except KeyboardInterrupt as exc:
        stopped = _interrupted_runs(url, error_line(exc), pid=os.getpid(), since=started)
        raise JobsInterrupted(stopped, 0, sweep_id=None, signum=signal_number(exc)) from None
    return ExecutionOutcome(run_id, None)


def _interrupted_runs(url: str | None, why: str, **which: Any) -> list[int]:
    """Mark the runs a stopped job or sweep left running as interrupted; return all its interrupted runs.

    Args:
        url: run store URL.
        why: what stopped them, for the error line of the runs marked here.
        **which: filters of ``store.interrupt_running`` (``sweep_id``, or ``pid`` and ``since``).

    Returns:
        Their ids; empty when the store cannot be reached (the runs then read back as lost).
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
    return domain.execute(job, url=config["url"], progress=silent, sweep_id=config["sweep_id"])


@dataclass(frozen=True)
class PreparedResume:
    """A stopped run checked for a resume, its job rebuilt from the run's stored configuration."""

    run_id: int
    kind: str
    job: Any
    point: ResumePoint
    """What its checkpoints hold (where it resumes, what is redone)."""


def prepare_resume(run_id: int, *, url: str | None = None) -> PreparedResume:
    """Check that a run can be resumed and rebuild its job; nothing in the store changes.

    Args:
        run_id: the run.
        url: run store URL (default: ``DECISIONS_DB_URL`` or the user's SQLite file).

    Returns:
        The run's id, domain, job and resume point.

    Raises:
        RunNotFoundError: no such run.
        RunNotResumableError: it succeeded, or its domain cannot resume (an ``InputError``).
        RunAliveError: it is running and its process alive (an ``InputError``).
        InputError: its stored configuration no longer validates.
    """
    from decisions.jobs.checkpoints import stopped_run_point
    from decisions.jobs.record import run_folder
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
    """Continue a prepared resume in this process, into the same run record.

    Args:
        prepared: from ``prepare_resume``.
        url: run store URL.
        progress: progress callback.

    Returns:
        The run's outcome (its error line when the resumed job failed; the run is then recorded failed).

    Raises:
        RunNotFoundError, RunNotResumableError, RunAliveError: the run changed since it was
            prepared (e.g. another process resumed it first); nothing was changed.
        JobsInterrupted: when stopped by Ctrl-C or SIGTERM (the run is then recorded as interrupted).
    """
    from decisions.store import get_engine
    from decisions.store.lifecycle import RunAliveError, RunNotResumableError
    from decisions.store.repository import RunNotFoundError

    get_engine(url)
    domain = get(prepared.kind)
    try:
        domain.execute(prepared.job, url=url, progress=progress, resume=prepared.run_id)
    except (RunNotFoundError, RunNotResumableError, RunAliveError):
        raise
    except Exception as exc:  # recorded as failed by the domain; reported here in one line
        return ExecutionOutcome(prepared.run_id, error_line(exc))
    except KeyboardInterrupt as exc:
        stopped = _interrupted_runs(url, error_line(exc), pid=os.getpid())
        ids = [run_id for run_id in stopped if run_id == prepared.run_id]
        raise JobsInterrupted(ids, 0, sweep_id=None, signum=signal_number(exc)) from None
    return ExecutionOutcome(prepared.run_id, None)
