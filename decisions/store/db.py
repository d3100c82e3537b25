"""Engine and session handling of the run store.

The database is chosen by URL: ``DECISIONS_DB_URL`` when set, otherwise a
SQLite file ``runs.db`` in the user's data directory. Engines are cached per
URL; building one checks the store's schema revision (Alembic migrations,
``decisions.store.migrations``):

- an empty database (none of the run tables) is built at the newest revision
  ("head") by running the migrations;
- a store at head is used as is;
- a store behind head (an older revision, or one made by a release before
  migrations, which has tables but no ``alembic_version``) is refused until
  ``decisions db upgrade`` (``upgrade_store``) has migrated it; a store ahead of
  head (written by newer code) is refused too.

The schema is built, and a store upgraded, in one transaction that first takes
the store's lock: SQLite's write lock (``BEGIN IMMEDIATE``) or a PostgreSQL
transaction-level advisory lock (``pg_advisory_xact_lock``). Processes that
start on a fresh store at the same moment therefore do not race: one builds it,
the others wait and then find it at head.

SQLite is set up for several processes writing at once (parallel jobs of a
sweep): WAL journal, a 30 s busy timeout, foreign keys on, and transactions
that SQLAlchemy begins itself instead of the ``sqlite3`` driver. Write
sessions begin with ``BEGIN IMMEDIATE``, so a writer waits for the write lock
up front (under the busy timeout) rather than failing with "database is
locked" when it upgrades a read to a write; read-only sessions use a plain
``BEGIN`` and, in WAL mode, never block writers. This is the recipe of the
SQLAlchemy SQLite dialect documentation ("Enabling Non-Legacy SQLite
Transactional Modes"); it is also what makes SQLite's DDL transactional.

A store that cannot be used (a malformed URL, an unknown database kind, a
driver that is not installed, a SQLite path that cannot be created, a server
that refuses connections, a revision other than head) raises ``InputError`` on
field ``DECISIONS_DB_URL`` naming the URL with its password masked and the
problem, on one line. A failed attempt caches no engine and leaves no
half-created schema (the schema is built in one transaction), so the next
attempt starts afresh.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import platformdirs
from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import Session

from decisions.errors import InputError
from decisions.store import migrations
from decisions.store.migrations.legacy import LegacyMismatch, adopt

ENV_VAR = "DECISIONS_DB_URL"
"""Environment variable that overrides the default database URL."""

BUSY_TIMEOUT_S = 30.0
"""How long a SQLite connection waits for a lock before giving up."""

_BEGIN_OPTION = "decisions_sqlite_begin"

POSTGRES_EXTRA = 'pip install -e ".[postgres]"'
"""How to install the PostgreSQL driver (``psycopg``) this package's URLs expect."""

URL_EXAMPLES = "sqlite:////path/to/runs.db or postgresql+psycopg://user:password@host/dbname"
"""Example URLs named by the errors of a bad ``DECISIONS_DB_URL``."""

_USERINFO = re.compile(r"(://[^:/@]*:)[^/]*@")
"""``user:password@`` in a URL (up to the last ``@`` before the path), for masking."""

SCHEMA_LOCK_KEY = 0x6465636973696F6E
"""Key of the PostgreSQL advisory lock held while a store's schema is built or upgraded ("decision")."""

BASELINE_REVISION = "0001"
"""The revision whose tables a store made before migrations has: it is stamped with it, then upgraded."""

UPGRADE_COMMAND = "decisions db upgrade"
"""The command that migrates a store behind head (named by the error refusing it)."""

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def masked_url(url: str) -> str:
    """Render a database URL for messages, with any password replaced by ``***``.

    Args:
        url: A database URL, parseable or not.

    Returns:
        ``make_url(url).render_as_string(hide_password=True)``; for a URL that does not
        parse, ``url`` with the part between ``user:`` and ``@`` masked.
    """
    try:
        rendered = make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        rendered = url
    return _USERINFO.sub(r"\1***@", rendered)


