"""Each domain's smoke benchmark and smoke job, run once per test process and shared by the tests
that check them.

The conformance kit (``tests/jobs/test_conformance.py``) runs every domain's benchmark at its
``smoke_budget`` and its smoke job (``Domain.smoke_job``); a domain's own bench and decide tests
check the same runs in detail instead of running them again. A module that does declares
``pytestmark = pytest.mark.smoke_runs("<domain>")``: ``tests/conftest.py`` then puts it in the
xdist group of that domain's conformance tests, so both run in one process and share the runs.
"""

from __future__ import annotations

import atexit
import copy
import functools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decisions.kit.base import JobBase
from decisions.kit.report import TablesReport
from decisions.platform import benches, registry


@functools.cache
def _bench(name: str) -> tuple[dict[str, Any], tuple[str, ...]]:
    domain = registry.get(name)
    tasks: list[str] = []
    figures = benches.run(domain.name, lambda task, done, total: tasks.append(task), **domain.smoke_budget)
    return figures, tuple(tasks)


def smoke_bench(name: str) -> tuple[dict[str, Any], list[str]]:
    """Domain ``name``'s benchmark at its smoke budget: its figures and the progress tasks it reported.

    Run once per process; each call returns fresh copies (a test may change them).
    """
    figures, tasks = _bench(name)
    return dict(figures), list(tasks)


@dataclass(frozen=True)
class SmokeRun:
    """A domain's smoke job, run: the prepared ``job``, its ``report`` and the ``folder`` the report was
    saved in (the files a recorded run keeps; also the job's base folder for relative paths)."""

    job: JobBase
    report: TablesReport
    folder: Path


@functools.cache
def _run(name: str) -> SmokeRun:
    domain = registry.get(name)
    folder = Path(tempfile.mkdtemp(prefix=f"smoke-run-{name}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    job = domain.prepare(domain.smoke_job(), folder)
    report = domain.run_job(job)
    report.save(folder)
    return SmokeRun(job, report, folder)


def smoke_run(name: str) -> SmokeRun:
    """Domain ``name``'s smoke job, run once per process and its report saved into a folder that lasts
    as long as the process.

    Each call returns a copy of the report with its own ``metrics`` (a test may add to them, as a
    recorded run does); its other fields and the folder are shared: a test must not change them (copy
    the folder to change it).
    """
    run = _run(name)
    report = copy.copy(run.report)
    report.metrics = dict(run.report.metrics)
    return SmokeRun(run.job, report, run.folder)
