"""Whether a ``running`` run is still alive: its PID on the same host, and its heartbeat, renewed
every ``heartbeat_interval()`` seconds and stale after ``lost_after()`` (``DECISIONS_HEARTBEAT_S``,
``DECISIONS_LOST_AFTER_S``).
"""

from __future__ import annotations

import math
import os
import socket
from datetime import datetime
from pathlib import Path

# Environment variable: seconds between two heartbeats of a running run.
HEARTBEAT_ENV = "DECISIONS_HEARTBEAT_S"

# Environment variable: seconds without a heartbeat after which a running run is lost.
LOST_AFTER_ENV = "DECISIONS_LOST_AFTER_S"

DEFAULT_HEARTBEAT_S = 10.0
MIN_LOST_AFTER_S = 60.0
HEARTBEATS_TO_LOSE = 3


def _seconds(name: str, default: float) -> float:
    """A positive number of seconds from the environment variable ``name`` (``default`` when unset or bad)."""
    text = os.environ.get(name, "").strip()
    try:
        value = float(text) if text else default
    except ValueError:
        return default
    return value if math.isfinite(value) and value > 0 else default


def heartbeat_interval() -> float:
    """Seconds between two heartbeats: ``$DECISIONS_HEARTBEAT_S``, default 10."""
    return _seconds(HEARTBEAT_ENV, DEFAULT_HEARTBEAT_S)


def lost_after() -> float:
    """Seconds without a heartbeat after which a running run is lost: ``$DECISIONS_LOST_AFTER_S``,
    default ``max(60, 3 * heartbeat_interval())``."""
    return _seconds(LOST_AFTER_ENV, max(MIN_LOST_AFTER_S, HEARTBEATS_TO_LOSE * heartbeat_interval()))


def this_host() -> str:
    """The name runs record as their ``host``."""
    return socket.gethostname()


def pid_exists(pid: int) -> bool:
    """Whether a process with this id runs on this machine (a zombie counts as gone).

    Where that cannot be told (not POSIX) the answer is True, so only the heartbeat judges.
    """
    if os.name != "posix":
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # PermissionError: it exists, owned by someone else
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and waits for its parent to reap it (Linux ``/proc``; False elsewhere)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def lost_reason(
    *,
    host: str,
    pid: int | None,
    last_seen: datetime | None,
    now: datetime,
    lost_after_s: float | None = None,
) -> str | None:
    """Why a run recorded as running is lost, in one line, or None while it looks alive.

    It is lost when ``pid`` is gone on this host or ``last_seen`` (aware UTC) is older than
    ``lost_after_s`` (None: ``lost_after()``).
    """
    if pid is not None and host == this_host() and not pid_exists(pid):
        return f"lost: process {pid} on {host} is gone"
    limit = lost_after() if lost_after_s is None else lost_after_s
    if last_seen is not None and (now - last_seen).total_seconds() > limit:
        since = last_seen.strftime("%Y-%m-%d %H:%M:%S")
        who = f"process {pid} on {host}" if pid is not None else f"a process on {host}"
        return f"lost: no heartbeat since {since} UTC (over {limit:g} s) from {who}"
    return None
