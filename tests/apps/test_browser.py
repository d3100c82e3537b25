"""The app served by ``streamlit run`` renders the gas storage page in a real (headless Chromium) browser.

Chromium's ``--screenshot`` with ``--virtual-time-budget`` does not wait for
Streamlit, which draws the page from websocket messages (virtual time runs
out before the script has run), so the test drives Chromium through the
DevTools protocol instead: it waits until the form and its chart are on the
page, then captures the screenshot.
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
from pathlib import Path

import pytest

from tests.apps.conftest import HOME

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WIDTH, HEIGHT = 1400, 1800
PAGE_READY = """(() => {
  const text = document.body ? document.body.innerText : "";
  return text.includes("Facility") && text.includes("Price model")
    && document.querySelectorAll('[data-testid="stNumberInput"]').length >= 9
    && document.querySelector('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg') !== null
    && !text.includes("Running...");
})()"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_until(check, timeout: float, what: str, process: subprocess.Popen):
    """Call ``check`` until it returns a truthy value (errors count as not yet); raise after ``timeout``."""
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


def _port_open(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=0.5):
        return True


def _stop(process: subprocess.Popen) -> None:
    """Stop a process and everything it started (it leads its own process group)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _screenshot(url: str, shot: Path, profile: Path, timeout: float = 45) -> None:
    """Open ``url`` in headless Chromium, wait until the gas page is drawn and save a PNG screenshot."""
    from websockets.sync.client import connect

    port = _free_port()
    browser = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         "--disable-background-networking", "--disable-component-update", "--no-first-run",
         "--hide-scrollbars", f"--user-data-dir={profile}", f"--window-size={WIDTH},{HEIGHT}",
         f"--remote-debugging-port={port}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        devtools = f"http://127.0.0.1:{port}"
        _wait_until(lambda: urllib.request.urlopen(f"{devtools}/json/version", timeout=1).read(), 20,
                    "chromium devtools", browser)
        new_tab = urllib.request.Request(f"{devtools}/json/new?{urllib.parse.quote(url, safe='')}", method="PUT")
        target = json.loads(urllib.request.urlopen(new_tab, timeout=5).read())
        with connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=10) as ws:
            ids = itertools.count(1)

            def call(method: str, **params):
                message_id = next(ids)
                ws.send(json.dumps({"id": message_id, "method": method, "params": params}))
                while True:
                    reply = json.loads(ws.recv(timeout=20))
                    if reply.get("id") == message_id:
                        assert "error" not in reply, reply
                        return reply["result"]

            call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=HEIGHT, deviceScaleFactor=1, mobile=False)
            ready = lambda: call("Runtime.evaluate", expression=PAGE_READY, returnByValue=True)["result"].get("value")  # noqa: E731
            _wait_until(ready, timeout, "gas storage page", browser)
            time.sleep(1.0)  # let the chart finish painting
            shot.write_bytes(base64.b64decode(call("Page.captureScreenshot", format="png")["data"]))
    finally:
        _stop(browser)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH (apt-get install chromium)")
def test_gas_storage_page_screenshot_is_not_blank(tmp_path: Path) -> None:
    port = _free_port()
    env = {**os.environ, "DECISIONS_DB_URL": f"sqlite:///{tmp_path / 'runs.db'}"}
    env.pop("DECISIONS_APP_PASSWORD", None)
    log_path = tmp_path / "streamlit.log"
    shot = tmp_path / "gas.png"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", HOME, "--server.headless", "true",
             "--server.port", str(port), "--server.address", "127.0.0.1",
             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
        try:
            _wait_until(lambda: _port_open(port), 30, "streamlit server", server)
            _screenshot(f"http://127.0.0.1:{port}/Gas_storage", shot, tmp_path / "chromium")
        finally:
            _stop(server)
    assert shot.is_file(), log_path.read_text()
    if os.environ.get("DECISIONS_KEEP_SCREENSHOT"):  # to look at it: DECISIONS_KEEP_SCREENSHOT=/tmp/gas.png
        shutil.copy(shot, os.environ["DECISIONS_KEEP_SCREENSHOT"])
    data = shot.read_bytes()
    assert data.startswith(PNG_SIGNATURE)
    assert len(data) > 20_000
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    # not blank: a good share of the pixels are not the background colour (text, inputs, the curve)
    background = pixels[-1, -1]
    assert (abs(pixels - background).sum(axis=-1) > 0.1).mean() > 0.02
