"""``decisions app``: the Streamlit server as a child process that stops with this one.

SIGTERM and SIGINT (Ctrl-C) are passed on to the server, which is waited for (and killed if it does
not stop in ``STOP_GRACE_S``), so no server is left serving on the port.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from decisions.errors import InputError

STOP_GRACE_S = 10.0
"""How long the server has to stop after SIGTERM before it is killed."""

HOME = Path(__file__).resolve().parent.parent / "apps" / "Home.py"
"""The app's entry page in a source checkout."""


def streamlit_command(port: int, address: str, home: Path = HOME) -> list[str]:
    """The command that serves the app at ``address:port``.

    Raises:
        InputError: on ``port`` outside 1..65535, on ``address`` when empty or holding spaces, on ``app``
            when ``home`` does not exist.
    """
    if not 0 < port < 65536:
        raise InputError("port", f"must be from 1 to 65535, got {port}")
    if not address.strip() or any(c.isspace() for c in address.strip()):
        raise InputError("address", f"expected a host name or IP address, got {address!r}")
    if not home.exists():
        raise InputError("app", f"{home} not found (run from a source checkout)")
    return [sys.executable, "-m", "streamlit", "run", str(home), "--server.port", str(port),
            "--server.address", address.strip(), "--browser.gatherUsageStats", "false",
            "--client.toolbarMode", "viewer"]


def serve(command: Sequence[str]) -> int:
    """Run ``command`` until it exits; SIGTERM or SIGINT here stops it too. Its exit code."""
    child = subprocess.Popen(list(command))
    stopping: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        del frame
        stopping.append(signum)
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            code = child.wait()
        except BaseException:
            _stop(child)
            raise
        if stopping:
            code = 128 + stopping[0]
        return code
    finally:
        _stop(child)
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _stop(child: subprocess.Popen[bytes]) -> None:
    """Terminate ``child`` if it still runs; kill it when it does not stop within ``STOP_GRACE_S``."""
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
