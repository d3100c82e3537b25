"""Engine and session handling of the run store.

The database is chosen by URL: ``DECISIONS_DB_URL`` when set, otherwise a
SQLite file ``runs.db`` in the user's data directory. Engines are cached per
URL and create the schema on first use.

SQLite is set up for several processes writing at once (parallel jobs of a
sweep): WAL journal, a 30 s busy timeout, foreign keys on, and transactions
that SQLAlchemy begins itself instead of the ``sqlite3`` driver. Write
sessions begin with ``BEGIN IMMEDIATE``, so a writer waits for the write lock
up front (under the busy timeout) rather than failing with "database is
locked" when it upgrades a read to a write; read-only sessions use a plain
``BEGIN`` and, in WAL mode, never block writers. This is the recipe of the
SQLAlchemy SQLite dialect documentation ("Enabling Non-Legacy SQLite
Transactional Modes"); it also makes the schema creation transactional, so
processes that start on a fresh file at the same moment do not race.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from decisions.store.models import Base

ENV_VAR = "DECISIONS_DB_URL"
"""Environment variable that overrides the default database URL."""

BUSY_TIMEOUT_S = 30.0
"""How long a SQLite connection waits for a lock before giving up."""

_BEGIN_OPTION = "decisions_sqlite_begin"

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def default_database_path() -> Path:
    """Return the default SQLite file, creating its directory.

    Returns:
        ``runs.db`` inside ``platformdirs.user_data_dir("decisions")``.
    """
    directory = Path(platformdirs.user_data_dir("decisions"))
    directory.mkdir(parents=True, exist_ok=True)
    return directory / "runs.db"


def artifacts_root(url: str | None = None) -> Path:
    """Folder for the files runs write: ``artifacts/`` beside a SQLite store's file.

    For a server database (or an in-memory SQLite one) it is ``artifacts/`` in
    the user's data directory.

    Args:
        url: Database URL; None means ``database_url()``.

    Returns:
        The folder (not created).
    """
    parsed = make_url(url or database_url())
    database = parsed.database
    if parsed.get_backend_name() == "sqlite" and database and database != ":memory:" and not database.startswith("file:"):
        return Path(database).expanduser().resolve().parent / "artifacts"
    return default_database_path().parent / "artifacts"


def database_url() -> str:
    """Return the URL of the run store.

    Returns:
        ``$DECISIONS_DB_URL`` if set and non-empty, else a ``sqlite:///`` URL of
        ``default_database_path()``.
    """
    url = os.environ.get(ENV_VAR, "").strip()
    if url:
        return url
    return f"sqlite:///{default_database_path()}"


def _configure_sqlite(engine: Engine) -> None:
    """Install the connect/begin hooks that make SQLite safe for concurrent writers."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        # Take transaction control away from the sqlite3 driver; the "begin"
        # hook below emits BEGIN itself.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        mode = connection.get_execution_options().get(_BEGIN_OPTION, "IMMEDIATE")
        connection.exec_driver_sql("BEGIN" if mode == "DEFERRED" else "BEGIN IMMEDIATE")


def _build_engine(url: str) -> Engine:
    """Create an engine for ``url``, configure it and create the schema."""
    parsed = make_url(url)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    connect_args: dict[str, Any] = {}
    if is_sqlite:
        connect_args["timeout"] = BUSY_TIMEOUT_S
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args=connect_args)
    if is_sqlite:
        _configure_sqlite(engine)
    Base.metadata.create_all(engine)
    return engine


def get_engine(url: str | None = None) -> Engine:
    """Return the engine for a URL, creating it (and the schema) on first use.

    Args:
        url: A SQLAlchemy database URL; ``None`` means ``database_url()``.

    Returns:
        The engine, shared by every later call with the same URL in this process.
    """
    key = url if url is not None else database_url()
    with _engines_lock:
        engine = _engines.get(key)
        if engine is None:
            engine = _build_engine(key)
            _engines[key] = engine
        return engine


def dispose_engines() -> None:
    """Close every cached engine and forget it (tests, or before a fork)."""
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()


@contextmanager
def session_scope(url: str | None = None, *, read_only: bool = False) -> Iterator[Session]:
    """Open a session that commits on success and rolls back on an exception.

    Args:
        url: Database URL; ``None`` means ``database_url()``.
        read_only: Begin SQLite transactions with a plain (deferred) ``BEGIN``
            instead of ``BEGIN IMMEDIATE``. Only for sessions that do not write.

    Yields:
        The session. Objects stay loaded after the commit
        (``expire_on_commit=False``) but should not outlive the block.
    """
    engine = get_engine(url)
    bind = engine.execution_options(**{_BEGIN_OPTION: "DEFERRED"}) if read_only else engine
    with Session(bind, expire_on_commit=False) as session, session.begin():
        yield session
