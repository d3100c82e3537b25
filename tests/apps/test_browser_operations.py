"""The Today panel and the Monitor page in a real (headless Chromium) browser: a chronic-care asset with a
deployed policy and recorded decisions and outcomes (drifting after the 40th), its page's Today panel,
the Monitor page's alarm and charts (none flat), each page's screenshot kept in the test's folder (and in
``DECISIONS_KEEP_SCREENSHOTS=<folder>`` when set)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from decisions.platform import registry
from decisions.platform.operations import decide, deploy
from decisions.platform.record import execute_recorded
from decisions.store import create_asset, dispose_engines, record_outcome
from tests.apps.browser import CHROMIUM, chromium_tab, keep_screenshots, streamlit_app
from tests.apps.test_browser_pages import CHARTS, ERRORS, MIN_PLOT_PX, PAGE_HEIGHT, WIDTH

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH (apt-get install chromium)")]

TODAY_DRAWN = """(() => { const t = document.body ? document.body.innerText : "";
  return t.includes("Today") && t.includes("Clinic East runs") && !t.includes("Running..."); })()"""
MONITOR_DRAWN = """(() => { const t = document.body ? document.body.innerText : "";
  return t.includes("Clinic East: ALARM") && !t.includes("Running...") && !t.includes("Calibrating"); })()"""


def _asset_with_history(url: str, folder: Path) -> int:
    """A recorded chronic-care run deployed for "Clinic East", 80 decisions and their outcomes (the band
    seen at the next visit), worse than expected from the 41st on; the run id."""
    domain = registry.get("chronic")
    job = domain.prepare(domain.smoke_job(), folder)
    report = domain.run_job(job)
    run_id = execute_recorded("chronic", job.name, job.config(), lambda: report, url=url, output_dir=str(folder / "out"))
    create_asset("Clinic East", "chronic", {}, url=url)
    deploy("Clinic East", run_id, chosen_by="ana", url=url)
    rng = np.random.default_rng(0)
    state = {"disease": "t2d", "visit": 0, "band": 2, "step": 1, "adherent": True, "side_effect": False,
             "months_since_intensification": 6}
    for i in range(80):
        answer = decide("Clinic East", [state], decided_by="ana", url=url)[0]
        low, high = answer.decision.interval or (answer.decision.expected - 1, answer.decision.expected + 1)
        spread = max((high - low) / 3.92, 0.05)
        realised = answer.decision.expected + spread * rng.normal(2.0 if i >= 40 else 0.0)
        record_outcome(answer.decision_id, {}, float(realised), recorded_by="ana", url=url)
    return run_id


CLICK_DECIDE = """(() => { const b = Array.from(document.querySelectorAll("button")).find(b => b.innerText.trim() === "Decide");
  if (b) { b.click(); return true; } return false; })()"""
DECIDED = """(() => { const t = document.body ? document.body.innerText : "";
  return t.includes("Expected outcome") && t.includes("Why: the value of each allowed action"); })()"""


def _capture(tab, url: str, ready: str, shot: Path, *, decide_first: bool = False) -> tuple[list[dict], list[str]]:
    tab.resize(WIDTH, 1800)
    tab.open(url)
    tab.wait_for(ready, 120, f"{url} drawn")
    if decide_first:
        tab.wait_for(CLICK_DECIDE, 30, "the Decide button")
        tab.wait_for(DECIDED, 60, "today's decision drawn")
    tab.wait_for(f"({CHARTS}).every(c => c.drawn)", 60, "charts drawn")
    height = min(max(int(tab.evaluate(PAGE_HEIGHT) or 0), 1800), 16_000)
    tab.resize(WIDTH, height)
    time.sleep(2.0)
    tab.screenshot(shot)
    return tab.evaluate(CHARTS), tab.evaluate(ERRORS)


def test_the_today_panel_and_the_monitor_page_in_a_browser(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        run_id = _asset_with_history(url, tmp_path)
    finally:
        dispose_engines()
    env = {**os.environ, "DECISIONS_DB_URL": url}
    env.pop("DECISIONS_APP_PASSWORD", None)
    problems, shots = [], []
    with streamlit_app(env, tmp_path / "streamlit.log") as base, chromium_tab(tmp_path / "chromium") as tab:
        for name, page, ready in (("today", f"{base}/Chronic_care?run={run_id}", TODAY_DRAWN),
                                  ("monitor", f"{base}/Monitor", MONITOR_DRAWN)):
            shot = tmp_path / f"{name}.png"
            charts, errors = _capture(tab, page, ready, shot, decide_first=name == "today")
            shots.append(shot)
            problems += [f"{name}: chart {c['index']} is {c['plot_width']:.0f} x {c['plot_height']:.0f} px"
                         for c in charts if min(c["plot_height"], c["plot_width"]) < MIN_PLOT_PX]
            problems += [f"{name}: error shown: {e}" for e in errors if not e.startswith("Clinic East: ALARM")]
            if name == "monitor" and not any(e.startswith("Clinic East: ALARM") for e in errors):
                problems.append("monitor: no alarm shown for the drifting asset")
            if name == "monitor" and len(charts) < 2:
                problems.append("monitor: the detector's and the residuals' charts are missing")
    keep_screenshots(shots, "operations_")
    print("screenshots:", *shots)
    assert all(s.stat().st_size > 10_000 for s in shots)
    assert not problems, "\n".join(problems)
