"""Every benchmark ``decisions bench`` knows: one per registered domain, plus the platform's own.

A bench is a module with ``run_bench(progress=None, **budget) -> dict`` and ``SMOKE_BUDGET``;
it may declare ``README_ROWS`` (``core.bench_row.Row``), the README table generated from its
stored result. The domains' benches come from the registry; ``PLATFORM_BENCHES`` adds those
that belong to no domain (the core agents against a pure-JAX peer).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from decisions.errors import InputError
from decisions.jobs import registry
from decisions.jobs.bench_report import RowsSpec, render_table

PLATFORM_BENCHES: Mapping[str, str] = {"agents": "decisions.core.agents.bench"}
"""Benches that belong to no domain: name -> module."""


def names() -> list[str]:
    """Every bench's name: the registered domains', then the platform's."""
    return [*registry.names(), *PLATFORM_BENCHES]


def module(name: str) -> ModuleType:
    """The bench module of ``name`` (a domain, ``-`` read as ``_``, or a platform bench).

    Raises:
        InputError: (field ``name``) an unknown bench, listing the known ones.
    """
    domain = registry.find(name)
    if domain is not None:
        return domain.module("bench")
    if name in PLATFORM_BENCHES:
        return importlib.import_module(PLATFORM_BENCHES[name])
    raise InputError("name", f"unknown benchmark {name!r} (known: {', '.join(names())})")


def canonical(name: str) -> str:
    """The name results are stored under (``gas-storage`` -> ``gas_storage``)."""
    domain = registry.find(name)
    return domain.name if domain is not None else name


def run(name: str, progress: Callable[[str, int, int], None] | None = None, **budget: Any) -> dict[str, Any]:
    """Run bench ``name`` with ``budget`` overriding its defaults; figures as JSON-ready Python values."""
    from decisions.jobs.bench_store import json_ready

    return json_ready(module(name).run_bench(progress, **budget))


def readme_rows(name: str) -> RowsSpec:
    """The README rows bench ``name`` declares, or the function that builds them (none: no table)."""
    rows = getattr(module(name), "README_ROWS", ())
    return rows if callable(rows) else tuple(rows)


def readme_tables(folder: Path | None = None) -> dict[str, str]:
    """Each bench with README rows and a stored result -> its rendered README block."""
    from decisions.jobs.bench_store import BENCH_FOLDER

    folder = folder or BENCH_FOLDER
    return {
        name: render_table(name, rows, folder)
        for name in names()
        if (rows := readme_rows(name)) and (folder / f"{name}.json").exists()
    }
