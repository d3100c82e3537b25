"""A throwaway PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` in a fresh ``/tmp`` folder.

``start_server()`` makes a cluster (``initdb -A trust --no-sync`` as the ``postgres`` user when run
as root, since ``initdb`` refuses root), starts it on a free loopback port with its socket in the
same folder, and returns a ``PgServer`` whose ``url`` is a psycopg 3 URL of database ``postgres``;
``PgServer.stop`` stops it and removes the folder (``start_server`` registers that with ``atexit``
too). It never touches an existing cluster (Debian's ``15/main`` on port 5432).

When it cannot start (no PostgreSQL binaries, no psycopg, initdb or the server failing), it raises
``PgUnavailable`` with the reason in one line; the ``postgres_url`` fixture turns that into
``pytest.skip(reason)``.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

BIN_DIRS = ("/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin")
"""Where Debian installs ``initdb`` and ``pg_ctl`` (not on ``PATH``); the newest first."""

START_TIMEOUT_S = 60
"""How long ``pg_ctl start -w`` (and ``initdb``) may take on a loaded machine."""


class PgUnavailable(RuntimeError):
    """PostgreSQL cannot be started here; the message says why, in one line."""


@dataclass
class PgServer:
    """A running throwaway server."""

    url: str
    """``postgresql+psycopg://postgres@127.0.0.1:<port>/postgres``."""
    folder: Path
    """Holds the data directory, the socket and the log; removed by ``stop``."""
    pg_ctl: str
    data: Path
    stopped: bool = field(default=False)

    def stop(self) -> None:
        """Stop the server (immediate shutdown: nothing in it is kept) and remove its folder; a second call does nothing."""
        if self.stopped:
            return
        self.stopped = True
        _as_postgres([self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"], check=False)
        shutil.rmtree(self.folder, ignore_errors=True)


def find_binaries() -> tuple[str, str]:
    """``initdb`` and ``pg_ctl`` of the newest installed PostgreSQL.

    Raises:
        PgUnavailable: none is installed.
    """
    for directory in BIN_DIRS:
        initdb, pg_ctl = Path(directory, "initdb"), Path(directory, "pg_ctl")
        if initdb.is_file() and pg_ctl.is_file():
            return str(initdb), str(pg_ctl)
    initdb_on_path, pg_ctl_on_path = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb_on_path and pg_ctl_on_path:
        return initdb_on_path, pg_ctl_on_path
    raise PgUnavailable(f"PostgreSQL is not installed (no initdb/pg_ctl in {', '.join(BIN_DIRS)} or on PATH)")


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago (bound to port 0, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _as_postgres(command: list[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``command`` as the ``postgres`` user when this process is root (else as itself)."""
    program = Path(command[0]).name
    if os.geteuid() == 0:
        command = ["su", "postgres", "-s", "/bin/sh", "-c", shlex.join(command)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=START_TIMEOUT_S, check=False)
    if check and completed.returncode != 0:
        output = " ".join((completed.stderr or completed.stdout).split())[-300:]
        raise PgUnavailable(f"{program} failed (exit {completed.returncode}): {output}")
    return completed


def start_server() -> PgServer:
    """Start a throwaway PostgreSQL server; see the module docstring.

    Returns:
        The running server (stopped and removed at exit, or earlier by ``stop``).

    Raises:
        PgUnavailable: it cannot start here (the reason in one line).
    """
    try:
        import psycopg  # noqa: F401
    except ImportError:
        raise PgUnavailable('psycopg is not installed (pip install -e ".[postgres]")') from None
    initdb, pg_ctl = find_binaries()
    folder = Path(tempfile.mkdtemp(prefix="decisions-pg-"))
    data = folder / "data"
    try:
        if os.geteuid() == 0:
            shutil.chown(folder, "postgres", "postgres")
        _as_postgres([initdb, "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        port = free_port()
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        _as_postgres([pg_ctl, "-D", str(data), "-l", str(folder / "server.log"), "-o", options, "-w", "start"])
    except (PgUnavailable, OSError, subprocess.SubprocessError, LookupError) as exc:
        log = folder / "server.log"
        tail = " ".join(log.read_text(errors="replace").split())[-300:] if log.is_file() else ""
        _as_postgres([pg_ctl, "-D", str(data), "-m", "immediate", "stop"], check=False)
        shutil.rmtree(folder, ignore_errors=True)
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise PgUnavailable(f"PostgreSQL could not start: {reason}{f' (log: {tail})' if tail else ''}") from exc
    server = PgServer(f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres", folder, pg_ctl, data)
    atexit.register(server.stop)
    return server


def reset_database(url: str) -> None:
    """Drop everything in the ``public`` schema of the server at ``url`` (a fresh, empty store).

    Args:
        url: A ``postgresql+psycopg://`` URL of a throwaway server.
    """
    from sqlalchemy import create_engine, text
    from sqlalchemy.pool import NullPool

    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            connection.execute(text("DROP SCHEMA public CASCADE"))
            connection.execute(text("CREATE SCHEMA public"))
    finally:
        engine.dispose()
