"""Progress reporting at the edges: one callback type that the CLI and the app render.

Jobs call ``progress(task, done, total)``; the CLI renders it with rich
progress bars on a terminal and plain lines elsewhere (a file, a pipe), and
the Streamlit app with ``st.progress``. Core code never imports either.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

# ``progress(task_name, done, total)``: ``done == total`` marks the task finished.
Progress = Callable[[str, int, int], None]


def silent(task: str, done: int, total: int) -> None:
    """A progress callback that shows nothing."""
    del task, done, total


@contextmanager
def rich_progress() -> Iterator[Progress]:
    """A rich progress display: one bar per task name, created on first report.

    Yields:
        A ``Progress`` callback to pass to jobs.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    bars: dict[str, int] = {}
    with RichProgress(
        TextColumn("{task.description:<28}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    ) as display:

        def report(task: str, done: int, total: int) -> None:
            if task not in bars:
                bars[task] = display.add_task(task, total=total)
            display.update(bars[task], completed=done, total=total)

        yield report


PLAIN_INTERVAL_S = 10.0
"""How often ``plain_progress`` prints the unfinished tasks."""


def _line(task: str, done: int, total: int, elapsed_s: float) -> str:
    share = f" ({100 * done / total:.0f}%)" if total > 0 else ""
    return f"{task}: {done}/{total}{share}, {elapsed_s:.0f} s"


@contextmanager
def plain_progress(stream: TextIO | None = None, interval_s: float = PLAIN_INTERVAL_S) -> Iterator[Progress]:
    """Progress as plain, flushed lines on ``stream`` (None: ``sys.stdout``), for output that is not a terminal.

    A task prints a line when it starts and when it finishes; while any is unfinished, each unfinished task
    prints its state every ``interval_s`` seconds, whether or not it reported meanwhile.

    Yields:
        A ``Progress`` callback to pass to jobs.
    """
    started = time.monotonic()
    state: dict[str, tuple[int, int]] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def say(task: str, done: int, total: int) -> None:
        out = stream or sys.stdout
        out.write(_line(task, done, total, time.monotonic() - started) + "\n")
        out.flush()

    def report(task: str, done: int, total: int) -> None:
        with lock:
            first = task not in state
            state[task] = (done, total)
            if first or done == total:
                say(task, done, total)

    def tick() -> None:
        while not stop.wait(interval_s):
            with lock:
                for task, (done, total) in state.items():
                    if done != total:
                        say(task, done, total)

    ticker = threading.Thread(target=tick, name="plain-progress", daemon=True)
    ticker.start()
    try:
        yield report
    finally:
        stop.set()
        ticker.join()


@contextmanager
def console_progress(interval_s: float = PLAIN_INTERVAL_S) -> Iterator[Progress]:
    """``rich_progress`` when stdout is a terminal, else ``plain_progress`` on stdout every ``interval_s``."""
    isatty = getattr(sys.stdout, "isatty", None)
    display = rich_progress() if isatty is not None and isatty() else plain_progress(interval_s=interval_s)
    with display as report:
        yield report
