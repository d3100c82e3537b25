"""Functions that record runs, metrics and artifacts, and read them back.

Every function opens its own short transaction, so several processes can
record into one SQLite file at once. Reads return ``RunRecord`` values that
are detached from the database.

Metric values are converted with ``float``; a value that is nan or infinite
is stored as NULL and reads back as ``None`` (a diverged loss stays visible
without breaking the run), while a value that is not a number at all raises
``ValueError``. Configurations must be JSON-serialisable without nan or
infinity (strict JSON, portable to every backend).
"""

from __future__ import annotations

import json
import math
import mimetypes
import operator
import os
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

import decisions
from decisions.store.artifacts import file_url
from decisions.store.db import session_scope
from decisions.store.liveness import this_host
from decisions.store.models import Artifact, Metric, Run, RunStatus
from decisions.store.records import RunRecord, run_record


class RunNotFoundError(LookupError):
    """Raised when a run id does not exist in the store."""


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """Return the git HEAD commit of the source tree holding this package.

    Returns:
        The commit hash, or None when the package is not in a git checkout or
        git is unavailable.
    """
    source_dir = Path(decisions.__file__).resolve().parent
    try:
        completed = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=source_dir,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = completed.stdout.strip()
    if completed.returncode != 0 or not commit or any(c not in "0123456789abcdef" for c in commit):
        return None
    return commit


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _plain_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``config`` as plain JSON data, or raise ValueError naming the problem."""
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    try:
        return json.loads(json.dumps(dict(config), allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"config is not JSON-serialisable: {exc}") from exc


def _metric_value(name: str, value: Any) -> float | None:
    """Convert a metric value to float, mapping nan/inf to None."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"metric names must be non-empty strings, got {name!r}")
    try:
        number = float(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"metric {name!r}: value {value!r} is not a number") from exc
    return number if math.isfinite(number) else None


def run_row(session: Session, run_id: int) -> Run:
    """The ORM run ``run_id`` in ``session``; raises ``RunNotFoundError`` when there is none."""
    run = session.get(Run, run_id)
    if run is None:
        raise RunNotFoundError(f"run {run_id} does not exist")
    return run


def start_run(
    kind: str,
    name: str,
    config: Mapping[str, Any],
    *,
    url: str | None = None,
    sweep_id: str | None = None,
) -> int:
    """Record a new run in the ``running`` state, with this host, this process id and a first heartbeat.

    Args:
        kind: What is run, e.g. ``"gas_storage"``.
        name: Human-readable label of this run.
        config: The job configuration (JSON-serialisable, no nan/inf).
        url: Database URL; None means ``database_url()``.
        sweep_id: Label shared by the runs of one sweep, if any.

    Returns:
        The id of the new run.

    Raises:
        ValueError: if ``kind`` is empty or ``config`` is not strict JSON.
    """
    if not kind:
        raise ValueError("kind must be a non-empty string")
    plain = _plain_config(config)
    now = _utc_now()
    run = Run(
        kind=kind,
        name=name,
        status=RunStatus.RUNNING,
        config=plain,
        package_version=decisions.__version__,
        git_commit=git_commit(),
        host=this_host(),
        pid=os.getpid(),
        created_at=now,
        started_at=now,
        heartbeat_at=now,
        sweep_id=sweep_id,
    )
    with session_scope(url) as session:
        session.add(run)
        session.flush()
        return run.id


def log_metrics(
    run_id: int,
    metrics: Mapping[str, float],
    *,
    step: int | None = None,
    url: str | None = None,
) -> None:
    """Record scalar metrics of a run, all at once.

    Args:
        run_id: The run.
        metrics: Metric name to value; anything ``float()`` accepts (numpy and
            JAX scalars included). nan and inf are stored as NULL.
        step: Iteration or epoch of the values; None for run-level values.
        url: Database URL; None means ``database_url()``.

    Raises:
        ValueError: if a name is empty or a value is not a number (nothing is written).
        RunNotFoundError: if the run does not exist.
    """
    values = {name: _metric_value(name, value) for name, value in metrics.items()}
    step_value = None if step is None else operator.index(step)
    if not values:
        return
    with session_scope(url) as session:
        run = run_row(session, run_id)
        session.add_all(
            Metric(run_id=run.id, name=name, value=value, step=step_value) for name, value in values.items()
        )


