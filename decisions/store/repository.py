"""Functions that record runs, metrics and artifacts, and read them back as detached
``RunRecord`` values, each in its own short transaction; ``url`` None means ``database_url()``.

Metric values go through ``float``: nan and inf are stored as NULL (read back as None), a
non-number raises ``ValueError``. Configurations must be strict JSON (no nan or infinity).
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
from decisions.store.who import acting_user


class RunNotFoundError(LookupError):
    """Raised when a run id does not exist in the store."""


@lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The git HEAD commit of the source tree holding this package; None outside a checkout or without git."""
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
    """Record a new ``running`` run with this host, pid, who started it (``who.acting_user``) and a
    first heartbeat; its id.

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
        started_by=acting_user(),
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
    """Record scalar metrics of a run at ``step`` (None for run-level values), all at once.

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

    ``media_type`` None is guessed from the name; ``location`` (an fsspec URL) None is the
    ``file://`` URL of ``path``.

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
    """Mark a running (or lost) run as succeeded, failed or interrupted and record its timings.

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
    """One run with its metrics and artifacts, detached.

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
    """At most ``limit`` (None: all) runs matching every filter given, newest first.

    ``running`` and ``lost`` filter by the judged status (``RunRecord.status``).

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
