"""Fixtures of the app tests: a temporary run store (optionally with users) and the paths of the app's scripts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from decisions.store import dispose_engines

APPS = Path(__file__).resolve().parents[2] / "apps"
HOME = str(APPS / "Home.py")
GAS_PAGE = "pages/1_Gas_storage.py"
PENSION_PAGE = "pages/3_Pension_ALM.py"
PHARMA_PAGE = "pages/4_Pharma_process.py"
WEALTH_PAGE = "pages/5_Wealth_planning.py"


@pytest.fixture
def store_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[str]:
    """Point the run store (``DECISIONS_DB_URL``) at an empty SQLite file in ``tmp_path``."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    monkeypatch.delenv("DECISIONS_APP_PASSWORD", raising=False)
    yield url
    dispose_engines()


USERS = {"boss": ("approver", "boss password"), "olga": ("operator", "olga password"),
         "vera": ("viewer", "vera password")}
"""The users of ``users_store``: name -> (role, password)."""


@pytest.fixture
def users_store(store_url: str) -> Iterator[str]:
    """``store_url`` holding the ``USERS``, with the app's login limiter empty before and after."""
    import sys

    from decisions.store.users import add_user

    if str(APPS) not in sys.path:
        sys.path.insert(0, str(APPS))  # the pages import their helpers by name, as Streamlit runs them
    import app_login

    for name, (role, password) in USERS.items():
        add_user(name, password, role, created_by="test", url=store_url)
    app_login.limiter.clear()
    yield store_url
    app_login.limiter.clear()


@pytest.fixture(autouse=True)
def restore_main_module() -> Iterator[None]:
    """Put ``sys.modules["__main__"]`` back after each app test.

    Streamlit's script runner leaves the page it ran installed as ``__main__``;
    a later test in the same worker that starts 'spawn' processes would make
    them re-run that page as their main script.
    """
    import sys

    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main
