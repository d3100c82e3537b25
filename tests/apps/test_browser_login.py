"""The login in a real (headless Chromium) browser: with users in the store the app opens on the login form; a
wrong password is refused with the one message; the right one shows Home with the user and role in the
sidebar; a viewer's domain page shows its Run button disabled with the role it needs. Each step's
screenshot is kept in the test's folder (and in ``DECISIONS_KEEP_SCREENSHOTS=<folder>`` when set)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from decisions.store import dispose_engines
from decisions.store.users import add_user
from tests.apps.browser import CHROMIUM, Tab, chromium_tab, keep_screenshots, streamlit_app
from tests.apps.test_browser_pages import ERRORS, WIDTH

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium is not on PATH (apt-get install chromium)")]

LOGIN_DRAWN = """(() => !!document.querySelector('input[aria-label="User name"]')
  && !!document.querySelector('input[aria-label="Password"]'))()"""
WRONG_SHOWN = """(() => (document.body ? document.body.innerText : "").includes("Wrong user name or password."))()"""
HOME_DRAWN = """(() => { const t = document.body ? document.body.innerText : "";
  return t.includes("Logged in as olga (operator)") && t.includes("Recent runs") && t.includes("Log out")
    && !document.querySelector('input[aria-label="User name"]'); })()"""
FOCUS = """(() => { const el = document.querySelector('input[aria-label=%s]'); if (!el) return false;
  el.focus(); el.select(); return document.activeElement === el; })()"""
VIEWER_PAGE = """(() => { const t = document.body ? document.body.innerText : "";
  const run = Array.from(document.querySelectorAll("button")).find(b => b.innerText.trim() === "Run");
  return t.includes("Logged in as vera (viewer)") && t.includes("Running a job needs an operator; you are a viewer.")
    && !!run && run.disabled; })()"""
CLICK_LOG_IN = """(() => { const b = Array.from(document.querySelectorAll("button")).find(b => b.innerText.trim() === "Log in");
  if (b) { b.click(); return true; } return false; })()"""


def _type(tab: Tab, label: str, text: str) -> None:
    """Focus the text input labelled ``label`` and type ``text`` into it, as a keyboard would."""
    tab.wait_for(FOCUS % json.dumps(label), 10, f"the {label} field")
    tab.call("Input.insertText", text=text)


def _log_in(tab: Tab, name: str, password: str) -> None:
    _type(tab, "User name", name)
    _type(tab, "Password", password)
    time.sleep(0.5)  # let the form take the typed values
    tab.wait_for(CLICK_LOG_IN, 10, "the Log in button")


def test_logging_in_in_a_browser(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        add_user("boss", "boss password", "approver", url=url)
        add_user("olga", "olga password", "operator", url=url)
        add_user("vera", "vera password", "viewer", url=url)
    finally:
        dispose_engines()
    env = {**os.environ, "DECISIONS_DB_URL": url}
    env.pop("DECISIONS_APP_PASSWORD", None)
    shots = []
    with streamlit_app(env, tmp_path / "streamlit.log") as base, chromium_tab(tmp_path / "chromium") as tab:
        tab.resize(WIDTH, 1000)
        tab.open(base)
        tab.wait_for(LOGIN_DRAWN, 120, "the login form")
        shots.append(tab.screenshot(tmp_path / "login.png"))
        _log_in(tab, "olga", "not the password")
        tab.wait_for(WRONG_SHOWN, 30, "the wrong-password message")
        shots.append(tab.screenshot(tmp_path / "login_refused.png"))
        _log_in(tab, "olga", "olga password")
        tab.wait_for(HOME_DRAWN, 60, "Home, logged in")
        time.sleep(1.0)
        shots.append(tab.screenshot(tmp_path / "logged_in.png"))
        errors = tab.evaluate(ERRORS)
        tab.open(f"{base}/Gas_storage")  # a new session: the login again, as a viewer
        tab.wait_for(LOGIN_DRAWN, 60, "the login form on the gas storage page")
        _log_in(tab, "vera", "vera password")
        tab.wait_for(VIEWER_PAGE, 90, "the gas storage page with Run disabled for a viewer")
        time.sleep(1.0)
        shots.append(tab.screenshot(tmp_path / "viewer_page.png"))
        errors += tab.evaluate(ERRORS)
    keep_screenshots(shots, "login_")
    print("screenshots:", *shots)
    assert all(s.stat().st_size > 5_000 for s in shots)
    assert not errors, errors
