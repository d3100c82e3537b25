"""Fixtures of the app tests: a temporary run store and the paths of the app's scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from decisions.store import dispose_engines

APPS = Path(__file__).resolve().parents[2] / "apps"
HOME = str(APPS / "Home.py")
GAS_PAGE = "pages/1_Gas_storage.py"


@pytest.fixture
def store_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """Point the run store (``DECISIONS_DB_URL``) at an empty SQLite file in ``tmp_path``."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    monkeypatch.delenv("DECISIONS_APP_PASSWORD", raising=False)
    yield url
    dispose_engines()
