"""``recorded_run``: a context manager that records one run from start to finish."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from decisions.errors import error_line
from decisions.store.models import RunStatus
from decisions.store.repository import add_artifact, finish_run, log_metrics, start_run


@dataclass(frozen=True)
class RunRecorder:
    """Handle on a run being recorded: log metrics and artifacts against it."""

    run_id: int
    url: str | None = None

    def log_metrics(self, metrics: Mapping[str, float], *, step: int | None = None) -> None:
        """Record metrics of this run (see ``repository.log_metrics``).

        Args:
            metrics: Metric name to value; nan/inf are stored as NULL.
            step: Iteration or epoch of the values; None for run-level values.
        """
        log_metrics(self.run_id, metrics, step=step, url=self.url)

    def add_artifact(self, name: str, path: str | os.PathLike[str], media_type: str | None = None) -> None:
        """Record a file of this run (see ``repository.add_artifact``).

        Args:
            name: Label of the artifact.
            path: Where the file is.
            media_type: MIME type; None guesses it from the file name.
        """
        add_artifact(self.run_id, name, path, media_type, url=self.url)


@contextmanager
def recorded_run(
    kind: str,
    name: str,
    config: Mapping[str, Any],
    *,
    url: str | None = None,
    sweep_id: str | None = None,
) -> Iterator[RunRecorder]:
    """Record a run around a block of code.

    The run is started on entry, marked ``succeeded`` when the block ends
    normally, and marked ``failed`` with ``error_line(exc)`` when it raises
    (KeyboardInterrupt included); the exception is then re-raised.

    Args:
        kind: What is run, e.g. ``"gas_storage"``.
        name: Human-readable label of this run.
        config: The job configuration (JSON-serialisable, no nan/inf).
        url: Database URL; None means ``database_url()``.
        sweep_id: Label shared by the runs of one sweep, if any.

    Yields:
        A ``RunRecorder`` for the new run.
    """
    run_id = start_run(kind, name, config, url=url, sweep_id=sweep_id)
    try:
        yield RunRecorder(run_id=run_id, url=url)
    except BaseException as exc:
        finish_run(run_id, status=RunStatus.FAILED, error=error_line(exc), url=url)
        raise
    finish_run(run_id, status=RunStatus.SUCCEEDED, url=url)