def add_artifact(
    run_id: int,
    name: str,
    path: str | os.PathLike[str],
    media_type: str | None = None,
    *,
    url: str | None = None,
    location: str | None = None,
) -> None:
    """Record a file produced by a run (its path and URL, not the bytes).

    Args:
        run_id: The run.
        name: Label of the artifact, e.g. ``"policy_params"``.
        path: Where the file is (as the recording process wrote it).
        media_type: MIME type; None guesses it from the file name (and stays
            None when it cannot be guessed).
        url: Database URL; None means ``database_url()``.
        location: Where the file lives, as an fsspec URL (``decisions.store.artifacts``);
            None means the ``file://`` URL of ``path``.

    Raises:
        RunNotFoundError: if the run does not exist.
    """
    path_text = os.fspath(path)
    if media_type is None:
        media_type = mimetypes.guess_type(path_text)[0]
    artifact_url = location if location is not None else file_url(path_text)
    with session_scope(url) as session:
        run = run_row(session, run_id)
        session.add(Artifact(run_id=run.id, name=name, path=path_text, media_type=media_type, url=artifact_url))


def finish_run(
    run_id: int,
    *,
    status: RunStatus | str,
    error: str | None = None,
    url: str | None = None,
) -> None:
    """Mark a running run as succeeded, failed or interrupted and record its timings.

    A run marked ``lost`` (``runs reap``) whose process turns out alive is finished too.

    Args:
        run_id: The run.
        status: ``succeeded``, ``failed`` or ``interrupted``.
        error: Error text of a failed or interrupted run.
        url: Database URL; None means ``database_url()``.

    Raises:
        ValueError: if ``status`` is not a final status or the run has already finished.
        RunNotFoundError: if the run does not exist.
    """
    final = RunStatus(status)
    if final in (RunStatus.RUNNING, RunStatus.LOST):
        raise ValueError(f"finish_run needs a final status (succeeded, failed or interrupted), got {final.value!r}")
    now = _utc_now()
    with session_scope(url) as session:
        run = run_row(session, run_id)
        if run.status not in (RunStatus.RUNNING, RunStatus.LOST):
            raise ValueError(f"run {run_id} has already finished ({run.status.value})")
        run.status = final
        run.error = error
        run.finished_at = now
        started = run.started_at or run.created_at
        run.duration_seconds = max((now - started).total_seconds(), 0.0)


def get_run(run_id: int, *, url: str | None = None) -> RunRecord:
    """Read one run with its metrics and artifacts.

    Args:
        run_id: The run.
        url: Database URL; None means ``database_url()``.

    Returns:
        The detached run record.

    Raises:
        RunNotFoundError: if the run does not exist.
    """
    with session_scope(url, read_only=True) as session:
        return run_record(run_row(session, run_id))


def list_runs(
    *,
    limit: int | None = 50,
    kind: str | None = None,
    status: RunStatus | str | None = None,
    sweep_id: str | None = None,
    url: str | None = None,
) -> list[RunRecord]:
    """List runs, newest first.

    Args:
        limit: At most this many runs; None for all.
        kind: Only runs of this kind.
        status: Only runs in this status; ``running`` and ``lost`` go by the judged status
            (a run recorded as running whose process is gone is lost, see ``RunRecord.status``).
        sweep_id: Only runs of this sweep.
        url: Database URL; None means ``database_url()``.

    Returns:
        The matching runs with their metrics and artifacts, newest first.

    Raises:
        ValueError: if ``limit`` is below 1 or ``status`` is unknown.
    """
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be at least 1 (or None for all), got {limit}")
    wanted = None if status is None else RunStatus(status)
    judged = wanted in (RunStatus.RUNNING, RunStatus.LOST)
    query = select(Run).options(selectinload(Run.metrics), selectinload(Run.artifacts))
    if kind is not None:
        query = query.where(Run.kind == kind)
    if wanted is RunStatus.LOST:
        query = query.where(Run.status.in_([RunStatus.RUNNING, RunStatus.LOST]))
    elif wanted is not None:
        query = query.where(Run.status == wanted)
    if sweep_id is not None:
        query = query.where(Run.sweep_id == sweep_id)
    query = query.order_by(Run.created_at.desc(), Run.id.desc())
    if limit is not None and not judged:
        query = query.limit(limit)
    now = _utc_now()
    with session_scope(url, read_only=True) as session:
        records = [run_record(run, now) for run in session.scalars(query)]
    if judged:
        records = [record for record in records if record.status is wanted][:limit]
    return records
