"""A bad ``DECISIONS_DB_URL`` gives one line naming the variable, the masked value and the problem.

Every case goes through the CLI (``runs list``, ``run``) with ``CliRunner``: exit code 2, exactly
one line on stderr, no traceback, and never the password.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.errors import InputError
from decisions.store import db, dispose_engines, get_engine, list_runs
from tests.helpers import tiny_gas_spec

runner = CliRunner()

PASSWORD = "s3cretpw"

JOB = tiny_gas_spec()


@pytest.fixture(autouse=True)
def _fresh_engines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No cached engine before or after; the default store (if ever used) lives under tmp_path."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    dispose_engines()
    yield
    dispose_engines()


def _one_line_db_error(monkeypatch: pytest.MonkeyPatch, args: list[str], url: str, *needles: str) -> str:
    """Run the CLI with ``DECISIONS_DB_URL=url``; check one stderr line, exit 2; return the line."""
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    line = lines[0]
    assert line.startswith("error: DECISIONS_DB_URL: "), line
    assert PASSWORD not in result.output
    for needle in needles:
        assert needle in line, line
    return line


def test_malformed_url(monkeypatch: pytest.MonkeyPatch) -> None:
    _one_line_db_error(monkeypatch, ["runs", "list"], "::::", "'::::'", "not a database URL")


def test_malformed_url_masks_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    _one_line_db_error(monkeypatch, ["runs", "list"], f"sqlite://me:{PASSWORD}@host:notaport/db", "me:***@", "not a database URL")


def test_unknown_scheme(monkeypatch: pytest.MonkeyPatch) -> None:
    _one_line_db_error(monkeypatch, ["runs", "list"], "foo://x", "'foo://x'", "unknown database kind 'foo'")


def test_unknown_driver_masks_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    _one_line_db_error(
        monkeypatch, ["runs", "list"], f"postgresql+nosuch://u:{PASSWORD}@localhost/db", "u:***@localhost", "'postgresql+nosuch'"
    )


def test_sqlite_path_under_a_regular_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "hosts"
    blocker.write_text("not a folder\n")
    line = _one_line_db_error(monkeypatch, ["runs", "list"], f"sqlite:///{blocker / 'runs.db'}", "is a file, not a folder")
    assert str(blocker) in line


def test_sqlite_path_under_etc_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    if not Path("/etc/hosts").is_file():
        pytest.skip("no /etc/hosts file")
    _one_line_db_error(monkeypatch, ["runs", "list"], "sqlite:////etc/hosts/runs.db", "/etc/hosts is a file, not a folder")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        _one_line_db_error(monkeypatch, ["runs", "list"], f"sqlite:///{folder / 'runs.db'}", "could not connect")
    finally:
        folder.chmod(0o755)


def test_unwritable_folder_even_for_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """``/proc`` takes no new files, not even from root: the same path as a read-only folder."""
    if not Path("/proc/self").is_dir():
        pytest.skip("no /proc")
    _one_line_db_error(monkeypatch, ["runs", "list"], "sqlite:////proc/runs.db", "could not connect", "unable to open database file")


def test_database_path_is_a_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _one_line_db_error(monkeypatch, ["runs", "list"], f"sqlite:///{tmp_path}", "could not connect")


def test_not_a_database_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not SQLite" * 100)
    _one_line_db_error(monkeypatch, ["runs", "list"], f"sqlite:///{junk}", "could not connect", "not a database")


@pytest.fixture
def no_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    """psycopg hidden from this test (``import psycopg`` raises ImportError), installed or not."""
    for name in [m for m in sys.modules if m == "psycopg" or m.startswith("psycopg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)


@pytest.mark.usefixtures("no_psycopg")
def test_missing_postgres_driver_names_the_extra() -> None:
    with pytest.raises(InputError) as info:
        get_engine(f"postgresql+psycopg://u:{PASSWORD}@localhost/db")
    assert info.value.field == "DECISIONS_DB_URL"
    assert str(info.value) == (
        "DECISIONS_DB_URL: 'postgresql+psycopg://u:***@localhost/db': "
        'the PostgreSQL driver psycopg is not installed: pip install -e ".[postgres]"'
    )


@pytest.mark.usefixtures("no_psycopg")
def test_missing_postgres_driver_through_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    _one_line_db_error(
        monkeypatch, ["runs", "list"], f"postgresql+psycopg://u:{PASSWORD}@localhost/db",
        "'postgresql+psycopg://u:***@localhost/db'", "psycopg is not installed: pip install -e",
    )


@pytest.mark.usefixtures("no_psycopg")
def test_cli_prints_the_extra_literally(monkeypatch: pytest.MonkeyPatch) -> None:
    _one_line_db_error(
        monkeypatch, ["runs", "list"], "postgresql+psycopg://u@localhost/db", 'pip install -e ".[postgres]"'
    )


def test_server_refusing_connections_gives_first_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A driver error on connect: ``could not connect:`` and only the first line of its message."""
    real_create_engine = db.create_engine

    def refuse() -> None:
        raise sqlite3.OperationalError(
            'connection failed: connection to server at "127.0.0.1", port 1 failed: Connection refused\n'
            "\tIs the server running on that host and accepting TCP/IP connections?"
        )

    def fake_create_engine(url: object, **kwargs: object) -> object:
        return real_create_engine("sqlite://", creator=refuse)

    monkeypatch.setattr(db, "create_engine", fake_create_engine)
    line = _one_line_db_error(
        monkeypatch, ["runs", "list"], f"postgresql+psycopg://u:{PASSWORD}@localhost:1/db",
        "u:***@localhost:1/db", "could not connect: connection failed:", "Connection refused",
    )
    assert "Is the server running" not in line


