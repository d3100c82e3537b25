"""Versioned run stores: Alembic migrations on SQLite and PostgreSQL, ``decisions db``, refusals, concurrency.

``data/store_before_migrations.db`` is a store made by the release before migrations (its
``create_all``), remade by ``data/make_legacy_store.py`` with that release's code.
"""

from __future__ import annotations

import multiprocessing
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.pool import NullPool
from typer.testing import CliRunner

from decisions.cli import app
from decisions.errors import InputError
from decisions.store import (
    RunStatus,
    add_artifact,
    artifacts,
    db,
    deployments,
    dispose_engines,
    get_engine,
    get_run,
    list_runs,
    migrations,
    session_scope,
    start_run,
)
from decisions.store.migrations.baseline import baseline_metadata
from decisions.store.models import Artifact, Base, Metric, Run
from tests.store.conftest import BACKENDS, fresh_store_url
from tests.store.writers import METRICS_PER_RUN, RUNS_PER_WRITER, record_runs

LEGACY_STORE = Path(__file__).with_name("data") / "store_before_migrations.db"

HEAD = "0006"

WRITERS = 8

runner = CliRunner()


pytestmark = pytest.mark.usefixtures("no_cached_engines")


def _plain_engine(url: str) -> sa.Engine:
    """An engine without the store's checks (to set a store up as an older or newer release left it)."""
    database = sa.make_url(url).database
    if url.startswith("sqlite") and database:
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    return sa.create_engine(url, poolclass=NullPool)


def _migrate(url: str, target: str) -> None:
    """Run the migrations of an empty store up to ``target`` only."""
    engine = _plain_engine(url)
    try:
        with engine.begin() as connection:
            migrations.upgrade(connection, target)
    finally:
        engine.dispose()


def _kept_run_at(revision: str, kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh store migrated up to ``revision`` only, holding one succeeded run named
    ``kept`` of ``kind`` (id 1)."""
    url = fresh_store_url(backend, request, tmp_path)
    _migrate(url, revision)
    _execute(url, "INSERT INTO runs (kind, name, status, config, package_version, host, created_at) "
                  f"VALUES ('{kind}', 'kept', 'succeeded', '{{}}', '0', 'h', '2026-01-01 00:00:00')")
    return url


def _execute(url: str, statement: str) -> None:
    engine = _plain_engine(url)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql(statement)
    finally:
        engine.dispose()


def _schema(url: str) -> dict[str, Any]:
    """The run tables of a store, named: columns (name, nullable, in order), primary key, indexes,
    foreign keys (with ON DELETE); the version table is left out. Types are not compared here."""
    engine = _plain_engine(url)
    try:
        with engine.connect() as connection:
            inspector = sa.inspect(connection)
            return {
                table: {
                    "columns": [(c["name"], c["nullable"]) for c in inspector.get_columns(table)],
                    "primary_key": inspector.get_pk_constraint(table)["constrained_columns"],
                    "indexes": sorted(
                        (i["name"], tuple(i["column_names"]), bool(i["unique"])) for i in inspector.get_indexes(table)
                    ),
                    "foreign_keys": sorted(
                        (tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]),
                         (f.get("options") or {}).get("ondelete"))
                        for f in inspector.get_foreign_keys(table)
                    ),
                }
                for table in sorted(inspector.get_table_names())
                if table != migrations.VERSION_TABLE
            }
    finally:
        engine.dispose()


def _sqlite_ddl(path: Path) -> set[tuple[str, str, str, str]]:
    """Every table and index of a SQLite file as its ``sqlite_master`` row (the DDL text itself)."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE tbl_name != 'alembic_version'"
        ).fetchall()
    connection.close()
    return set(rows)


def _version_table(url: str) -> list[str]:
    engine = _plain_engine(url)
    try:
        with engine.connect() as connection:
            if migrations.VERSION_TABLE not in sa.inspect(connection).get_table_names():
                return []
            return [row[0] for row in connection.exec_driver_sql("SELECT version_num FROM alembic_version")]
    finally:
        engine.dispose()


