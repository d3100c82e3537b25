"""What every domain job does around its work: record the run, its metrics and its files.

``Domain.execute`` calls ``execute_recorded`` with the domain's ``run_job``: the run is
recorded in the store, the report's metrics (plus ``job_seconds``) are logged and every
file its ``save`` writes (tables, ``report.json``, charts, trained policies) becomes an
artifact of the run, recorded with its URL (copied to ``DECISIONS_ARTIFACTS_URL`` first when
that is remote, see ``decisions.store.artifacts``).

While the job runs its trainers checkpoint into the run's folder (``run-<id>/checkpoints``,
see ``decisions.jobs.checkpoints``); with ``resume`` a stopped run is reopened and the job,
started again, continues from those checkpoints into the same run record. The checkpoints are
removed once the run has succeeded (its trained policies are among its artifacts).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from decisions.store.records import RunRecord


class Report(Protocol):
    """A job's result: headline metrics and a way to write its files."""

    metrics: dict[str, float]

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write the report's files into ``directory``; return artifact name -> path."""
        ...


def run_folder(run_id: int, output_dir: str | None = None, url: str | None = None) -> Path:
    """The folder of a run's files: ``<output_dir or the store's artifacts folder>/run-<id>``."""
    from decisions.store import artifacts_root

    return (Path(output_dir) if output_dir else artifacts_root(url)) / f"run-{run_id}"


def execute_recorded(
    kind: str,
    name: str,
    config: Mapping[str, Any],
    run_report: Callable[[], Report],
    *,
    url: str | None = None,
    sweep_id: str | None = None,
    output_dir: str | None = None,
    resume: int | None = None,
) -> int:
    """Run a job inside a recorded run: metrics (plus ``job_seconds``) and every file are stored.

    Args:
        kind: run kind (the domain's name).
        name: run label.
        config: JSON-ready configuration.
        run_report: does the work and returns the report; its trainers checkpoint into the
            run's folder (``checkpoints.checkpoint_file`` works while it runs).
        url: run store URL (default: ``DECISIONS_DB_URL`` or the user's SQLite file).
        sweep_id: sweep the run belongs to, if any.
        output_dir: folder for the files (default: the store's artifacts folder); each run
            writes into ``run-<id>`` below it.
        resume: the id of a stopped run to continue (reopened with ``store.lifecycle.reopen_run``;
            ``run_report`` must be its job): its trainers resume from their checkpoints and the
            resume is recorded in its metrics (``checkpoints.ResumePoint.metrics``).

    Returns:
        The run id. On an exception the run is recorded as failed and the exception re-raised.
    """
    from decisions.jobs.checkpoints import run_checkpoints
    from decisions.store import recorded_run
    from decisions.store.artifacts import publish

    with recorded_run(kind, name, config, url=url, sweep_id=sweep_id, resume=resume) as run:
        folder = run_folder(run.run_id, output_dir, url)
        if run.previous is not None:
            run.log_metrics(resume_metrics(folder, run.previous))
        start = time.perf_counter()
        with run_checkpoints(folder) as checkpoints:
            report = run_report()
        report.metrics["job_seconds"] = time.perf_counter() - start
        run.log_metrics(report.metrics)
        saved = report.save(folder)
        locations = publish(run.run_id, saved, folder, url)  # copied to DECISIONS_ARTIFACTS_URL if remote
        for artifact, path in saved.items():
            run.add_artifact(artifact, str(path), location=locations[artifact])
    shutil.rmtree(checkpoints, ignore_errors=True)  # succeeded: nothing left to resume
    return run.run_id


def resume_metrics(folder: Path, previous: RunRecord) -> dict[str, float]:
    """The metrics recording a resume of the run that was ``previous`` (before it was reopened) from ``folder``'s checkpoints."""
    from decisions.jobs.checkpoints import stopped_run_point

    before = previous.latest_metrics().get("resumed_times") or 0.0
    return stopped_run_point(folder, previous).metrics(int(before) + 1)
