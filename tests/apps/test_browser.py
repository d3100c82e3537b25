"""The app served by ``streamlit run`` renders the gas storage page in a real (headless Chromium) browser.

The browser is driven through the DevTools protocol (``tests.apps.browser``): the test waits until the
form and its chart are on the page, then captures the screenshot.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from tests.apps.browser import CHROMIUM, chromium_tab, streamlit_app

pytestmark = pytest.mark.browser

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WIDTH, HEIGHT = 1400, 1800
PAGE_READY = """(() => {
  const text = document.body ? document.body.innerText : "";
  return text.includes("Facility") && text.includes("Price model")
    && document.querySelectorAll('[data-testid="stNumberInput"]').length >= 9
    && document.querySelector('[data-testid="stVegaLiteChart"] canvas, [data-testid="stVegaLiteChart"] svg') !== null
    && !text.includes("Running...");
})()"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH (apt-get install chromium)")
def test_gas_storage_page_screenshot_is_not_blank(tmp_path: Path) -> None:
    env = {**os.environ, "DECISIONS_DB_URL": f"sqlite:///{tmp_path / 'runs.db'}"}
    env.pop("DECISIONS_APP_PASSWORD", None)
    log_path = tmp_path / "streamlit.log"
    shot = tmp_path / "gas.png"
    with streamlit_app(env, log_path) as base, chromium_tab(tmp_path / "chromium", WIDTH, HEIGHT) as tab:
        tab.open(f"{base}/Gas_storage")
        tab.wait_for(PAGE_READY, 45, "gas storage page")
        time.sleep(1.0)  # let the chart finish painting
        tab.screenshot(shot)
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
