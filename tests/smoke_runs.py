"""Each domain's smoke benchmark, run once per test process and shared by the tests that check it.

The conformance kit (``tests/jobs/test_conformance.py``) runs every domain's benchmark at its
``smoke_budget``; a domain's own bench tests check the same run's figures in detail instead of
running the benchmark again. A module that does declares ``pytestmark =
pytest.mark.smoke_runs("<domain>")``: ``tests/conftest.py`` then puts it in the xdist group of
that domain's conformance tests, so both run in one process and share the run.
"""

from __future__ import annotations

import functools
from typing import Any

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
