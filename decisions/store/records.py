"""Plain, immutable views of stored runs, detached from any database session.

A run the store holds as ``running`` whose process is gone (see ``decisions.store.liveness``)
reads back as ``lost``, with the reason as its ``error``, before ``runs reap`` writes that down.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from decisions.store.liveness import lost_reason
from decisions.store.models import Artifact, Metric, Run, RunStatus


@dataclass(frozen=True)
class MetricRecord:
    """One logged metric value."""

    name: str
    value: float | None
    """The value; None when a nan or infinite value was logged."""
    step: int | None
    """Iteration or epoch the value belongs to; None for a run-level value."""


@dataclass(frozen=True)
class ArtifactRecord:
    """One file recorded for a run."""

    name: str
    path: str
    """Where the recording process wrote the file (a local path)."""
    media_type: str | None
    url: str | None = None
    """Where the file lives, as an fsspec URL (see ``decisions.store.artifacts``); None for rows
    recorded before the store kept it (read those by ``path``)."""


@dataclass(frozen=True)
class RunRecord:
    """A run with its metrics (in logging order) and artifacts."""

    id: int
    kind: str
    name: str
    status: RunStatus
    """Its state; ``lost`` also for a run still recorded as running whose process is gone."""
    config: dict[str, Any]
    package_version: str
    git_commit: str | None
    host: str
    created_at: datetime
    """When the run was recorded (aware UTC, like the other timestamps)."""
    started_at: datetime | None
    finished_at: datetime | None
    duration_seconds: float | None
    error: str | None
    """One line: ``"ExceptionType: message"`` of a failed or interrupted run, why a run is lost; else None."""
    sweep_id: str | None
    metrics: tuple[MetricRecord, ...]
    artifacts: tuple[ArtifactRecord, ...]
    pid: int | None = None
    """Process id of the recording process on ``host`` (None for runs recorded before it was kept)."""
    heartbeat_at: datetime | None = None
    """Last heartbeat of the recording process."""

    def latest_metrics(self) -> dict[str, float | None]:
        """Return the value logged last for each metric name.

        Returns:
            A dict from metric name to its most recently logged value.
        """
        return {metric.name: metric.value for metric in self.metrics}

    def metric_history(self, name: str) -> list[MetricRecord]:
        """Return every value logged under one name, in logging order.

        Args:
            name: The metric name.

        Returns:
            The matching metric records (empty if none were logged).
        """
        return [metric for metric in self.metrics if metric.name == name]


def _metric_record(metric: Metric) -> MetricRecord:
    return MetricRecord(name=metric.name, value=metric.value, step=metric.step)


def _artifact_record(artifact: Artifact) -> ArtifactRecord:
    return ArtifactRecord(name=artifact.name, path=artifact.path, media_type=artifact.media_type, url=artifact.url)


def last_seen(run: Run) -> datetime | None:
    """A run's last sign of life: its heartbeat, else its start, else its creation."""
    return run.heartbeat_at or run.started_at or run.created_at


def judged_status(run: Run, now: datetime | None = None) -> tuple[RunStatus, str | None]:
    """A run's status and error, with a stored ``running`` run whose process is gone judged ``lost``.

    Args:
        run: The ORM run.
        now: The current time (aware UTC); None means now.

    Returns:
        ``(status, error)``: the stored ones, or ``(LOST, reason)``.
    """
    status = RunStatus(run.status)
    if status is RunStatus.RUNNING:
        reason = lost_reason(host=run.host, pid=run.pid, last_seen=last_seen(run), now=now or datetime.now(UTC))
        if reason is not None:
            return RunStatus.LOST, reason
    return status, run.error


def run_record(run: Run, now: datetime | None = None) -> RunRecord:
    """Copy a loaded ``Run`` (with its metrics and artifacts) into a ``RunRecord``.

    Args:
        run: An ORM run whose relationships can still be loaded.
        now: The time its liveness is judged at (aware UTC); None means now.

    Returns:
        The detached record (``lost`` when it is recorded as running but its process is gone).
    """
    status, error = judged_status(run, now)
    return RunRecord(
        id=run.id,
        kind=run.kind,
        name=run.name,
        status=status,
        config=dict(run.config or {}),
        package_version=run.package_version,
        git_commit=run.git_commit,
        host=run.host,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        duration_seconds=run.duration_seconds,
        error=error,
        sweep_id=run.sweep_id,
        metrics=tuple(_metric_record(m) for m in run.metrics),
        artifacts=tuple(_artifact_record(a) for a in run.artifacts),
        pid=run.pid,
        heartbeat_at=run.heartbeat_at,
    )
