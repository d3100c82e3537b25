"""Every domain page opens a recorded run of its domain in a real (headless Chromium) browser, and no chart
on it renders with zero height.

The runs are each domain's smoke spec (``DOMAIN.smoke_spec``) recorded into a temporary store, or the
store named by ``DECISIONS_BROWSER_STORE`` (a SQLite URL holding one succeeded run per domain) to skip
recording them. ``DECISIONS_KEEP_SCREENSHOTS=<folder>`` keeps each page's screenshot there.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from decisions.platform import registry
from decisions.store import RunStatus, dispose_engines, list_runs
from tests.apps.browser import CHROMIUM, Tab, chromium_tab, keep_screenshots, streamlit_app

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH (apt-get install chromium)")]

WIDTH = 1400
MIN_PLOT_PX = 20
"""A chart whose plot area is thinner than this (either way) counts as flat."""
REPORT_DRAWN = """(() => {
  const text = document.body ? document.body.innerText : "";
  return new RegExp("run #%d(?![0-9])", "i").test(text) && !document.querySelector('[data-testid="stStatusWidget"]')
    && !text.includes("Running...");
})()"""
CHARTS = """(() => Array.from(document.querySelectorAll(
    '[data-testid="stVegaLiteChart"], [data-testid="stArrowVegaLiteChart"], [data-testid="stImage"]'))
  .map((el, i) => {
    const drawn = el.querySelector('canvas, svg, img');
    const box = (drawn || el).getBoundingClientRect();
    const heading = el.closest('[data-testid="stVerticalBlock"]')?.querySelector('h2, h3')?.innerText || "";
    const size = p => { const m = /h(-?[\\d.]+)v(-?[\\d.]+)/.exec(p.getAttribute("d") || ""); return m ? [+m[1], +m[2]] : null; };
    const roots = [], cells = [];
    for (const p of (drawn && drawn.tagName === "svg") ? drawn.querySelectorAll("path.background") : []) {
      const group = p.parentNode && p.parentNode.parentNode;
      if (!group || !group.classList || !size(p)) continue;
      if (group.classList.contains("role-frame") && group.classList.contains("root")) roots.push(size(p));
      else if (group.classList.contains("role-scope") && !group.closest(".role-legend")) cells.push(size(p));
    }
    const plots = cells.length ? cells : (roots.length ? roots : [[box.width, box.height]]);
    return {index: i, kind: el.dataset.testid, drawn: drawn !== null, width: box.width, height: box.height,
            plot_width: Math.min(...plots.map(s => s[0])), plot_height: Math.min(...plots.map(s => s[1])),
            section: heading};
  }))()"""
"""Every chart of the page: its size and its smallest plot area (a Vega view's frame, or each cell of a layered,
faceted or concatenated one; an image's own size)."""
ERRORS = """Array.from(document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]'))
  .map(el => el.innerText.slice(0, 300))"""
PAGE_HEIGHT = """(() => {
  const block = document.querySelector('[data-testid="stMainBlockContainer"]') || document.body;
  return Math.ceil(block.getBoundingClientRect().top + block.scrollHeight + 80);
})()"""


def _record_smoke_runs(url: str) -> dict[str, int]:
    """Each domain with a page: its smoke spec recorded as a run into the store at ``url``; name -> run id."""
    from decisions.platform.record import execute_domain

    ids = {}
    for name in registry.names():
        domain = registry.get(name)
        if domain.page:
            ids[name] = execute_domain(domain, domain.prepare(dict(domain.smoke_spec), None), url=url)
    return ids


def _succeeded_runs(url: str) -> dict[str, int]:
    """The newest succeeded run of each domain with a page in the store at ``url``; name -> run id."""
    found: dict[str, int] = {}
    for run in list_runs(url=url, limit=None, status=RunStatus.SUCCEEDED):
        found.setdefault(run.kind, run.id)
    return {name: found[name] for name in registry.names() if registry.get(name).page and name in found}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, int]]]:
    """A store URL and one succeeded run id per domain with a page."""
    url = os.environ.get("DECISIONS_BROWSER_STORE")
    if url:
        yield url, _succeeded_runs(url)
        return
    folder = tmp_path_factory.mktemp("smoke-store")
    url = f"sqlite:///{folder / 'runs.db'}"
    previous = os.getcwd()
    os.chdir(folder)  # a smoke spec's relative folders (CoMP's study) go here
    try:
        ids = _record_smoke_runs(url)
    finally:
        os.chdir(previous)
        dispose_engines()
    yield url, ids


def _page_url(base: str, page: str) -> str:
    """The URL of a page script (``pages/9_Traffic_signals.py`` -> ``<base>/Traffic_signals``)."""
    return f"{base}/{Path(page).stem.split('_', 1)[1]}"


def _measure(tab: Tab, url: str, run_id: int, shot: Path) -> tuple[list[dict], list[str]]:
    """Open a run's report, let it draw, capture it whole; its charts' sizes and the errors shown."""
    tab.resize(WIDTH, 1800)
    tab.open(f"{url}?run={run_id}")
    tab.wait_for(REPORT_DRAWN % run_id, 90, f"report of run #{run_id}")
    tab.wait_for(f"({CHARTS}).every(c => c.drawn)", 60, "charts drawn")
    for _ in range(3):  # the whole page in one viewport (charts may reflow once resized)
        height = min(max(int(tab.evaluate(PAGE_HEIGHT) or 0), 1800), 16_000)
        tab.resize(WIDTH, height)
        time.sleep(2.0)  # let Vega finish painting at the new size
        if int(tab.evaluate(PAGE_HEIGHT) or 0) <= height:
            break
    tab.screenshot(shot)
    return tab.evaluate(CHARTS), tab.evaluate(ERRORS)


def test_every_page_draws_its_recorded_run_with_no_flat_chart(recorded: tuple[str, dict[str, int]],
                                                              tmp_path: Path) -> None:
    url, ids = recorded
    pages = {name: registry.get(name).page for name in registry.names() if registry.get(name).page}
    assert set(ids) == set(pages), f"no recorded run of {sorted(set(pages) - set(ids))}"
    env = {**os.environ, "DECISIONS_DB_URL": url}
    env.pop("DECISIONS_APP_PASSWORD", None)
    problems = []
    with streamlit_app(env, tmp_path / "streamlit.log") as base, chromium_tab(tmp_path / "chromium") as tab:
        for name, page in pages.items():
            shot = tmp_path / f"{name}.png"
            charts, errors = _measure(tab, _page_url(base, page), ids[name], shot)
            keep_screenshots([shot])
            if not charts:
                problems.append(f"{name}: no chart on the page")
            problems += [f"{name}: chart {c['index']} ({c['kind']}, under {c['section']!r}) has a "
                         f"{c['plot_width']:.0f} x {c['plot_height']:.0f} px plot"
                         for c in charts if min(c["plot_height"], c["plot_width"]) < MIN_PLOT_PX]
            problems += [f"{name}: error shown: {e}" for e in errors]
    assert not problems, "\n".join(problems)
