"""Progress reporting at the edges: one callback type that the CLI and the app render.

Jobs call ``progress(task, done, total)``; the CLI renders it with rich
progress bars and the Streamlit app with ``st.progress``. Core code never
imports either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

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
