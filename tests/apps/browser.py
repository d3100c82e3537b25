"""Headless Chromium driven through the DevTools protocol, and a Streamlit server of the app, for browser tests.

Chromium's ``--screenshot`` does not wait for Streamlit, which draws a page from websocket messages,
so a test opens a tab, waits until a JavaScript condition holds, then measures or captures the page.
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.apps.conftest import HOME

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
"""The Chromium binary, or None (the browser tests are then skipped)."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(check: Callable[[], Any], timeout: float, what: str, process: subprocess.Popen) -> Any:
    """Call ``check`` until it returns a truthy value (``OSError`` counts as not yet); raise after ``timeout``
    seconds, or as soon as ``process`` has exited."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what}: process exited early with code {process.returncode}")
        try:
            result = check()
        except OSError:
            result = None
        if result:
            return result
        time.sleep(0.25)
    raise TimeoutError(f"{what}: not ready within {timeout} s")


def port_open(port: int) -> bool:
    """Whether something listens on 127.0.0.1:``port``."""
    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True


def stop(process: subprocess.Popen) -> None:
    """Stop a process and everything it started (it leads its own process group)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@contextmanager
def streamlit_app(env: Mapping[str, str], log_path: Path) -> Iterator[str]:
    """Serve the app (``apps/Home.py``) on a free port of 127.0.0.1 with ``env``; yields its base URL."""
    port = free_port()
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", HOME, "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            env=dict(env), stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            wait_until(lambda: port_open(port), 60, "streamlit server", server)
            yield f"http://127.0.0.1:{port}"
        finally:
            stop(server)


class Tab:
    """One Chromium tab over the DevTools protocol: evaluate JavaScript, resize, capture."""

    def __init__(self, socket: Any, browser: subprocess.Popen) -> None:
        self._ws, self._browser, self._ids = socket, browser, itertools.count(1)

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result (events in between are skipped)."""
        message_id = next(self._ids)
        self._ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv(timeout=30))
            if reply.get("id") == message_id:
                assert "error" not in reply, reply
                return reply["result"]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def open(self, url: str) -> None:
        """Navigate to ``url``."""
        self.call("Page.navigate", url=url)

    def wait_for(self, expression: str, timeout: float, what: str) -> Any:
        """Wait until a JavaScript expression is truthy; its value."""
        return wait_until(lambda: self.evaluate(expression), timeout, what, self._browser)

    def resize(self, width: int, height: int) -> None:
        """Set the viewport's size in CSS pixels."""
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1,
                  mobile=False)

    def screenshot(self, path: Path) -> Path:
        """Save the viewport as a PNG."""
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))
        return path


@contextmanager
def chromium_tab(profile: Path, width: int = 1400, height: int = 1800) -> Iterator[Tab]:
    """Start headless Chromium (its own profile folder) and yield one tab of the given viewport size."""
    from websockets.sync.client import connect

    assert CHROMIUM is not None, "chromium is not on PATH"
    port = free_port()
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={width},{height}",
         f"--remote-debugging-port={port}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        devtools = f"http://127.0.0.1:{port}"
        wait_until(lambda: urllib.request.urlopen(f"{devtools}/json/version", timeout=1).read(), 20,
                   "chromium devtools", browser)
        request = urllib.request.Request(f"{devtools}/json/new?{urllib.parse.quote('about:blank', safe='')}",
                                         method="PUT")
        target = json.loads(urllib.request.urlopen(request, timeout=5).read())
        with connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=10) as ws:
            tab = Tab(ws, browser)
            tab.resize(width, height)
            yield tab
    finally:
        stop(browser)


def keep_screenshots(shots: list[Path], prefix: str = "") -> None:
    """Copy ``shots`` to ``$DECISIONS_KEEP_SCREENSHOTS`` (made if need be) as ``<prefix><name>``, when it is set."""
    keep = os.environ.get("DECISIONS_KEEP_SCREENSHOTS")
    if not keep:
        return
    Path(keep).mkdir(parents=True, exist_ok=True)
    for shot in shots:
        shutil.copy(shot, Path(keep) / f"{prefix}{shot.name}")