def store_error(url: str, problem: str) -> InputError:
    """The one-line error of an unusable run store: ``DECISIONS_DB_URL: '<masked url>': <problem>``.

    Args:
        url: The store's URL (masked in the message).
        problem: What is wrong; the URL's password, if it appears, is masked too (when it has
            at least 4 characters: shorter ones would mask parts of words).

    Returns:
        An ``InputError`` on field ``DECISIONS_DB_URL``.
    """
    password = _password(url)
    if password and len(password) >= 4:
        problem = problem.replace(password, "***")
    return InputError(ENV_VAR, f"'{masked_url(url)}': {' '.join(problem.split())}")


def _password(url: str) -> str | None:
    """The password in ``url``, if it has one and parses."""
    try:
        password = make_url(url).password
    except (ArgumentError, ValueError, TypeError):
        match = _USERINFO.search(url)
        return match.group(0)[len(match.group(1)):-1] if match else None
    return str(password) if password else None


def _parse(url: str) -> URL:
    """Parse a store URL, raising the one-line ``InputError`` when it is malformed."""
    try:
        return make_url(url)
    except (ArgumentError, ValueError, TypeError):
        raise store_error(url, f"not a database URL (expected e.g. {URL_EXAMPLES})") from None


def _first_line(exc: BaseException) -> str:
    """First non-empty line of a driver error (the DBAPI exception SQLAlchemy wraps, if any)."""
    orig = getattr(exc, "orig", None)
    source = orig if isinstance(orig, BaseException) else exc
    for line in str(source).splitlines():
        if line.strip():
            return line.strip()
    return type(source).__name__


def default_database_path() -> Path:
    """Return the default SQLite file, creating its directory.

    Returns:
        ``runs.db`` inside ``platformdirs.user_data_dir("decisions")``.
    """
    directory = Path(platformdirs.user_data_dir("decisions"))
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            ENV_VAR,
            f"unset, and the default store folder {directory} cannot be created "
            f"({exc.strerror or exc}); set it to another database, e.g. {URL_EXAMPLES}",
        ) from None
    return directory / "runs.db"


def artifacts_root(url: str | None = None) -> Path:
    """Folder for the files runs write: ``artifacts/`` beside a SQLite store's file.

    For a server database (or an in-memory SQLite one) it is ``artifacts/`` in
    the user's data directory. When ``DECISIONS_ARTIFACTS_URL`` names a local folder
    (a path or a ``file://`` URL) it is that folder; when it names a remote one (``s3://``,
    ...), this stays the local folder where runs write their files before they are copied
    there (see ``decisions.store.artifacts``).

    Args:
        url: Database URL; None means ``database_url()``.

    Returns:
        The folder (not created).

    Raises:
        InputError: on field ``DECISIONS_ARTIFACTS_URL`` when it is set but unusable.
    """
    from decisions.store.artifacts import configured_local_root

    configured = configured_local_root()
    if configured is not None:
        return configured
    key = url or database_url()
    parsed = _parse(key)
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


def _open_engine(url: str) -> Engine:
    """Create an engine for ``url``, configure it and check that it connects (the schema is not looked at).

    Raises:
        InputError: on field ``DECISIONS_DB_URL`` when the store cannot be reached; no engine is left open.
    """
    parsed = _parse(url)
    is_sqlite = parsed.get_backend_name() == "sqlite"
    connect_args: dict[str, Any] = {}
    if is_sqlite:
        connect_args["timeout"] = BUSY_TIMEOUT_S
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            _make_sqlite_folder(url, Path(database).expanduser().parent)
    engine = _create(url, parsed, connect_args)
    try:
        if is_sqlite:
            _configure_sqlite(engine)
        try:
            with engine.connect():
                pass
        except Exception as exc:  # anything the driver raises for this URL: refused, unreadable, ...
            hint = " (is its folder writable?)" if is_sqlite and "unable to open" in str(exc) else ""
            raise store_error(url, f"could not connect: {_first_line(exc)}{hint}") from exc
    except BaseException:
        engine.dispose()
        raise
    return engine