def _legacy_store(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store made before migrations holding the fixture's rows: the file itself on SQLite; on
    PostgreSQL the same tables (revision 0001's, which ``create_all`` made there) and the same rows."""
    if backend == "sqlite":
        copy = tmp_path / "legacy" / "runs.db"
        copy.parent.mkdir()
        shutil.copy(LEGACY_STORE, copy)
        return f"sqlite:///{copy}"
    url = fresh_store_url(backend, request, tmp_path)
    metadata = baseline_metadata()
    source, target = _plain_engine(f"sqlite:///{LEGACY_STORE}"), _plain_engine(url)
    try:
        with source.connect() as reading, target.begin() as writing:
            metadata.create_all(writing)
            for table in metadata.sorted_tables:
                rows = [dict(row) for row in reading.execute(sa.select(table)).mappings()]
                writing.execute(table.insert(), rows)
                writing.exec_driver_sql(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), (SELECT max(id) FROM {table.name}))"
                )
    finally:
        source.dispose()
        target.dispose()
    return url


def _cli(monkeypatch: pytest.MonkeyPatch, url: str, *args: str) -> tuple[int, str, str]:
    """Run ``decisions <args>`` on the store ``url``: exit code, stdout and stderr."""
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    monkeypatch.setenv("COLUMNS", "300")
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _refused_store(url: str, revision: str, reason: str) -> str:
    """Check that ``get_engine`` refuses the store at ``revision`` with one ``DECISIONS_DB_URL`` error
    ending in ``reason``, and keeps no engine; the message."""
    expected = f"DECISIONS_DB_URL: '{db.masked_url(url)}': the store is at revision {revision}, {reason}"
    with pytest.raises(InputError) as info:
        get_engine(url)
    assert (info.value.field, str(info.value)) == ("DECISIONS_DB_URL", expected)
    assert url not in db._engines
    return expected


def _upgraded_by_the_cli(monkeypatch: pytest.MonkeyPatch, url: str, revision: str) -> None:
    """Check that ``decisions db current`` says the store at ``revision`` is behind, and that ``decisions db
    upgrade`` carries it to head."""
    code, out, err = _cli(monkeypatch, url, "db", "current")
    assert (code, err) == (0, "")
    assert _one_line(out) == (
        f"'{db.masked_url(url)}': revision {revision}, head {HEAD} (behind: run `decisions db upgrade`)"
    )
    code, out, err = _cli(monkeypatch, url, "db", "upgrade")
    assert (code, err) == (0, "")
    assert _one_line(out) == f"upgraded '{db.masked_url(url)}' from {revision} to revision {HEAD}"
    assert _version_table(url) == [HEAD]


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


def test_the_postgres_fixture_says_why_it_cannot_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without PostgreSQL's binaries the ``postgres_url`` fixture skips with this reason, never silently."""
    from tests import pg_server

    monkeypatch.setattr(pg_server, "BIN_DIRS", ("/nonexistent/bin",))
    monkeypatch.setenv("PATH", "/nonexistent/path")
    with pytest.raises(pg_server.PgUnavailable) as info:
        pg_server.find_binaries()
    assert str(info.value) == (
        "PostgreSQL is not installed (no initdb/pg_ctl in /nonexistent/bin or on PATH)"
    )


# --- Revisions 0001 and head ---------------------------------------------------------------------


def test_the_revisions_read_without_alembic_are_alembics() -> None:
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(migrations.config())
    assert migrations.head() == scripts.get_current_head() == HEAD
    assert migrations.revisions() == {s.revision: s.down_revision for s in scripts.walk_revisions()}
    assert migrations.revisions() == {"0001": None, "0002": "0001", "0003": "0002", "0004": "0003",
                                     "0005": "0004", "0006": "0005"}
    assert (migrations.is_known("0001"), migrations.is_known("0099")) == (True, False)


