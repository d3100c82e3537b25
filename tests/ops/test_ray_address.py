"""``decisions run --backend ray --address`` to an address where no cluster answers: exit 2 with one line
naming the address, in seconds, and nothing recorded (``ray.init`` alone retries for minutes)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from decisions.errors import InputError
from decisions.platform.ray_cluster import probe_address, ray_available
from decisions.store import list_runs
from tests.helpers import tiny_gas_spec

pytestmark = pytest.mark.skipif(not ray_available(), reason='Ray is not installed (pip install -e ".[ray]")')


def _closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("scheme", ["", "ray://"])
def test_probe_refuses_a_closed_port_at_once(scheme: str) -> None:
    started = time.monotonic()
    with pytest.raises(InputError, match="address") as info:
        probe_address(f"{scheme}127.0.0.1:{_closed_port()}")
    assert "--address" in str(info.value) and time.monotonic() - started < 5


def _listener(answer: bytes | None) -> tuple[socket.socket, threading.Event]:
    """A local server that accepts connections and sends ``answer`` (None: says nothing until ``done`` is set)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    done = threading.Event()

    def serve() -> None:
        connection, _ = server.accept()
        with connection:
            if answer is not None:
                connection.sendall(answer)
            done.wait(5)

    threading.Thread(target=serve, daemon=True).start()
    return server, done


def test_probe_accepts_a_grpc_server() -> None:
    server, done = _listener(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")  # an HTTP/2 SETTINGS frame
    with server:
        probe_address(f"127.0.0.1:{server.getsockname()[1]}")
        done.set()


@pytest.mark.parametrize("answer", [None, b"HTTP/1.1 400 Bad Request\r\n\r\n"], ids=["silent", "http1"])
def test_probe_refuses_a_port_where_no_ray_answers(answer: bytes | None) -> None:
    server, done = _listener(answer)
    started = time.monotonic()
    with server, pytest.raises(InputError, match="--address"):
        probe_address(f"127.0.0.1:{server.getsockname()[1]}", timeout_s=0.5)
    done.set()
    assert time.monotonic() - started < 3


@pytest.mark.slow  # a CLI process importing Ray: about 5 s
def test_a_sweep_on_an_unreachable_cluster_exits_2_with_one_line_in_seconds(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(tiny_gas_spec() + '\n[sweep]\n"evaluation.paths" = [8, 16]\n')
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {**os.environ, "DECISIONS_DB_URL": url, "RAY_ADDRESS": ""}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "decisions.cli", "run", str(spec), "--backend", "ray", "--address", "127.0.0.1:1"],
        capture_output=True, text=True, timeout=60, env=env,
    )
    assert time.monotonic() - started < 30
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "--address" in lines[0] and "127.0.0.1:1" in lines[0], done.stderr
    if (tmp_path / "runs.db").exists():
        assert list_runs(url=url) == []
