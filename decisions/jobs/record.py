"""What every domain job does around its work: record the run, its metrics and its files.

A domain's ``execute(job, *, url, progress, sweep_id)`` is ``execute_recorded`` with its own
``run_report`` (the work) and optional extra files (trained policies). The report is anything
with ``metrics`` (a dict of floats) and ``save(folder) -> {artifact name: path}``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import pandas as pd


class Report(Protocol):
    """A job's result: headline metrics and a way to write its files."""

    metrics: dict[str, float]

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write the report's files into ``directory``; return artifact name -> path."""
        ...


def save_tables(directory: str | Path, tables: Mapping[str, pd.DataFrame]) -> dict[str, Path]:
    """Write each table as ``<name>.csv`` (no index) into ``directory`` (created if missing).

    Returns:
        Table name -> path written.
    """
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name, frame in tables.items():
        path = folder / f"{name}.csv"
        frame.to_csv(path, index=False)
        written[name] = path
    return written


def execute_recorded(
    kind: str,
    name: str,
    config: Mapping[str, Any],
    run_report: Callable[[], Report],
    *,
    url: str | None = None,
    sweep_id: str | None = None,
    output_dir: str | None = None,
    extra_files: Callable[[Any, Path], Mapping[str, Path]] | None = None,
) -> int:
    """Run a job inside a recorded run: metrics (plus ``job_seconds``) and every file are stored.

    Args:
        kind: run kind (the job kind's value).
        name: run label.
        config: JSON-ready configuration.
        run_report: does the work and returns the report.
        url: run store URL (default: ``DECISIONS_DB_URL`` or the user's SQLite file).
        sweep_id: sweep the run belongs to, if any.
        output_dir: folder for the files (default: the store's artifacts folder); each run
            writes into ``run-<id>`` below it.
        extra_files: ``extra_files(report, folder) -> {name: path}`` writes more files (e.g.
            trained policies) after the report's own.

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
        files = dict(report.save(folder))
        if extra_files is not None:
            files.update(extra_files(report, folder))
        for artifact, path in files.items():
            run.add_artifact(artifact, str(path))
        return run.run_id
