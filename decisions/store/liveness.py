"""Whether a ``running`` run is still alive: its heartbeat and, on the same host, its PID.

A recording process renews the run's ``heartbeat_at`` every ``heartbeat_interval()``
seconds (``decisions.store.heartbeat``). A run still ``running`` in the store is judged
``lost`` when its process is gone on this host, or when its last sign of life (heartbeat,
else start) is older than ``lost_after()`` seconds: the process was killed (``kill -9``,
out of memory) or its machine went down.

Both settings come from the environment: ``DECISIONS_HEARTBEAT_S`` (default 10 s) and
``DECISIONS_LOST_AFTER_S`` (default 3 heartbeats, and at least 60 s).
"""

from __future__ import annotations

import math
import os
import socket
from datetime import datetime
from pathlib import Path

HEARTBEAT_ENV = "DECISIONS_HEARTBEAT_S"
"""Environment variable: seconds between two heartbeats of a running run."""

LOST_AFTER_ENV = "DECISIONS_LOST_AFTER_S"
"""Environment variable: seconds without a heartbeat after which a running run is lost."""

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
    """Seconds without a heartbeat after which a running run is lost.

    Returns:
        ``$DECISIONS_LOST_AFTER_S``, default ``max(60, 3 * heartbeat_interval())``.
    """
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
    """Why a run recorded as running is lost, or None while it looks alive.

    Args:
        host: the host that records the run.
        pid: its process id there (None for runs recorded before PIDs were kept).
        last_seen: its last heartbeat, else its start (aware UTC).
        now: the current time (aware UTC).
        lost_after_s: seconds without a heartbeat that make it lost; None means ``lost_after()``.

    Returns:
        One line, e.g. ``"lost: process 4242 on node-1 is gone"``, or None.
    """
    if pid is not None and host == this_host() and not pid_exists(pid):
        return f"lost: process {pid} on {host} is gone"
    limit = lost_after() if lost_after_s is None else lost_after_s
    if last_seen is not None and (now - last_seen).total_seconds() > limit:
        since = last_seen.strftime("%Y-%m-%d %H:%M:%S")
        who = f"process {pid} on {host}" if pid is not None else f"a process on {host}"
        return f"lost: no heartbeat since {since} UTC (over {limit:g} s) from {who}"
    return None
