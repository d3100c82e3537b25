"""The end of a run's life that its own process cannot record: heartbeats, lost runs, stopped
sweeps and deletion.

- ``beat`` renews a running run's heartbeat (the recording process's heartbeat thread calls it);
- ``reap_lost_runs`` writes ``lost`` into the store for runs whose process is gone;
- ``interrupt_running`` marks the runs a stopped sweep (or job) left ``running`` as ``interrupted``;
- ``fail_dead_runs`` marks the runs an ended sweep left ``running`` (attempts whose worker died) as ``failed``;
- ``reopen_run`` makes a stopped run (lost, interrupted or failed) ``running`` again in this process,
  for ``decisions runs resume``;
- ``delete_run`` removes a finished run, its metrics and artifact rows and its artifact folder.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import delete, select

from decisions.errors import InputError
from decisions.store import artifacts
from decisions.store.db import artifacts_root, session_scope
from decisions.store.liveness import this_host
from decisions.store.models import Artifact, Metric, Run, RunStatus
from decisions.store.records import RunRecord, judged_status, last_seen, run_record
from decisions.store.repository import run_row

LIVE = (RunStatus.RUNNING, RunStatus.LOST)
"""Stored states of a run whose process may still write to it."""


class RunAliveError(InputError):
    """Raised when asked to delete (or resume) a run whose process is still alive."""


class RunNotResumableError(InputError):
    """Raised when asked to resume a run that cannot be resumed (it succeeded, or its domain cannot)."""


def beat(run_id: int, *, url: str | None = None) -> bool:
    """Renew the heartbeat of a running run; a run marked lost by mistake becomes running again.

    Args:
        run_id: The run.
        url: Database URL; None means ``database_url()``.

    Returns:
        Whether the run is still live (False once it has finished: the heartbeat can stop).
    """
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        if run is None or run.status not in LIVE:
            return False
        run.heartbeat_at = datetime.now(UTC)
        if run.status is RunStatus.LOST:
            run.status, run.error, run.finished_at, run.duration_seconds = RunStatus.RUNNING, None, None, None
        return True


def _end(run: Run, status: RunStatus, error: str, end: datetime) -> None:
    """Write a run's end that its own process could not: status, error line, end time and duration."""
    run.status, run.error, run.finished_at = status, error, end
    run.duration_seconds = max((end - (run.started_at or run.created_at)).total_seconds(), 0.0)


def reap_lost_runs(*, url: str | None = None) -> list[RunRecord]:
    """Mark every run recorded as running whose process is gone as ``lost``, with the reason.

    Its ``finished_at`` becomes its last sign of life. Which runs are lost is judged as
    ``RunRecord.status`` is (see ``decisions.store.liveness``).

    Args:
        url: Database URL; None means ``database_url()``.

    Returns:
        The runs marked, oldest first.
    """
    now = datetime.now(UTC)
    marked = []
    with session_scope(url) as session:
        for run in session.scalars(select(Run).where(Run.status == RunStatus.RUNNING).order_by(Run.id)):
            status, reason = judged_status(run, now)
            if status is not RunStatus.LOST:
                continue
            _end(run, RunStatus.LOST, reason, last_seen(run) or now)
            marked.append(run_record(run, now))
    return marked


def interrupt_running(
    *,
    url: str | None = None,
    sweep_id: str | None = None,
    pid: int | None = None,
    host: str | None = None,
    since: datetime | None = None,
    error: str = "interrupted: stopped with its sweep",
) -> list[int]:
    """Mark the runs a stopped sweep or job left running as ``interrupted``; list its interrupted runs.

    Call it once the processes that recorded them are gone. Runs are chosen by every filter given.

    Args:
        url: Database URL; None means ``database_url()``.
        sweep_id: Runs of this sweep.
        pid: Runs recorded by this process id ...
        host: ... on this host.
        since: Runs created at or after this time (aware UTC).
        error: The error line written on the runs marked.

    Returns:
        The ids of the chosen runs that are now interrupted (marked here or by their own process).
    """
    query = select(Run).order_by(Run.id)
    for column, value in ((Run.sweep_id, sweep_id), (Run.pid, pid), (Run.host, host)):
        if value is not None:
            query = query.where(column == value)
    if since is not None:
        query = query.where(Run.created_at >= since)
    now = datetime.now(UTC)
    with session_scope(url) as session:
        runs = list(session.scalars(query.where(Run.status.in_([*LIVE, RunStatus.INTERRUPTED]))))
        for run in runs:
            if run.status in LIVE:
                _end(run, RunStatus.INTERRUPTED, error, now)
        return [run.id for run in runs]


def fail_dead_runs(sweep_id: str, error: str, *, url: str | None = None) -> list[int]:
    """Mark the runs of an ended sweep still left ``running`` (or ``lost``) as ``failed``.

    Call it once every task of the sweep has returned: no process records into its runs any
    more, so a run still running was recorded by an attempt whose worker died before it could
    finish the run. Its end is its last heartbeat.

    Args:
        sweep_id: The sweep.
        error: The error line written on the runs marked; ``{pid}`` and ``{host}`` in it become the run's.
        url: Database URL; None means ``database_url()``.

    Returns:
        The ids of the runs marked, oldest first.
    """
    now = datetime.now(UTC)
    with session_scope(url) as session:
        runs = list(session.scalars(
            select(Run).where(Run.sweep_id == sweep_id, Run.status.in_(LIVE)).order_by(Run.id)
        ))  # fmt: skip
        for run in runs:
            _end(run, RunStatus.FAILED, error.format(pid=run.pid, host=run.host), last_seen(run) or now)
        return [run.id for run in runs]


