"""Engine and session handling of the run store: the database named by ``DECISIONS_DB_URL``
(else ``runs.db`` in the user's data directory), built at the newest schema revision when empty,
refused at any other revision until ``upgrade_store``. An unusable store raises ``InputError`` on
field ``DECISIONS_DB_URL``, one line, password masked. Design: ``docs/notes/core.md``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

import platformdirs
from sqlalchemy import JSON, Connection, Engine, Select, create_engine, event, func, insert, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.orm import Session

from decisions.errors import InputError
from decisions.store import migrations
from decisions.store.migrations.legacy import LegacyMismatch, adopt
from decisions.store.plain import JsonText, json_text, json_value

ENV_VAR = "DECISIONS_DB_URL"  # overrides the default database URL
BUSY_TIMEOUT_S = 30.0  # how long a SQLite connection waits for a lock
_BEGIN_OPTION = "decisions_sqlite_begin"
POSTGRES_EXTRA = 'pip install -e ".[postgres]"'  # installs psycopg
URL_EXAMPLES = "sqlite:////path/to/runs.db or postgresql+psycopg://user:password@host/dbname"
_USERINFO = re.compile(r"(://[^:/@]*:)[^/]*@")  # user:password@ up to the last @ before the path
SCHEMA_LOCK_KEY = 0x6465636973696F6E  # PostgreSQL advisory lock held while the schema changes
BASELINE_REVISION = "0001"  # what a store made before migrations is stamped with
UPGRADE_COMMAND = "decisions db upgrade"

Row = TypeVar("Row")
Rec = TypeVar("Rec")

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()


def masked_url(url: str) -> str:
    """A database URL, parseable or not, for messages, with any password replaced by ``***``."""
    try:
        rendered = make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        rendered = url
    return _USERINFO.sub(r"\1***@", rendered)


def store_error(url: str, problem: str) -> InputError:
    """The one-line ``InputError`` of an unusable store: ``DECISIONS_DB_URL: '<masked url>': <problem>``.

    A password of 4 or more characters is masked in ``problem`` too.
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
    """``runs.db`` in ``platformdirs.user_data_dir("decisions")``, creating the folder."""
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


def store_folder(url: str | None = None) -> Path:
    """The folder a store's local files belong in: a SQLite store file's folder, else the user's data directory."""
    parsed = _parse(url or database_url())
    database = parsed.database
    if parsed.get_backend_name() == "sqlite" and database and database != ":memory:" and not database.startswith("file:"):
        return Path(database).expanduser().resolve().parent
    return default_database_path().parent