def test_opening_a_store_at_head_does_not_import_alembic(tmp_path: Path) -> None:
    """Every process checks its store's revision; Alembic (~0.2 s to import) is loaded only to migrate."""
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    get_engine(url)
    code = (
        "import sys; from decisions.store import get_engine, list_runs; "
        f"get_engine({url!r}); list_runs(url={url!r}); print(sorted(m for m in sys.modules if m.startswith('alembic')))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert completed.stdout.strip() == "[]"


def test_revision_0001_is_exactly_the_schema_create_all_made_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "at0001.db"
    _migrate(f"sqlite:///{path}", "0001")
    assert _version_table(f"sqlite:///{path}") == ["0001"]
    assert _sqlite_ddl(path) == _sqlite_ddl(LEGACY_STORE)


def test_revision_0001_on_postgresql_has_the_tables_of_the_store_before_migrations(
    postgres_url: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = fresh_store_url("postgres", request, tmp_path)
    _migrate(url, "0001")
    assert _version_table(url) == ["0001"]
    assert _schema(url) == _schema(f"sqlite:///{LEGACY_STORE}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_empty_store_is_built_at_head_matching_the_models(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = fresh_store_url(backend, request, tmp_path)
    assert db.store_state(url)[0].is_empty
    engine = get_engine(url)
    with engine.connect() as connection:
        assert migrations.current(connection) == migrations.StoreState(HEAD, True)
        assert compare_metadata(MigrationContext.configure(connection), Base.metadata) == []
        assert set(sa.inspect(connection).get_table_names()) == {
            "alembic_version", "runs", "metrics", "artifacts", "deployments", "forgettings", "assets", "decisions",
            "outcomes", "users",
        }
    run_id = start_run("toy", "first", {"a": 1}, url=url)
    add_artifact(run_id, "report", tmp_path / "report.json", url=url, location="memory://x/run-1/report.json")
    assert get_run(run_id, url=url).artifacts[0].url == "memory://x/run-1/report.json"


@pytest.mark.parametrize("backend", BACKENDS)
def test_0002_downgrades_and_upgrades_again(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    url = fresh_store_url(backend, request, tmp_path)
    run_id = start_run("toy", "kept", {}, url=url)
    add_artifact(run_id, "a", tmp_path / "a.txt", url=url)
    dispose_engines()
    engine = _plain_engine(url)
    try:
        with engine.begin() as connection:
            migrations.downgrade(connection, "0001")
        assert "url" not in {c[0] for c in _schema(url)["artifacts"]["columns"]}
        assert _version_table(url) == ["0001"]
        assert db.upgrade_store(url) == ("0001", HEAD)
    finally:
        engine.dispose()
    assert [(a.name, a.url) for a in get_run(run_id, url=url).artifacts] == [("a", None)]
    assert _schema(url)["artifacts"]["indexes"] == [("ix_artifacts_run_id", ("run_id",), False)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_0004_carries_a_store_at_0003_forward_with_forgettings(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    from decisions.store.forgettings import Forgotten, forgettings_of, record_forgettings

    url = _kept_run_at("0003", "chronic", backend, request, tmp_path)
    assert "forgettings" not in _schema(url)
    assert db.upgrade_store(url) == ("0003", HEAD)
    assert _schema(url)["forgettings"]["foreign_keys"] == [(("run_id",), "runs", ("id",), "CASCADE")]
    [run] = list_runs(url=url)
    assert (run.name, forgettings_of(run.id, url=url)) == ("kept", [])
    forgotten = Forgotten("t2d-1", "t2d", "a" * 64, "b" * 64, "c" * 64, True, 0.1, 0.2)
    [record] = record_forgettings(run.id, [forgotten], kind="chronic", after=None, url=url)
    assert forgettings_of(run.id, url=url) == [record]
    dispose_engines()
    engine = _plain_engine(url)
    try:
        with engine.begin() as connection:
            migrations.downgrade(connection, "0003")
        assert "forgettings" not in _schema(url) and _version_table(url) == ["0003"]
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT name FROM runs").scalars().all() == ["kept"]
    finally:
        engine.dispose()


# --- Stores behind and ahead of head ----------------------------------------------------------------


def test_a_store_behind_head_is_refused_with_one_line(any_store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = any_store_url
    _migrate(url, "0001")
    expected = _refused_store(
        url, "0001", f"this code needs revision {HEAD}: run `decisions db upgrade` with DECISIONS_DB_URL set to it"
    )

    code, out, err = _cli(monkeypatch, url, "runs", "list")
    assert (code, out) == (2, "")
    assert _one_line(err) == f"error: {expected}"

    _upgraded_by_the_cli(monkeypatch, url, "0001")
    assert list_runs(url=url) == []


def test_a_store_ahead_of_head_is_refused(any_store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = any_store_url
    get_engine(url)
    dispose_engines()
    _execute(url, "UPDATE alembic_version SET version_num = '0099'")
    expected = _refused_store(
        url, "0099", f"newer than this code knows (its newest is {HEAD}): use the decisions release that wrote it, "
        "or a newer one"
    )
    with pytest.raises(InputError) as info:
        db.upgrade_store(url)
    assert str(info.value) == expected
    assert _version_table(url) == ["0099"]

    code, out, err = _cli(monkeypatch, url, "db", "upgrade")
    assert (code, out, _one_line(err)) == (2, "", f"error: {expected}")
    code, out, _ = _cli(monkeypatch, url, "db", "current")
    assert (code, _one_line(out)) == (
        0, f"'{db.masked_url(url)}': revision 0099, head {HEAD} (ahead of this code: use the release that wrote it)"
    )


def test_db_commands_on_an_empty_store_and_at_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert _cli(monkeypatch, url, "db", "current")[:2] == (
        0, f"'{url}': revision empty, head {HEAD} (empty: built at head on first use)\n"
    )
    assert _cli(monkeypatch, url, "db", "upgrade")[:2] == (0, f"built '{url}' at revision {HEAD} (it was empty)\n")
    assert _cli(monkeypatch, url, "db", "upgrade")[:2] == (0, f"'{url}' is already at revision {HEAD} (head)\n")
    assert _cli(monkeypatch, url, "db", "current")[:2] == (0, f"'{url}': revision {HEAD}, head {HEAD} (at head)\n")


def test_db_commands_name_an_unusable_store_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for command_name in ("current", "upgrade"):
        code, out, err = _cli(monkeypatch, f"sqlite:///{blocker / 'runs.db'}", "db", command_name)
        assert (code, out) == (2, "")
        assert _one_line(err) == (
            f"error: DECISIONS_DB_URL: 'sqlite:///{blocker / 'runs.db'}': "
            f"cannot create the SQLite folder: {blocker} is a file, not a folder"
        )


# --- Stores made before migrations ------------------------------------------------------------------


def test_the_legacy_fixture_is_a_store_before_migrations() -> None:
    assert _version_table(f"sqlite:///{LEGACY_STORE}") == []
    with sqlite3.connect(LEGACY_STORE) as connection:
        counts = [connection.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in
                  ("runs", "metrics", "artifacts", "deployments")]
    connection.close()
    assert counts == [3, 6, 3, 1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_db_upgrade_migrates_a_store_made_before_migrations_and_keeps_its_rows(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = _legacy_store(backend, request, tmp_path)
    code, out, err = _cli(monkeypatch, url, "runs", "list")
    assert (code, out) == (2, "")
    assert _one_line(err) == (
        f"error: DECISIONS_DB_URL: '{db.masked_url(url)}': the store was created before migrations, "
        f"this code needs revision {HEAD}: run `decisions db upgrade` with DECISIONS_DB_URL set to it"
    )
    _upgraded_by_the_cli(monkeypatch, url, "created before migrations")

    runs = {run.id: run for run in list_runs(limit=None, url=url)}
    assert {i: (r.kind, r.name, r.status, r.sweep_id) for i, r in runs.items()} == {
        1: ("gas_storage", "legacy baseline", RunStatus.SUCCEEDED, "sw-legacy"),
        2: ("utility", "legacy failure", RunStatus.FAILED, None),
        3: ("pension", "legacy interrupted", RunStatus.INTERRUPTED, "sw-legacy"),
    }
    assert runs[1].config == {"seed": 7, "scenario": {"days": 30}}
    assert [(m.name, m.value, m.step) for m in runs[1].metrics] == [
        ("loss", 3.0, 0), ("loss", 2.0, 1), ("loss", 1.5, 2), ("value", 1.25e6, None), ("job_seconds", 4.5, None)
    ]
    assert [(m.name, m.value, m.step) for m in runs[2].metrics] == [("loss", None, 0)]
    assert runs[2].error == "RuntimeError: diverged"
    assert [(a.name, a.path, a.media_type, a.url) for a in runs[1].artifacts + runs[3].artifacts] == [
        ("report", "/srv/decisions/artifacts/run-1/report.json", "application/json", None),
        ("policy", "/srv/decisions/artifacts/run-1/policy.msgpack", "application/msgpack", None),
        ("curve", "/srv/decisions/artifacts/run-3/curve.png", "image/png", None),
    ]
    assert runs[1].created_at.tzinfo is not None and runs[1].finished_at > runs[1].created_at
    assert [(d.run_id, d.label, d.settings) for d in deployments.history("gas_storage", url=url)] == [
        (1, "legacy baseline policy", {"method": "snapo"})
    ]
    new = start_run("toy", "after the upgrade", {}, url=url)
    assert new == 4
    add_artifact(new, "report", tmp_path / "report.json", url=url)
    assert get_run(new, url=url).artifacts[0].url == (tmp_path / "report.json").as_uri()
    code, out, _ = _cli(monkeypatch, url, "db", "upgrade")
    assert _one_line(out) == f"'{db.masked_url(url)}' is already at revision {HEAD} (head)"


def test_an_older_legacy_store_gains_the_missing_columns_tables_and_indexes(tmp_path: Path) -> None:
    """A store from before heartbeats and deployments: only ``runs``, without ``pid``/``heartbeat_at``."""
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        connection.execute(
            "CREATE TABLE runs (id INTEGER NOT NULL, kind VARCHAR(64) NOT NULL, name VARCHAR(255) NOT NULL, "
            "status VARCHAR(16) NOT NULL, config JSON NOT NULL, package_version VARCHAR(64) NOT NULL, "
            "git_commit VARCHAR(64), host VARCHAR(255) NOT NULL, created_at DATETIME NOT NULL, started_at DATETIME, "
            "finished_at DATETIME, duration_seconds FLOAT, error TEXT, sweep_id VARCHAR(64), PRIMARY KEY (id))"
        )
        connection.execute(
            "INSERT INTO runs (kind, name, status, config, package_version, host, created_at, started_at) "
            "VALUES ('toy', 'old', 'succeeded', '{}', '0.0', 'old-host', '2020-01-01 00:00:00', '2020-01-01 00:00:00')"
        )
    connection.close()
    url = f"sqlite:///{path}"
    assert db.upgrade_store(url) == (None, HEAD)
    fresh = f"sqlite:///{tmp_path / 'fresh.db'}"
    get_engine(fresh)
    assert _schema(url) == _schema(fresh)
    assert (get_run(1, url=url).name, get_run(1, url=url).pid) == ("old", None)


def test_a_store_without_a_revision_that_does_not_match_0001_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "odd.db"
    shutil.copy(LEGACY_STORE, path)
    with sqlite3.connect(path) as connection:
        connection.execute("ALTER TABLE runs ADD COLUMN colour TEXT")
    connection.close()
    url = f"sqlite:///{path}"
    with pytest.raises(InputError) as info:
        db.upgrade_store(url)
    assert str(info.value) == (
        f"DECISIONS_DB_URL: '{url}': the store was created before migrations but does not match revision 0001: "
        "table runs has columns revision 0001 does not: colour"
    )
    assert _version_table(url) == []
    assert "url" not in {c[0] for c in _schema(url)["artifacts"]["columns"]}


# --- Many processes at once --------------------------------------------------------------------------


def test_concurrent_processes_create_the_store_and_lose_nothing(any_store_url: str, tmp_path: Path) -> None:
    """8 processes x 25 runs start together on an empty store (they also race to build the schema)."""
    url, root = any_store_url, (tmp_path / "artifacts").as_uri()
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    workers = [ctx.Process(target=record_runs, args=(url, root, w, barrier)) for w in range(WRITERS)]
    start = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=240)
    elapsed = time.monotonic() - start
    assert [w.exitcode for w in workers] == [0] * WRITERS
    assert elapsed < 120, elapsed

    runs = list_runs(limit=None, url=url)
    expected_names = sorted(f"w{w}-{i}" for w in range(WRITERS) for i in range(RUNS_PER_WRITER))
    assert sorted(run.name for run in runs) == expected_names  # none lost, none twice
    assert {run.status for run in runs} == {RunStatus.SUCCEEDED}
    assert list_runs(status="running", url=url) == []
    assert all(len(run.metrics) == METRICS_PER_RUN and len(run.artifacts) == 1 for run in runs)
    assert all(artifacts.read_bytes(run.artifacts[0].url) == run.name.encode() for run in runs)
    with session_scope(url, read_only=True) as session:
        counts = [session.scalar(sa.select(sa.func.count()).select_from(t)) for t in (Run, Metric, Artifact)]
    total = WRITERS * RUNS_PER_WRITER
    assert counts == [total, total * METRICS_PER_RUN, total]
    assert _version_table(url) == [HEAD]
