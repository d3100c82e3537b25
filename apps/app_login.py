"""Who uses the operator app: the login gate every page opens with, and what the logged-in role may do.

Once the store holds users (``decisions users add``), each session logs in with a user name and password;
failed attempts are limited per user name across the app's sessions, and a session ends after an idle
time. With no user defined the app is one local user's: the shared password of ``$DECISIONS_APP_PASSWORD``
guards it when set, and everything is allowed (writes name the OS user, or the name typed beside them).

Pages import this module by name (``import app_login``), as they import ``app_common``.
"""

from __future__ import annotations

import hmac
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import streamlit as st

from decisions.platform import access
from decisions.store import users
from decisions.store.users import Role
from decisions.store.who import os_user

PASSWORD_ENV = "DECISIONS_APP_PASSWORD"
"""Environment variable holding the shared app password used while no user is defined; unset or empty
means no gate."""

IDLE_ENV = "DECISIONS_APP_IDLE_MINUTES"
"""Environment variable: minutes without a page run after which a session ends (default ``IDLE_MINUTES``)."""

IDLE_MINUTES = 30.0
MAX_FAILURES = 5
"""Failed logins of one user name within ``FAILURE_WINDOW_S`` after which further attempts are refused."""
FAILURE_WINDOW_S = 300.0

WRONG = "Wrong user name or password."

USER_KEY = "app_user"
"""Session key of the logged-in user's name."""
SEEN_KEY = "app_last_seen"
"""Session key of the time (``time.time()``) of the session's last page run."""
ACTOR_KEY = "app_actor"
"""Session key of the ``Actor`` of the latest page run (what button callbacks act as)."""
_ENDED_KEY = "app_session_ended"
_AUTH_KEY = "app_authenticated"

GERUNDS = {
    "run": "Running a job", "decide": "Deciding", "record outcomes": "Recording outcomes",
    "add assets": "Adding assets", "deploy": "Deploying", "roll back": "Rolling back",
    "retire assets": "Retiring assets", "forget": "Forgetting", "delete runs": "Deleting runs",
    "manage users": "Managing users",
}
"""Each action of ``access.NEEDS`` as the subject of a sentence."""


@dataclass(frozen=True)
class Actor:
    """Who the session acts as: ``name`` (None: the OS user) and ``role`` (None: no user is defined, so
    everything is allowed); ``logged_in`` when the store has users and the session logged in as one."""

    name: str | None
    role: Role | None
    logged_in: bool = False


class LoginLimiter:
    """Failed logins per user name: after ``failures`` within ``window_s`` seconds, further attempts for
    that name wait until fewer than ``failures`` remain within the window. Safe across threads."""

    def __init__(self, failures: int = MAX_FAILURES, window_s: float = FAILURE_WINDOW_S,
                 clock: Callable[[], float] = time.time) -> None:
        self._failures, self._window, self._clock = failures, window_s, clock
        self._seen: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, now: float) -> None:
        for name in list(self._seen):
            self._seen[name] = [t for t in self._seen[name] if now - t < self._window]
            if not self._seen[name]:
                del self._seen[name]

    def wait(self, name: str) -> float:
        """Seconds until ``name`` may try again (0: now)."""
        with self._lock:
            now = self._clock()
            self._recent(now)
            times = self._seen.get(name, [])
            if len(times) < self._failures:
                return 0.0
            return times[-self._failures] + self._window - now

    def failed(self, name: str) -> None:
        """Count a failed login of ``name``."""
        with self._lock:
            self._seen.setdefault(name, []).append(self._clock())

    def succeeded(self, name: str) -> None:
        """Forget ``name``'s failures (its password was given)."""
        with self._lock:
            self._seen.pop(name, None)


@st.cache_resource
def limiter() -> LoginLimiter:
    """The app process's one ``LoginLimiter``, shared by every session."""
    return LoginLimiter()


def idle_seconds() -> float:
    """How long a session may go without a page run (``$DECISIONS_APP_IDLE_MINUTES``, default 30 minutes)."""
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        minutes = float(raw) if raw else IDLE_MINUTES
    except ValueError:
        minutes = IDLE_MINUTES
    return max(minutes, 0.0) * 60.0


def _expired() -> bool:
    seen = st.session_state.get(SEEN_KEY)
    return seen is None or time.time() - float(seen) > idle_seconds()


