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
    previous: RunRecord | None = None
    """For a resumed run, the run as it was before this process reopened it; else None."""

    def log_metrics(self, metrics: Mapping[str, float], *, step: int | None = None) -> None:
        """Record metrics of this run (see ``repository.log_metrics``).

        Args:
            metrics: Metric name to value; nan/inf are stored as NULL.
            step: Iteration or epoch of the values; None for run-level values.
        """
        log_metrics(self.run_id, metrics, step=step, url=self.url)

    def add_artifact(
        self, name: str, path: str | os.PathLike[str], media_type: str | None = None, *, location: str | None = None
    ) -> None:
        """Record a file of this run (see ``repository.add_artifact``).

        Args:
            name: Label of the artifact.
            path: Where the file is.
            media_type: MIME type; None guesses it from the file name.
            location: Where the file lives, as an fsspec URL; None means the ``file://`` URL of ``path``.
        """
        add_artifact(self.run_id, name, path, media_type, url=self.url, location=location)


@contextmanager
def recorded_run(
    kind: str,
    name: str,
    config: Mapping[str, Any],
    *,
    url: str | None = None,
    sweep_id: str | None = None,
    resume: int | None = None,
) -> Iterator[RunRecorder]:
    """Record a run around a block of code, with a heartbeat while the block runs.

    The run is started on entry (arguments as for ``repository.start_run``), or with ``resume``
    the stopped run of that id is reopened instead (``lifecycle.reopen_run``: same id, running
    again in this process; ``kind``, ``name``, ``config`` and ``sweep_id`` are then its own). A
    ``Heartbeat`` thread renews its ``heartbeat_at`` until the block ends. It is then marked
    ``succeeded`` when the block ends normally, ``failed`` with ``error_line(exc)`` when it
    raises an ``Exception``, and ``interrupted`` when it is stopped (``KeyboardInterrupt``
    from Ctrl-C or a SIGTERM handler, ``SystemExit``, a Streamlit stop); the exception is
    then re-raised.

    Yields:
        A ``RunRecorder`` for the new (or resumed) run.

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
