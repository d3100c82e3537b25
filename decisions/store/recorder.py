"""``recorded_run``: a context manager that records one run from start to finish."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from decisions.errors import error_line
from decisions.store.heartbeat import Heartbeat
from decisions.store.lifecycle import reopen_run
from decisions.store.models import RunStatus
from decisions.store.records import RunRecord
from decisions.store.repository import add_artifact, finish_run, log_metrics, start_run


@dataclass(frozen=True)
class RunRecorder:
    """Handle on a run being recorded: log metrics and artifacts against it."""

    run_id: int
    url: str | None = None
    # For a resumed run, the run as it was before this process reopened it; else None.
    previous: RunRecord | None = None

    def log_metrics(self, metrics: Mapping[str, float], *, step: int | None = None) -> None:
        """Record metrics of this run (``repository.log_metrics``)."""
        log_metrics(self.run_id, metrics, step=step, url=self.url)

    def add_artifact(
        self, name: str, path: str | os.PathLike[str], media_type: str | None = None, *, location: str | None = None
    ) -> None:
        """Record a file of this run (``repository.add_artifact``)."""
        add_artifact(self.run_id, name, path, media_type, url=self.url, location=location)


@contextmanager
def recorded_run(kind: str, name: str, config: Mapping[str, Any], *, url: str | None = None,
                 sweep_id: str | None = None, resume: int | None = None) -> Iterator[RunRecorder]:
    """Record a run around a block of code, with a heartbeat while the block runs.

    The run is started (``repository.start_run``), or the stopped run ``resume`` is reopened. It
    ends ``succeeded``, ``failed`` on an ``Exception`` or ``interrupted`` on any other exception
    (``KeyboardInterrupt``, ``SystemExit``), which is re-raised.

    Raises:
        RunNotFoundError, RunNotResumableError, RunAliveError: ``resume`` names a run that does
            not exist, succeeded, or is alive (nothing is changed).
    """
    previous = None
    if resume is None:
        run_id = start_run(kind, name, config, url=url, sweep_id=sweep_id)
    else:
        run_id, previous = resume, reopen_run(resume, url=url)
    try:
        with Heartbeat(run_id, url=url):
            yield RunRecorder(run_id=run_id, url=url, previous=previous)
    except BaseException as exc:
        final = RunStatus.FAILED if isinstance(exc, Exception) else RunStatus.INTERRUPTED
        finish_run(run_id, status=final, error=error_line(exc), url=url)
        raise
    finish_run(run_id, status=RunStatus.SUCCEEDED, url=url)
