"""What a run's own process cannot record: heartbeats (``beat``), lost runs, runs left running
by a stopped or ended sweep, resuming (``reopen_run``) and deletion. ``url`` None means
``database_url()``.
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
from decisions.store import artifacts, deployments, forgettings
from decisions.store.artifacts import artifacts_root
from decisions.store.db import session_scope
from decisions.store.deployments import DeploymentRecord
from decisions.store.forgettings import ForgettingRecord
from decisions.store.liveness import this_host
from decisions.store.models import Artifact, Deployment, Forgetting, Metric, Run, RunStatus
from decisions.store.records import RunRecord, judged_status, last_seen, run_record
from decisions.store.repository import run_row

LIVE = (RunStatus.RUNNING, RunStatus.LOST)  # stored states of a run whose process may still write


class RunAliveError(InputError):
    """Raised when asked to delete (or resume) a run whose process is still alive."""


class RunDeployedError(InputError):
    """Raised when asked to delete a run with deployment records without deleting them too."""


class RunForgettingsError(InputError):
    """Raised when asked to delete a run with forgetting records without deleting them too."""


class RunNotResumableError(InputError):
    """Raised when asked to resume a run that cannot be resumed (it succeeded, or its domain cannot)."""


def beat(run_id: int, *, url: str | None = None) -> bool:
    """Renew a live run's heartbeat (a run marked lost becomes running again); False once it has finished."""
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
    """Mark ``lost`` every running run whose process is gone (judged as ``RunRecord.status``), ending
    at its last sign of life; the runs marked, oldest first."""
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


def interrupt_running(*, url: str | None = None, sweep_id: str | None = None, pid: int | None = None,
                      host: str | None = None, since: datetime | None = None,
                      error: str = "interrupted: stopped with its sweep") -> list[int]:
    """Mark ``interrupted`` the live runs chosen by every filter given, once their processes are gone.

    Returns:
        The ids of the chosen runs now interrupted (here or by their own process).
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
    """Mark ``failed`` the live runs of a sweep whose tasks have all returned; ids marked, oldest first.

    Each ends at its last heartbeat; ``{pid}`` and ``{host}`` in ``error`` become the run's.
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
    """Make a stopped run ``running`` again in this process, in one transaction; the run as it was.

    It gets this host and pid, a fresh heartbeat and start, no end or error; its artifact rows
    are removed, its metrics kept.

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
    folders: tuple[Path, ...]  # artifact folders removed, under the store's artifacts root
    deployments: tuple[DeploymentRecord, ...] = ()  # deployment records removed with it
    forgettings: tuple[ForgettingRecord, ...] = ()  # forgetting records removed with it


def artifact_folders(paths: Iterable[str], root: Path) -> tuple[Path, ...]:
    """The distinct folders directly below ``root`` holding any of ``paths``, sorted."""
    base = root.expanduser().resolve()
    folders = set()
    for path in paths:
        resolved = Path(path).expanduser().resolve()
        if resolved.is_relative_to(base) and len(resolved.relative_to(base).parts) > 1:
            folders.add(base / resolved.relative_to(base).parts[0])
    return tuple(sorted(folders))


def run_folders(run_id: int, paths: Iterable[str], root: Path) -> tuple[Path, ...]:
    """The folders ``delete_run`` removes, sorted: ``artifact_folders`` and ``root/run-<id>`` if it exists."""
    own = root.expanduser().resolve() / f"run-{run_id}"
    return tuple(sorted({*artifact_folders(paths, root), *([own] if own.is_dir() else [])}))


def deployment_records(run_id: int, *, with_deployments: bool, url: str | None = None) -> list[DeploymentRecord]:
    """The deployment records that deleting run ``run_id`` removes, newest first.

    Raises:
        RunDeployedError: the run has some and ``with_deployments`` is False (the message says how many,
            whether it is deployed now, and which flag deletes them).
    """
    held = deployments.of_run(run_id, url=url)
    if held and not with_deployments:
        raise RunDeployedError("run", f"run {run_id} has {deployments.held_by(run_id, held, url=url)}: "
                                      "--with-deployments deletes them with it")
    return held


def forgetting_records(run_id: int, *, with_forgettings: bool, url: str | None = None) -> list[ForgettingRecord]:
    """The forgetting records that deleting run ``run_id`` removes, oldest first.

    Raises:
        RunForgettingsError: the run has some and ``with_forgettings`` is False (the message says what
            would be lost and which flag deletes them).
    """
    held = forgettings.forgettings_of(run_id, url=url)
    if held and not with_forgettings:
        raise RunForgettingsError("run", f"run {run_id} has {forgettings.held_by(held)}: "
                                         "--with-forgettings deletes them with it")
    return held


def delete_run(run_id: int, *, url: str | None = None, with_deployments: bool = False,
               with_forgettings: bool = False) -> DeletedRun:
    """Delete a run that is not alive: its rows, and its folders under the artifacts root and the
    remote artifacts URL (files elsewhere stay). Its deployment records go too only ``with_deployments``,
    its forgetting records only ``with_forgettings``.

    Raises:
        RunNotFoundError: if the run does not exist.
        RunAliveError: if the run is running and its process alive.
        RunDeployedError: if the run has deployment records and ``with_deployments`` is False.
        RunForgettingsError: if the run has forgetting records and ``with_forgettings`` is False.
    """
    held = tuple(deployment_records(run_id, with_deployments=with_deployments, url=url))
    forgot = tuple(forgetting_records(run_id, with_forgettings=with_forgettings, url=url))
    with session_scope(url) as session:
        run = run_row(session, run_id)
        record = run_record(run)
        if record.status is RunStatus.RUNNING:
            raise RunAliveError(
                "run", f"run {run_id} is still running (process {run.pid} on {run.host}); stop it first"
            )
        if not with_deployments and session.scalars(select(Deployment.id).where(Deployment.run_id == run_id)).first():
            raise RunDeployedError("run", f"run {run_id} was deployed meanwhile: --with-deployments deletes it anyway")
        if not with_forgettings and session.scalars(select(Forgetting.id).where(Forgetting.run_id == run_id)).first():
            raise RunForgettingsError("run", f"run {run_id} forgot a patient meanwhile: --with-forgettings deletes it anyway")
        session.execute(delete(Deployment).where(Deployment.run_id == run_id))
        session.execute(delete(Forgetting).where(Forgetting.run_id == run_id))
        session.execute(delete(Metric).where(Metric.run_id == run_id))
        session.execute(delete(Artifact).where(Artifact.run_id == run_id))
        session.execute(delete(Run).where(Run.id == run_id))
    folders = run_folders(run_id, (artifact.path for artifact in record.artifacts), artifacts_root(url))
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    remote = artifacts.configured_url()
    if remote is not None and not artifacts.is_local(remote):
        artifacts.delete_folder(artifacts.run_url(run_id, url))
    return DeletedRun(record, folders, held, forgot)
