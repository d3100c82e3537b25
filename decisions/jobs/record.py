"""What every domain job does around its work: record the run, its metrics and its files.

``Domain.execute`` calls ``execute_recorded`` with the domain's ``run_job``: the run is
recorded in the store, the report's metrics (plus ``job_seconds``) are logged and every
file its ``save`` writes (tables, ``report.json``, charts, trained policies) becomes an
artifact of the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol


class Report(Protocol):
    """A job's result: headline metrics and a way to write its files."""

    metrics: dict[str, float]

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write the report's files into ``directory``; return artifact name -> path."""
        ...


def execute_recorded(
    kind: str,
    name: str,
    config: Mapping[str, Any],
    run_report: Callable[[], Report],
    *,
    url: str | None = None,
    sweep_id: str | None = None,
    output_dir: str | None = None,
) -> int:
    """Run a job inside a recorded run: metrics (plus ``job_seconds``) and every file are stored.

    Args:
        kind: run kind (the domain's name).
        name: run label.
        config: JSON-ready configuration.
        run_report: does the work and returns the report.
        url: run store URL (default: ``DECISIONS_DB_URL`` or the user's SQLite file).
        sweep_id: sweep the run belongs to, if any.
        output_dir: folder for the files (default: the store's artifacts folder); each run
            writes into ``run-<id>`` below it.

    Returns:
        The run id. On an exception the run is recorded as failed and the exception re-raised.
    """
    from decisions.store import artifacts_root, recorded_run

    with recorded_run(kind, name, config, url=url, sweep_id=sweep_id) as run:
        start = time.perf_counter()
        report = run_report()
        report.metrics["job_seconds"] = time.perf_counter() - start
        run.log_metrics(report.metrics)
        folder = (Path(output_dir) if output_dir else artifacts_root(url)) / f"run-{run.run_id}"
        for artifact, path in report.save(folder).items():
            run.add_artifact(artifact, str(path))
        return run.run_id
