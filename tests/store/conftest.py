"""Fixtures of the store tests: a fresh store on SQLite and on PostgreSQL (``any_store_url``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

BACKENDS = ("sqlite", "postgres")
"""The databases ``any_store_url`` runs a test on."""


def fresh_store_url(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty store: a new SQLite file under ``tmp_path``, or the session's PostgreSQL
    server with its ``public`` schema dropped and made again (skips when PostgreSQL cannot run)."""
    from decisions.store import dispose_engines

    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'store' / 'runs.db'}"
    from tests.pg_server import reset_database

    url = request.getfixturevalue("postgres_url")
    dispose_engines()  # no pooled connection may hold the tables that are dropped
    reset_database(url)
    return url


@pytest.fixture(params=BACKENDS)
def any_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty run store: once on SQLite, once on PostgreSQL; yields its URL."""
    from decisions.store import dispose_engines

    yield fresh_store_url(request.param, request, tmp_path)
    dispose_engines()


@pytest.fixture
def no_cached_engines() -> Iterator[None]:
    """Dispose of the store's cached engines before and after a test, so that none outlives its store."""
    from decisions.store import dispose_engines

    dispose_engines()
    yield
    dispose_engines()