def database_url() -> str:
    """``$DECISIONS_DB_URL`` if set and non-empty, else the URL of ``default_database_path()``."""
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
    """A configured engine for ``url`` that connects (schema unchecked).

    Raises:
        InputError: the store cannot be reached; no engine is left open.
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
    """Open an engine for ``url`` and build an empty store's schema or check it is at head.

    Raises:
        InputError: the store cannot be used; no engine is left open.
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
    """A connection in a transaction holding the schema lock (SQLite's write lock or a PostgreSQL
    advisory lock); it commits on success."""
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
    """``(state, head)``: a store's revision and the one this code needs, changing nothing
    (a missing SQLite file is created empty).

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
    """Migrate a store to head in one transaction under the schema lock; ``(from, to)`` revisions.

    A store made before migrations (``from`` None) is adopted as revision 0001 first.

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
        return create_engine(url, connect_args=connect_args, json_serializer=json_text, json_deserializer=json_value)
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
    """The process-wide engine for ``url`` (default ``database_url()``), created on first use
    with the schema of an empty store.

    Raises:
        InputError: on field ``DECISIONS_DB_URL`` when the store cannot be used or is not at
            head; nothing is cached then.
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
    """A session that commits on success and rolls back on an exception.

    ``read_only`` sessions begin SQLite transactions with a deferred ``BEGIN`` (never write in
    them). Objects stay loaded after the commit but should not outlive the block.
    """
    engine = get_engine(url)
    bind = engine.execution_options(**{_BEGIN_OPTION: "DEFERRED"}) if read_only else engine
    with Session(bind, expire_on_commit=False) as session, session.begin():
        yield session


def read_records(query: Select[Any], record: Callable[[Any], Rec], *, url: str | None = None) -> list[Rec]:
    """``record`` of each ORM row ``query`` selects, in its order, read in a read-only session."""
    with session_scope(url, read_only=True) as session:
        return [record(row) for row in session.scalars(query)]


_FEW_ROWS = 8
"""Up to this many rows SQLite inserts with ``RETURNING`` (one statement a row beats three in all)."""


def insert_rows(session: Session, model: type[Any], params: Sequence[Mapping[str, Any]],
                shared: Mapping[str, Any] | None = None) -> list[int]:
    """Insert ``params`` (a value for every column but the id, the same columns in every row; ``shared``:
    the values of further columns every row has alike) into ``model``'s table; their ids, in order. A
    ``JsonText`` value of a JSON column is written as it is.

    More than ``_FEW_ROWS`` rows on SQLite: one ``executemany`` of the driver's own statement (each shared
    value bound once), then the new ids read back (its write transaction holds the database, so they are
    the ids above the largest before it); otherwise the insert with ``RETURNING`` in parameter order.
    """
    if not params:
        return []
    shared = shared or {}
    table = model.__table__
    id_column = table.c.id
    dialect = session.get_bind().dialect
    if dialect.name != "sqlite" or len(params) <= _FEW_ROWS:
        rows = [{k: json_value(v) if isinstance(v, JsonText) else v for k, v in {**row, **shared}.items()}
                for row in params]
        return list(session.scalars(insert(model).returning(id_column, sort_by_parameter_order=True), rows))
    before = session.scalar(select(func.max(id_column))) or 0
    own = [name for name in params[0] if name not in shared]
    names = own + list(shared)
    quote = dialect.identifier_preparer.quote
    statement = (f"INSERT INTO {quote(table.name)} ({', '.join(quote(n) for n in names)}) "
                 f"VALUES ({', '.join('?' for _ in names)})")
    common = tuple(_written(table.c[name], dialect, value) for name, value in shared.items())
    session.connection().exec_driver_sql(statement, _own_values(table, dialect, own, params, common))
    found = session.connection().exec_driver_sql(
        f"SELECT {quote(id_column.name)} FROM {quote(table.name)} WHERE {quote(id_column.name)} > ? "
        f"ORDER BY {quote(id_column.name)}", (before,))
    ids = [row[0] for row in found.fetchall()]
    if len(ids) != len(params):
        raise RuntimeError(f"inserted {len(params)} rows but read back {len(ids)} new ids")
    return ids


def _own_values(table: Any, dialect: Any, names: Sequence[str], params: Sequence[Mapping[str, Any]],
                common: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Each row's values of ``names`` as the driver takes them (as ``_written``), followed by ``common``."""
    getter = itemgetter(*names) if names else (lambda row: ())
    writers = [(i, process, isinstance(table.c[name].type, JSON))
               for i, name in enumerate(names)
               if (process := table.c[name].type.dialect_impl(dialect).bind_processor(dialect)) is not None]
    values = []
    for row in params:
        written = getter(row)
        if len(names) == 1:
            written = (written,)
        if writers:
            written = list(written)
            for i, process, json_column in writers:
                value = written[i]
                if not (json_column and isinstance(value, JsonText)):
                    written[i] = process(value)
        values.append((*written, *common))
    return values


def _written(column: Any, dialect: Any, value: Any) -> Any:
    """``value`` of ``column`` as the driver takes it: the column type's own bind processing, a ``JsonText``
    of a JSON column as it is."""
    process = column.type.dialect_impl(dialect).bind_processor(dialect)
    if process is None or (isinstance(column.type, JSON) and isinstance(value, JsonText)):
        return value
    return process(value)


def add_records(session: Session, rows: Sequence[Row], record: Callable[[Row], Rec]) -> list[Rec]:
    """Add ``rows`` to ``session`` and flush them (they get their ids); ``record`` of each, in order."""
    session.add_all(rows)
    session.flush()
    return [record(row) for row in rows]