def _build_engine(url: str) -> Engine:
    """Create an engine for ``url``, connect, and build the schema of an empty store or check it is at head.

    Raises:
        InputError: on field ``DECISIONS_DB_URL`` when the store cannot be used (unreachable, or
            at a revision other than head); no engine is left open and the schema is either
            complete or untouched.
    """
    engine = _open_engine(url)
    try:
        _ensure_head(engine, url)
    except BaseException:
        engine.dispose()
        raise
    return engine


@contextmanager
def _schema_lock(engine: Engine) -> Iterator[Connection]:
    """A connection in a transaction that holds the store's schema lock; it commits on success.

    SQLite: the write lock, taken by ``BEGIN IMMEDIATE`` (waits up to the busy timeout).
    PostgreSQL: ``pg_advisory_xact_lock(SCHEMA_LOCK_KEY)``, released when the transaction ends.
    """
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
        yield connection


def _read_state(engine: Engine) -> migrations.StoreState:
    """A store's revision, read in a read-only transaction (no lock)."""
    with engine.execution_options(**{_BEGIN_OPTION: "DEFERRED"}).connect() as connection:
        return migrations.current(connection)


def _ensure_head(engine: Engine, url: str) -> None:
    """Build an empty store at head (under the schema lock); refuse one at another revision."""
    head = migrations.head()
    try:
        state = _read_state(engine)
        if state.is_empty:
            with _schema_lock(engine) as connection:
                state = migrations.current(connection)  # another process may have built it meanwhile
                if state.is_empty:
                    migrations.upgrade(connection, "head")
                    state = migrations.StoreState(head, True)
    except (SQLAlchemyError, OSError, migrations.MigrationError) as exc:
        raise store_error(url, f"could not create the run tables: {_first_line(exc)}") from exc
    if state.revision != head:
        raise _revision_error(url, state, head)


def _revision_error(url: str, state: migrations.StoreState, head: str) -> InputError:
    """The one-line refusal of a store that is not at ``head``: behind (upgrade it) or ahead (newer code)."""
    if state.revision is not None and not migrations.is_known(state.revision):
        return store_error(
            url,
            f"the store is at revision {state.revision}, newer than this code knows (its newest is {head}): "
            "use the decisions release that wrote it, or a newer one",
        )
    found = "was created before migrations" if state.revision is None else f"is at revision {state.revision}"
    return store_error(
        url,
        f"the store {found}, this code needs revision {head}: run `{UPGRADE_COMMAND}` with {ENV_VAR} set to it",
    )


def store_state(url: str | None = None) -> tuple[migrations.StoreState, str]:
    """Read a store's revision without building or changing anything (``decisions db current``).

    Args:
        url: Database URL; None means ``database_url()``. A SQLite file that does not exist is
            created (empty).

    Returns:
        The store's state and the head revision this code needs.

    Raises:
        InputError: on field ``DECISIONS_DB_URL`` when the store cannot be reached.
    """
    key = url if url is not None else database_url()
    engine = _open_engine(key)
    try:
        return _read_state(engine), migrations.head()
    except (SQLAlchemyError, OSError) as exc:
        raise store_error(key, f"could not read the store's revision: {_first_line(exc)}") from exc
    finally:
        engine.dispose()