def test_run_command_stops_before_any_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``decisions run`` with a bad store: exit 2 before any job starts, no artifacts written."""
    spec = tmp_path / "job.toml"
    spec.write_text(JOB)
    _one_line_db_error(monkeypatch, ["run", str(spec)], "foo://x", "unknown database kind 'foo'")
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("run-*"))


def test_sweep_stops_before_any_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(JOB + '\n[sweep]\n"evaluation.paths" = [16, 32]\n')
    _one_line_db_error(monkeypatch, ["run", "--workers", "1", str(spec)], "foo://x", "unknown database kind 'foo'")


def test_failed_attempt_is_not_cached_and_leaves_nothing(tmp_path: Path) -> None:
    """A failed engine is neither cached nor leaves tables or folders behind; fixing the cause works."""
    blocker = tmp_path / "store"
    blocker.write_text("in the way\n")
    url = f"sqlite:///{blocker / 'sub' / 'runs.db'}"
    with pytest.raises(InputError) as info:
        get_engine(url)
    assert info.value.field == "DECISIONS_DB_URL"
    assert url not in db._engines
    assert blocker.read_text() == "in the way\n"
    blocker.unlink()
    assert list_runs(url=url) == []
    assert (blocker / "sub" / "runs.db").is_file()


def test_password_in_driver_message_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    real_create_engine = db.create_engine

    def refuse() -> None:
        raise sqlite3.OperationalError(f"bad login u:{PASSWORD}")

    monkeypatch.setattr(db, "create_engine", lambda url, **kw: real_create_engine("sqlite://", creator=refuse))
    with pytest.raises(InputError) as info:
        get_engine(f"postgresql+psycopg://u:{PASSWORD}@h/db")
    assert PASSWORD not in str(info.value)
    assert "could not connect: bad login u:***" in str(info.value)


def test_masked_url() -> None:
    assert db.masked_url(f"postgresql+psycopg://u:{PASSWORD}@h/db") == "postgresql+psycopg://u:***@h/db"
    assert db.masked_url(f"x://u:{PASSWORD}@h:port/db") == "x://u:***@h:port/db"
    assert db.masked_url("sqlite:///tmp/runs.db") == "sqlite:///tmp/runs.db"