def require_login(url: str | None = None) -> Actor:
    """Stop the page until the session may see it; who it acts as.

    Every page calls this first (``app_common.page_header`` does). With users in the store (``url``: the
    pages' store), the session logs in (``login_form``), ends after ``idle_seconds`` without a page run,
    and the sidebar shows who is logged in with a "Log out" button. With none, the shared password gate
    (``shared_password_gate``) applies and the actor is the OS user with every right.
    """
    if not users.has_users(url=url):
        shared_password_gate()
        return _keep(Actor(os_user(), None))
    name = st.session_state.get(USER_KEY)
    if name is not None and _expired():
        _log_out()
        name = None
        st.session_state[_ENDED_KEY] = True
    record = users.get_user(name, url=url) if name is not None else None
    if record is None:
        st.session_state.pop(USER_KEY, None)
        st.session_state.pop(ACTOR_KEY, None)
        login_form(url)
        st.stop()
    st.session_state[SEEN_KEY] = time.time()
    st.session_state.pop(_ENDED_KEY, None)
    with st.sidebar:
        st.markdown(f"Logged in as **{record.name}** ({record.role.value})")
        st.button("Log out", key="app_log_out", on_click=_log_out)
    return _keep(Actor(record.name, record.role, logged_in=True))


def _keep(actor: Actor) -> Actor:
    st.session_state[ACTOR_KEY] = actor
    return actor


def _log_out() -> None:
    for key in (USER_KEY, SEEN_KEY, ACTOR_KEY):
        st.session_state.pop(key, None)


def login_form(url: str | None) -> None:
    """The user name and password form; a correct pair logs the session in and draws the page again.

    A wrong password and an unknown name read the same; a name with ``MAX_FAILURES`` failures within
    ``FAILURE_WINDOW_S`` is refused, its password unchecked, until the window lets it try again.
    """
    st.title("decisions")
    if st.session_state.get(_ENDED_KEY):
        st.info(f"Your session ended after {idle_seconds() / 60:g} minutes without activity: log in again.")
    with st.form("app_login"):
        name = st.text_input("User name", key="login_name")
        password = st.text_input("Password", type="password", key="login_password")
        submitted = st.form_submit_button("Log in", type="primary", key="login_submit")
    if not submitted:
        return
    name = name.strip()
    wait = limiter().wait(name)
    if wait > 0:
        until = datetime.fromtimestamp(time.time() + wait, UTC)
        st.error(f"Too many failed attempts for this user name: try again after {until:%H:%M:%S} UTC "
                 f"(in {max(1, round(wait / 60))} min).")
        return
    record = users.check_password(name, password, url=url) if name and password else None
    if record is None:
        limiter().failed(name)
        st.error(WRONG)
        return
    limiter().succeeded(name)
    st.session_state[USER_KEY] = record.name
    st.session_state[SEEN_KEY] = time.time()
    st.session_state.pop(_ENDED_KEY, None)
    st.rerun()


def shared_password_gate() -> None:
    """Stop the page until the shared password ``$DECISIONS_APP_PASSWORD`` is typed (a no-op when none is
    set); a correct entry is remembered for the session."""
    expected = os.environ.get(PASSWORD_ENV, "")
    if not expected or st.session_state.get(_AUTH_KEY):
        return
    entered = st.text_input("Password", type="password", key="app_password")
    if entered and hmac.compare_digest(entered.encode(), expected.encode()):
        st.session_state[_AUTH_KEY] = True
        st.rerun()
    if entered:
        st.error("Wrong password.")
    else:
        st.info("This app is protected: enter the password to continue.")
    st.stop()


def current() -> Actor:
    """The actor of the session's latest page run (the OS user with every right before any)."""
    actor = st.session_state.get(ACTOR_KEY)
    return actor if isinstance(actor, Actor) else Actor(os_user(), None)


def needs(action: str, role: Role | None) -> str | None:
    """Why ``role`` may not do ``action`` ("Deploying needs an approver; you are an operator."), or None."""
    if access.may(role, action):
        return None
    assert role is not None
    return f"{GERUNDS[action]} needs {access.NEEDS[action].with_article}; you are {role.with_article}."


def blocked(action: str, where: Any = st) -> bool:
    """Whether the session's role may not do ``action``; if so, a caption (drawn with ``where``, e.g. a
    column) says which role it needs. The control is then drawn disabled."""
    why = needs(action, current().role)
    if why is not None:
        where.caption(why)
    return why is not None


def writer(action: str, url: str | None, typed: str | None = None) -> str | None:
    """The name a write of ``action`` records, once the session may do it (call it before writing).

    Args:
        action: one of ``access.NEEDS``.
        url: the store.
        typed: the name typed on the page, recorded while no user is defined (None: the OS user).

    Raises:
        AccessDenied: the session's idle time is over, users are defined and the session is not logged
            in, or its role is below the action's.
    """
    actor = current()
    if actor.logged_in:
        if _expired():
            raise access.AccessDenied("your session ended: log in again")
        return access.require(action, user=actor.name, url=url)
    if users.has_users(url=url):
        raise access.AccessDenied("log in to do this")
    return access.require(action, user=typed or actor.name, url=url)
