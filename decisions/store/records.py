"""Plain, immutable views of stored runs, detached from any database session; a ``running`` run
whose process is gone reads back as ``lost``.
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
    # The value; None when a nan or infinite value was logged.
    value: float | None
    # Iteration or epoch the value belongs to; None for a run-level value.
    step: int | None


@dataclass(frozen=True)
class ArtifactRecord:
    """One file recorded for a run."""

    name: str
    # Where the recording process wrote the file (a local path).
    path: str
    media_type: str | None
    # Where the file lives, as an fsspec URL; None for older rows (read those by ``path``).
    url: str | None = None


@dataclass(frozen=True)
class RunRecord:
    """A run with its metrics (in logging order) and artifacts."""

    id: int
    kind: str
    name: str
    # Its state; ``lost`` also for a run still recorded as running whose process is gone.
    status: RunStatus
    config: dict[str, Any]
    package_version: str
    git_commit: str | None
    host: str
    # When the run was recorded (aware UTC, like the other timestamps).
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    duration_seconds: float | None
    # One line: ``"ExceptionType: message"`` of a failed or interrupted run, why a run is lost; else None.
    error: str | None
    sweep_id: str | None
    metrics: tuple[MetricRecord, ...]
    artifacts: tuple[ArtifactRecord, ...]
    # Process id of the recording process on ``host`` (None for runs recorded before it was kept).
    pid: int | None = None
    # Last heartbeat of the recording process.
    heartbeat_at: datetime | None = None
    # Who started it (the app's user or the CLI's OS user; None for runs recorded before it was kept).
    started_by: str | None = None

    def latest_metrics(self) -> dict[str, float | None]:
        """Metric name -> the value logged last under it."""
        return {metric.name: metric.value for metric in self.metrics}

    def metric_history(self, name: str) -> list[MetricRecord]:
        """Every value logged under ``name``, in logging order."""
        return [metric for metric in self.metrics if metric.name == name]


def _metric_record(metric: Metric) -> MetricRecord:
    return MetricRecord(name=metric.name, value=metric.value, step=metric.step)


def _artifact_record(artifact: Artifact) -> ArtifactRecord:
    return ArtifactRecord(name=artifact.name, path=artifact.path, media_type=artifact.media_type, url=artifact.url)


def last_seen(run: Run) -> datetime | None:
    """A run's last sign of life: its heartbeat, else its start, else its creation."""
    return run.heartbeat_at or run.started_at or run.created_at


def judged_status(run: Run, now: datetime | None = None) -> tuple[RunStatus, str | None]:
    """``(status, error)`` as stored, or ``(LOST, reason)`` for a running run whose process is gone
    at ``now`` (aware UTC; None: now)."""
    status = RunStatus(run.status)
    if status is RunStatus.RUNNING:
        reason = lost_reason(host=run.host, pid=run.pid, last_seen=last_seen(run), now=now or datetime.now(UTC))
        if reason is not None:
            return RunStatus.LOST, reason
    return status, run.error


def run_record(run: Run, now: datetime | None = None) -> RunRecord:
    """A loaded ``Run`` with its metrics and artifacts as a detached ``RunRecord``, its status
    judged at ``now`` (``judged_status``)."""
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
        started_by=run.started_by,
    )
