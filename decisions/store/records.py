"""Plain, immutable views of stored runs, detached from any database session."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
    media_type: str | None


@dataclass(frozen=True)
class RunRecord:
    """A run with its metrics (in logging order) and artifacts."""

    id: int
    kind: str
    name: str
    status: RunStatus
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
    """One line ``"ExceptionType: message"`` for a failed run, else None."""
    sweep_id: str | None
    metrics: tuple[MetricRecord, ...]
    artifacts: tuple[ArtifactRecord, ...]

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
    return ArtifactRecord(name=artifact.name, path=artifact.path, media_type=artifact.media_type)


def run_record(run: Run) -> RunRecord:
    """Copy a loaded ``Run`` (with its metrics and artifacts) into a ``RunRecord``.

    Args:
        run: An ORM run whose relationships can still be loaded.

    Returns:
        The detached record.
    """
    return RunRecord(
        id=run.id,
        kind=run.kind,
        name=run.name,
        status=RunStatus(run.status),
        config=dict(run.config or {}),
        package_version=run.package_version,
        git_commit=run.git_commit,
        host=run.host,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        duration_seconds=run.duration_seconds,
        error=run.error,
        sweep_id=run.sweep_id,
        metrics=tuple(_metric_record(m) for m in run.metrics),
        artifacts=tuple(_artifact_record(a) for a in run.artifacts),
    )
