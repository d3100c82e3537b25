"""Who is acting: the name every write of the store records (runs, deployments, decisions, outcomes,
forgettings) when the caller names no one.

It is the name set by ``acting_as`` for the current context (the app sets its logged-in user), else
the OS user of this process (the CLI acts as the OS user).
"""

from __future__ import annotations

import getpass
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ACTING: ContextVar[str | None] = ContextVar("decisions_acting_user", default=None)


def os_user() -> str | None:
    """The login name of this process's user, or None where there is none (some containers)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in some containers
        return None


def acting_user() -> str | None:
    """The name set by ``acting_as`` in this context, else the OS user."""
    return _ACTING.get() or os_user()


@contextmanager
def acting_as(name: str | None) -> Iterator[None]:
    """Within the block, writes name ``name`` (None: the OS user) as who did them."""
    token = _ACTING.set(name)
    try:
        yield
    finally:
        _ACTING.reset(token)
