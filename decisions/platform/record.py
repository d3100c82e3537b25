"""What every domain job does around its work: record the run, its metrics and its files.

The job's trainers checkpoint into the run's folder while it runs; the checkpoints are removed
once the run has succeeded, and a stopped run resumes from them into the same record.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from decisions.core.progress import Progress, silent
from decisions.kit.checkpoints import SUBFOLDER, ResumePoint, resume_point

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from decisions.kit.base import JobBase
    from decisions.kit.domain import Domain
    from decisions.kit.report import TablesReport
    from decisions.store.records import RunRecord


class Report(Protocol):
    """A job's result: headline metrics and a way to write its files."""

    metrics: dict[str, float]

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write the report's files into ``directory``; return artifact name -> path."""


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
    """Run ``run_report`` inside a recorded run; store its metrics (plus ``job_seconds``) and files.

    The files go to ``run_folder(run_id, output_dir, url)``, where ``checkpoint_file`` works
    while the job runs. ``resume`` is a stopped run to continue (``run_report`` must be its job).

    Returns:
        The run id. On an exception the run is recorded as failed and the exception re-raised.
    """
    from decisions.kit.checkpoints import run_checkpoints
    from decisions.store import recorded_run
    from decisions.store.artifacts import publish

    with recorded_run(kind, name, config, url=url, sweep_id=sweep_id, resume=resume) as run:
        folder = run_folder(run.run_id, output_dir, url)
        if run.previous is None:
            set_aside(folder)
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


def set_aside(folder: Path) -> Path | None:
    """Rename a new run's folder that already holds files (left by another store's run of the same id) to
    ``<name>.replaced-<UTC time>``, so the new run starts empty; the new name, or None when there was nothing.
    """
    if not folder.is_dir() or not any(folder.iterdir()):
        return None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = folder.with_name(f"{folder.name}.replaced-{stamp}")
    folder.rename(target)
    log.warning("%s already held files: moved to %s", folder, target)
    return target


def resume_metrics(folder: Path, previous: RunRecord) -> dict[str, float]:
    """The metrics recording a resume of ``previous`` (as before it was reopened) from ``folder``."""
    before = previous.latest_metrics().get("resumed_times") or 0.0
    return stopped_run_point(folder, previous).metrics(int(before) + 1)


def execute_domain(
    domain: Domain,
    job: JobBase,
    *,
    url: str | None = None,
    progress: Progress = silent,
    sweep_id: str | None = None,
    resume: int | None = None,
) -> int:
    """``execute_recorded`` for a domain's prepared job; returns the run id (re-raises on failure).

    The domain's modules and JAX are imported before the run is recorded as running, so that a stop
    (SIGTERM, Ctrl-C) never lands inside their C++ initialisation, which would abort the process.
    """
    import jax  # noqa: F401

    domain.job()
    return execute_recorded(
        domain.name, job.name, job.config(), lambda: domain.run_job(job, progress=progress),
        url=url, sweep_id=sweep_id, output_dir=job.output_dir, resume=resume,
    )


def stopped_run_point(run_folder: Path, record: RunRecord) -> ResumePoint:
    """``resume_point`` of a stopped run's checkpoints, stopped at its record's last sign of life."""
    return resume_point(run_folder / SUBFOLDER, record.finished_at or record.heartbeat_at or record.started_at)


def load_run_report(domain: Domain, record: RunRecord) -> TablesReport:
    """A recorded run's report, read from its ``report`` artifact (a local copy when remote).

    Raises:
        FileNotFoundError: the run has no saved report, or its files are gone.
    """
    from decisions.store.artifacts import report_folder

    return domain.report_model.load(report_folder(record))
