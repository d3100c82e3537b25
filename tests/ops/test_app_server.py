"""``decisions app``: SIGTERM and SIGINT stop the server it starts; it listens on 127.0.0.1 unless told."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.cli_app import HOME, streamlit_command
from tests.helpers import wait_for

runner = CliRunner()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_app_stops_its_server(tmp_path: Path, signum: int) -> None:
    pid_file = tmp_path / "server.pid"
    server = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(120)"
    parent = subprocess.Popen(
        [sys.executable, "-c", f"import sys; from decisions.cli_app import serve; sys.exit(serve([sys.executable, '-c', {server!r}]))"],
    )
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text().strip() != "", 20, "the server to start")
        child = int(pid_file.read_text())
        parent.send_signal(signum)
        assert parent.wait(timeout=20) == 128 + signum
        wait_for(lambda: not _alive(child), 5, "the server to stop")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_the_server_listens_on_loopback_unless_an_address_is_given() -> None:
    command = streamlit_command(8501, "127.0.0.1")
    assert command[command.index("--server.address") + 1] == "127.0.0.1"
    assert command[command.index("--server.port") + 1] == "8501"
    assert "--address" in runner.invoke(app, ["app", "--help"], terminal_width=200).output
    assert 'default: 127.0.0.1' in runner.invoke(app, ["app", "--help"], terminal_width=200).output


@pytest.mark.parametrize(("args", "field"), [(["--port", "0"], "port"), (["--port", "70000"], "port"),
                                             (["--address", " "], "address")])
def test_a_bad_port_or_address_is_one_line(args: list[str], field: str) -> None:
    result = runner.invoke(app, ["app", *args])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and f"error: {field}:" in lines[0], lines


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.slow  # starts Streamlit: about 10 s
@pytest.mark.skipif(not HOME.exists(), reason="needs a source checkout")
def test_sigterm_on_decisions_app_frees_its_port(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "DECISIONS_DB_URL": f"sqlite:///{tmp_path / 'runs.db'}", "HOME": str(tmp_path)}
    parent = subprocess.Popen([sys.executable, "-m", "decisions.cli", "app", "--port", str(port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _listening(port), 60, "Streamlit to listen")
        parent.send_signal(signal.SIGTERM)
        parent.wait(timeout=30)
        time.sleep(0.5)
        assert not _listening(port)
    finally:
        if parent.poll() is None:
            parent.kill()
