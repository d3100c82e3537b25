"""The app's login once the store has users: the form in front of every page, one message for a wrong
password and an unknown user, failed attempts limited per user name across sessions, the idle session's end,
who is logged in and logging out; the limiter's window and the role captions on their own."""

from __future__ import annotations

import sys
import time

import pytest
from streamlit.testing.v1 import AppTest

from decisions.store import users
from decisions.store.users import Role
from tests.apps.conftest import APPS, HOME
from tests.apps.helpers import log_in

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the pages import their helpers by name, as Streamlit runs them
import app_login  # noqa: E402

CHRONIC = "pages/10_Chronic_care.py"


def _home() -> AppTest:
    at = AppTest.from_file(HOME, default_timeout=30).run()
    assert not at.exception, at.exception
    return at


def _has_input(at: AppTest, key: str) -> bool:
    return any(widget.key == key for widget in at.text_input)


def _at_login(at: AppTest) -> bool:
    """Whether the page shows the login form and nothing of the app behind it."""
    return _has_input(at, "login_name") and not at.dataframe and not at.header


def test_the_login_form_stands_before_every_page_until_a_user_logs_in(users_store: str) -> None:
    at = _home()
    assert _at_login(at)
    password = at.text_input(key="login_password")
    assert password.proto.type == password.proto.PASSWORD
    at.switch_page(CHRONIC).run()
    assert _at_login(at) and [t.value for t in at.title] == ["decisions"]  # not the page's title

    log_in(at, "olga")
    assert [t.value for t in at.title] == ["Chronic care"] and not at.error
    assert "Logged in as **olga** (operator)" in [m.value for m in at.sidebar.markdown]
    assert not _has_input(at, "chronic_today_operator")  # the name recorded is the user's
    at.switch_page("Home.py").run()
    assert at.title[0].value == "decisions" and at.header[0].value == "Assets"  # logged in for the session

    at.sidebar.button(key="app_log_out").click().run()
    assert _at_login(at)


def test_a_wrong_password_and_an_unknown_user_read_the_same(users_store: str) -> None:
    at = log_in(_home(), "olga", "not olga's password")
    wrong = [e.value for e in at.error]
    log_in(at, "nobody", "olga password")
    assert wrong == [e.value for e in at.error] == [app_login.WRONG]
    assert _at_login(at)


def test_the_sixth_failure_in_the_window_is_refused_without_checking_the_password(
        users_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    checked: list[str] = []
    check = users.check_password

    def counted(name: str, password: str, *, url: str | None = None) -> users.UserRecord | None:
        checked.append(name)
        return check(name, password, url=url)

    monkeypatch.setattr(users, "check_password", counted)
    at = _home()
    for _ in range(app_login.MAX_FAILURES):
        assert [e.value for e in log_in(at, "olga", "guess").error] == [app_login.WRONG]
    assert checked == ["olga"] * app_login.MAX_FAILURES

    other = _home()  # another session of the same app: the same limiter
    log_in(other, "olga")  # even the right password is refused, unchecked
    [refused] = [e.value for e in other.error]
    assert refused.startswith("Too many failed attempts for this user name: try again after ") and "UTC" in refused
    assert checked == ["olga"] * app_login.MAX_FAILURES and _at_login(other)

    log_in(other, "vera")  # another name is not held back
    assert other.title[0].value == "decisions" and not _at_login(other)


def test_an_idle_session_ends_and_returns_to_the_login(users_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(app_login.IDLE_ENV, "2")
    at = log_in(_home(), "vera")
    assert not _at_login(at)
    at.session_state[app_login.SEEN_KEY] = time.time() - 60  # a minute idle: still in
    at.run()
    assert not _at_login(at)
    at.session_state[app_login.SEEN_KEY] = time.time() - 121
    at.run()
    assert _at_login(at)
    assert at.info[0].value == "Your session ended after 2 minutes without activity: log in again."
    log_in(at, "vera")
    assert not _at_login(at) and not [i for i in at.info if i.value.startswith("Your session ended")]


def test_the_limiter_holds_a_name_for_the_rest_of_the_window() -> None:
    now = [1000.0]
    limiter = app_login.LoginLimiter(failures=3, window_s=60.0, clock=lambda: now[0])
    for step in (0.0, 10.0, 20.0):
        now[0] += step
        assert limiter.wait("ana") == 0.0
        limiter.failed("ana")
    assert limiter.wait("ana") == pytest.approx(30.0)  # the first failure leaves the window at 1060
    assert limiter.wait("bob") == 0.0
    now[0] = 1060.0
    assert limiter.wait("ana") == 0.0
    limiter.failed("ana")
    assert limiter.wait("ana") > 0.0
    limiter.succeeded("ana")
    assert limiter.wait("ana") == 0.0


def test_the_idle_time_is_30_minutes_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(app_login.IDLE_ENV, raising=False)
    assert app_login.idle_seconds() == 30 * 60
    monkeypatch.setenv(app_login.IDLE_ENV, "5")
    assert app_login.idle_seconds() == 5 * 60
    monkeypatch.setenv(app_login.IDLE_ENV, "half an hour")
    assert app_login.idle_seconds() == 30 * 60


def test_a_role_below_an_action_is_told_which_role_it_needs() -> None:
    assert app_login.needs("deploy", Role.OPERATOR) == "Deploying needs an approver; you are an operator."
    assert app_login.needs("decide", Role.VIEWER) == "Deciding needs an operator; you are a viewer."
    assert app_login.needs("deploy", Role.APPROVER) is None and app_login.needs("forget", None) is None
