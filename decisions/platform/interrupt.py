"""Stopping jobs on SIGTERM or Ctrl-C: the signal turned into an exception, and what was stopped.

SIGTERM raises ``Terminated`` (a ``KeyboardInterrupt``), except inside the run store, where the
signal is sent again a moment later; an interruption Python swallows is delivered again.
``JobsInterrupted`` is what ``execute_specs`` raises once everything is stopped and recorded.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import Any, NoReturn


class Terminated(KeyboardInterrupt):
    """Raised by a SIGTERM handler: the process was asked to stop by ``signum``."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        self.signum = int(signum)
        super().__init__(f"stopped by signal {signal.Signals(self.signum).name}")


def signal_number(exc: BaseException) -> int:
    """The signal behind an interruption: ``Terminated``'s, else SIGINT (Ctrl-C)."""
    return int(getattr(exc, "signum", signal.SIGINT))


REDELIVER_AFTER_S = 0.05
"""Delay before an interruption's signal is sent again."""

_ignored_hook: Callable[[Any], object] | None = None


def _redeliver(unraisable: Any) -> None:
    """``sys.unraisablehook``: send the signal of an interruption Python ignored once more; report others."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        _send_again(signal_number(exc))
    elif _ignored_hook is not None:
        _ignored_hook(unraisable)


def redeliver_swallowed_interrupts() -> None:
    """Make an interruption raised where Python ignores exceptions (``__del__``, callbacks) arrive again."""
    global _ignored_hook
    if sys.unraisablehook is not _redeliver:
        _ignored_hook = sys.unraisablehook
        sys.unraisablehook = _redeliver


def _send_again(signum: int) -> None:
    """Send ``signum`` to this process after ``REDELIVER_AFTER_S`` (from a timer thread)."""
    timer = threading.Timer(REDELIVER_AFTER_S, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


_DEFER_IN = ("sqlalchemy.", "decisions.store.")  # modules in which an interruption waits


def in_store_call(frame: FrameType | None) -> bool:
    """Whether the interrupted code is inside the run store or SQLAlchemy (any frame of its stack)."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(_DEFER_IN):
            return True
        frame = frame.f_back
    return False


def interrupt_unless_in_store(signum: int, frame: FrameType | None) -> None:
    """Signal handler: raise ``Terminated(signum)``, or inside a store call send ``signum`` again soon."""
    if in_store_call(frame):
        _send_again(signum)
        return
    raise Terminated(signum)


def raise_on_sigterm() -> None:
    """Make SIGTERM raise ``Terminated`` in the main thread and swallowed interruptions arrive again."""
    signal.signal(signal.SIGTERM, interrupt_unless_in_store)
    redeliver_swallowed_interrupts()


def exit_now(code: int) -> NoReturn:
    """Leave the process at once with ``code`` after flushing stdout and stderr, skipping a teardown
    that native code left in flight by an interrupted job could crash."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


class JobsInterrupted(KeyboardInterrupt):
    """A job or sweep (``sweep_id`` None: a job) stopped by ``signum``, its runs recorded as interrupted.

    ``run_ids`` are the runs stopped while running; ``cancelled`` counts queued points that never started.
    """

    def __init__(self, run_ids: Sequence[int], cancelled: int, *, sweep_id: str | None, signum: int) -> None:
        self.run_ids = tuple(run_ids)
        self.cancelled = cancelled
        self.sweep_id = sweep_id
        self.signum = signum
        super().__init__(self.summary())

    def summary(self) -> str:
        """What was stopped, on one line."""
        unit = "point" if self.sweep_id is not None else "job"
        if self.sweep_id is None and not self.run_ids:
            return "interrupted: the job was stopped before its run was recorded"
        ids = ", ".join(map(str, self.run_ids))
        line = f"interrupted: {_count(len(self.run_ids), f'running {unit}')} stopped"
        if self.run_ids:
            line += f" ({'run' if len(self.run_ids) == 1 else 'runs'} {ids})"
        if self.sweep_id is not None:
            line += f", {_count(self.cancelled, 'queued point')} cancelled (sweep {self.sweep_id})"
        return line

    @property
    def exit_code(self) -> int:
        """128 + the signal number, as a shell reports a process stopped by that signal."""
        return 128 + self.signum