def upgrade_store(url: str | None = None) -> tuple[str | None, str]:
    """Migrate a store to head (``decisions db upgrade``), in one transaction under the schema lock.

    An empty store is built from nothing. A store made before migrations (run tables, no
    ``alembic_version``) is first brought to revision 0001 (``migrations.legacy.adopt``: the
    tables, nullable columns and indexes it lacks are created, and its tables are checked
    against 0001's), stamped 0001, then upgraded. A store at head is left as it is.

    Args:
        url: Database URL; None means ``database_url()``.

    Returns:
        ``(from, to)``: the revision it had (None for an empty store or one made before
        migrations) and the head it has now.

    Raises:
        InputError: on field ``DECISIONS_DB_URL`` when the store cannot be reached, is ahead
            of head, its tables do not match 0001, or a migration fails (nothing is changed then).
    """
    key = url if url is not None else database_url()
    head = migrations.head()
    engine = _open_engine(key)
    state = migrations.StoreState(None, False)
    try:
        with _schema_lock(engine) as connection:
            state = migrations.current(connection)
            if state.revision is not None and not migrations.is_known(state.revision):
                raise _revision_error(key, state, head)
            if state.is_legacy:
                adopt(connection)
                migrations.stamp(connection, BASELINE_REVISION)
            migrations.upgrade(connection, "head")
    except LegacyMismatch as exc:
        raise store_error(key, f"the store was created before migrations but does not match revision "
                               f"{BASELINE_REVISION}: {exc}") from None
    except (SQLAlchemyError, OSError, migrations.MigrationError) as exc:
        raise store_error(key, f"could not upgrade the store from {state.describe()} to {head}: "
                               f"{_first_line(exc)}") from exc
    finally:
        engine.dispose()
    return state.revision, head


def _make_sqlite_folder(url: str, folder: Path) -> None:
    """Create the folder of a SQLite file, or raise the one-line error saying why it cannot be."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
        if blocker is not None:
            raise store_error(url, f"cannot create the SQLite folder: {blocker} is a file, not a folder") from None
        raise store_error(url, f"cannot create the SQLite folder {exc.filename or folder}: {exc.strerror or exc}") from None


def _create(url: str, parsed: URL, connect_args: dict[str, Any]) -> Engine:
    """``create_engine``, with an unknown database kind or a missing driver as one-line errors."""
    try:
        return create_engine(url, connect_args=connect_args)
    except NoSuchModuleError:
        raise store_error(
            url, f"unknown database kind '{parsed.drivername}' (expected e.g. {URL_EXAMPLES})"
        ) from None
    except ImportError as exc:
        raise store_error(url, _missing_driver(parsed, exc)) from None
    except (ArgumentError, TypeError, ValueError) as exc:
        raise store_error(url, f"bad database URL: {_first_line(exc)}") from None


def _missing_driver(parsed: URL, exc: ImportError) -> str:
    """The problem of a driver that cannot be imported, naming what to install."""
    module = exc.name or ""
    if parsed.get_backend_name() == "postgresql":
        if module.split(".")[0] == "psycopg" or (not module and "psycopg" in str(exc)):
            if module:
                return f"the PostgreSQL driver psycopg is not installed: {POSTGRES_EXTRA}"
            return f"the PostgreSQL driver psycopg cannot be loaded ({_first_line(exc)}): {POSTGRES_EXTRA}"
        return (
            f"the driver module {module or _first_line(exc)} is not installed; install it, or use "
            f"postgresql+psycopg://... after {POSTGRES_EXTRA}"
        )
    if module:
        return f"the driver module {module} of '{parsed.drivername}' is not installed (pip install it)"
    return f"the driver of '{parsed.drivername}' cannot be loaded: {_first_line(exc)}"


def get_engine(url: str | None = None) -> Engine:
    """Return the engine for a URL, creating it on first use (and the schema, for an empty store).

    Args:
        url: A SQLAlchemy database URL; ``None`` means ``database_url()``.

    Returns:
        The engine, shared by every later call with the same URL in this process.

    Raises:
        InputError: on field ``DECISIONS_DB_URL`` (one line, password masked) when the
            store cannot be used, or is at a revision other than head (``decisions db
            upgrade`` migrates one behind); nothing is cached, so a later call tries again.
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