def check_resumable(record: RunRecord) -> None:
    """Refuse to resume a run that succeeded or whose process is alive (its status as judged now).

    Raises:
        RunNotResumableError: it succeeded.
        RunAliveError: it is running and its process alive.
    """
    if record.status is RunStatus.SUCCEEDED:
        raise RunNotResumableError("run", f"run {record.id} succeeded: there is nothing to resume")
    if record.status is RunStatus.RUNNING:
        raise RunAliveError(
            "run",
            f"run {record.id} is still running (process {record.pid} on {record.host}); it cannot be resumed while alive",
        )


def reopen_run(run_id: int, *, url: str | None = None) -> RunRecord:
    """Make a stopped run ``running`` again, recorded by this process: the start of a resume.

    In one transaction (so two resumes of one run cannot both start) the run is checked and
    then gets this host and process id, a fresh heartbeat, ``started_at`` now (its
    ``created_at`` stays) and no error, finish time or duration; its artifact rows are removed
    (the resumed job writes and records its files again), its metrics are kept.

    Args:
        run_id: The run: lost, interrupted or failed.
        url: Database URL; None means ``database_url()``.

    Returns:
        The run as it was before it was reopened (its last heartbeat says when its process stopped).

    Raises:
        RunNotFoundError: if the run does not exist.
        RunNotResumableError: if it succeeded.
        RunAliveError: if it is running and its process alive.
    """
    now = datetime.now(UTC)
    with session_scope(url) as session:
        run = run_row(session, run_id)
        before = run_record(run, now)
        check_resumable(before)
        session.execute(delete(Artifact).where(Artifact.run_id == run_id))
        run.status, run.error, run.finished_at, run.duration_seconds = RunStatus.RUNNING, None, None, None
        run.host, run.pid, run.started_at, run.heartbeat_at = this_host(), os.getpid(), now, now
        return before


@dataclass(frozen=True)
class DeletedRun:
    """What ``delete_run`` removed."""

    run: RunRecord
    """The run as it was."""
    folders: tuple[Path, ...]
    """Artifact folders removed (those under the store's artifacts root)."""


def artifact_folders(paths: Iterable[str], root: Path) -> tuple[Path, ...]:
    """The folders directly below ``root`` that hold any of ``paths`` (files elsewhere are left out).

    Args:
        paths: Artifact paths of one run.
        root: The store's artifacts root.

    Returns:
        The distinct folders, sorted.
    """
    base = root.expanduser().resolve()
    folders = set()
    for path in paths:
        resolved = Path(path).expanduser().resolve()
        if resolved.is_relative_to(base) and len(resolved.relative_to(base).parts) > 1:
            folders.add(base / resolved.relative_to(base).parts[0])
    return tuple(sorted(folders))


def run_folders(run_id: int, paths: Iterable[str], root: Path) -> tuple[Path, ...]:
    """The folders ``delete_run`` removes: ``artifact_folders`` of the run's artifact paths, and its own
    folder ``root/run-<id>`` when it exists (a stopped run's checkpoints are there before any artifact is).

    Args:
        run_id: The run.
        paths: Its artifact paths.
        root: The store's artifacts root.

    Returns:
        The distinct folders, sorted.
    """
    own = root.expanduser().resolve() / f"run-{run_id}"
    return tuple(sorted({*artifact_folders(paths, root), *([own] if own.is_dir() else [])}))


def delete_run(run_id: int, *, url: str | None = None) -> DeletedRun:
    """Delete a run that is not alive: its row, metrics and artifact rows, and its artifact folder.

    Files are removed only in the run's folders under the store's artifacts root
    (``artifacts_root(url)``, see ``run_folders``), and in its folder under a remote
    ``DECISIONS_ARTIFACTS_URL`` (``artifacts.run_url``); artifacts elsewhere (a job's
    ``output_dir``) stay on disk.

    Args:
        run_id: The run.
        url: Database URL; None means ``database_url()``.

    Returns:
        The deleted run and the folders removed.

    Raises:
        RunNotFoundError: if the run does not exist.
        RunAliveError: if the run is running and its process alive.
    """
    with session_scope(url) as session:
        run = run_row(session, run_id)
        record = run_record(run)
        if record.status is RunStatus.RUNNING:
            raise RunAliveError(
                "run", f"run {run_id} is still running (process {run.pid} on {run.host}); stop it first"
            )
        session.execute(delete(Metric).where(Metric.run_id == run_id))
        session.execute(delete(Artifact).where(Artifact.run_id == run_id))
        session.execute(delete(Run).where(Run.id == run_id))
    folders = run_folders(run_id, (artifact.path for artifact in record.artifacts), artifacts_root(url))
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    remote = artifacts.configured_url()
    if remote is not None and not artifacts.is_local(remote):
        artifacts.delete_folder(artifacts.run_url(run_id, url))
    return DeletedRun(record, folders)
