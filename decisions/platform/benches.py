"""Every benchmark ``decisions bench`` knows: one per registered domain, plus the platform's own.

A bench module may declare ``README_ROWS``, the README table generated from its stored result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from decisions.core.bench_row import Target
from decisions.errors import InputError
from decisions.kit.domain import BenchModule
from decisions.platform import registry
from decisions.platform.bench_report import (
    DOMAINS_BLOCK,
    TARGETS_BLOCK,
    RowsSpec,
    block_places,
    render_domains_table,
    render_table,
    render_targets_table,
    report_files,
)


def _agents_bench() -> BenchModule:
    from decisions.core.agents import bench

    return bench


def _platform_bench() -> BenchModule:
    from decisions.platform import operations_bench

    return operations_bench


PLATFORM_BENCHES: Mapping[str, Callable[[], BenchModule]] = {"agents": _agents_bench, "platform": _platform_bench}
"""Benches that belong to no domain: name -> the function importing its module."""


def names() -> list[str]:
    """Every bench's name: the registered domains', then the platform's."""
    return [*registry.names(), *PLATFORM_BENCHES]


def module(name: str) -> BenchModule:
    """The bench module of ``name`` (a domain, ``-`` read as ``_``, or a platform bench).

    Raises:
        InputError: on field ``name`` for an unknown bench.
    """
    domain = registry.find(name)
    if domain is not None:
        return domain.bench()
    if name in PLATFORM_BENCHES:
        return PLATFORM_BENCHES[name]()
    raise InputError("name", f"unknown benchmark {name!r} (known: {', '.join(names())})")


def canonical(name: str) -> str:
    """The name results are stored under (``gas-storage`` -> ``gas_storage``)."""
    domain = registry.find(name)
    return domain.name if domain is not None else name


def run(name: str, progress: Callable[[str, int, int], None] | None = None, **budget: Any) -> dict[str, Any]:
    """Run bench ``name`` with ``budget`` overriding its defaults; figures as JSON-ready Python values."""
    from decisions.platform.bench_store import json_ready

    return json_ready(module(name).run_bench(progress, **budget))


def readme_rows(name: str) -> RowsSpec:
    """The README rows bench ``name`` declares, or the function that builds them (none: no table)."""
    rows = getattr(module(name), "README_ROWS", ())
    return rows if callable(rows) else tuple(rows)


def bench_targets(name: str) -> tuple[Target, ...]:
    """The targets bench ``name`` declares (``TARGETS``; none: an empty tuple)."""
    return tuple(getattr(module(name), "TARGETS", ()))


def readme_tables(folder: Path | None = None) -> dict[str, str]:
    """Each bench with README rows and a stored result -> its rendered README block."""
    from decisions.platform.bench_store import BENCH_FOLDER

    folder = folder or BENCH_FOLDER
    return {
        name: render_table(name, rows, folder)
        for name in names()
        if (rows := readme_rows(name)) and (folder / f"{name}.json").exists()
    }


def generated_tables(folder: Path | None = None) -> dict[str, str]:
    """Every generated block's body: each bench's figure table and the README's domains and targets tables."""
    from decisions.platform.bench_store import BENCH_FOLDER

    folder = folder or BENCH_FOLDER
    tables = readme_tables(folder)
    tables[DOMAINS_BLOCK] = render_domains_table(registry.DOMAINS, readme_rows, folder)
    pages = {name: places[0] for name, places in block_places(report_files()).items()}
    tables[TARGETS_BLOCK] = render_targets_table(names(), bench_targets, pages, folder)
    return tables
