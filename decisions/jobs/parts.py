"""Independent parts of one long job, run through a sweep's ``Runner`` (Ray) instead of in turn.

A single job (``decisions run spec.toml`` without a ``[sweep]``) runs in the CLI's process. With
``--backend ray`` the parts of it that do not depend on one another (the CoMP study's per-task
PPO experts) become Ray tasks: ``execute_specs`` puts the Ray runner in place for the length of
the job (``parts_runner``), and the job hands those parts to ``run_parts``, which returns their
results in order. Without such a runner (the default, and every job run by a sweep's worker) a
job does its parts in its own process as before, so its results do not depend on the backend.

A part is a module-level function of one small JSON-ready config (it travels to a worker that
may be on another machine) returning a small result (a trained expert's msgpack bytes, not a
reference to a file on the worker's disk).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from decisions.core.progress import Progress, silent
from decisions.jobs.runner import Config, Runner

T = TypeVar("T")

_RUNNER: ContextVar[Runner | None] = ContextVar("decisions_parts_runner", default=None)
"""The runner the current job's parts go to (None: the job does them itself)."""


class PartFailed(RuntimeError):
    """A part of a job failed on its worker (its one-line error is the message)."""


@contextmanager
def parts_runner(runner: Runner | None) -> Iterator[None]:
    """Send the independent parts of the jobs run inside this block to ``runner`` (None: in process)."""
    token = _RUNNER.set(runner)
    try:
        yield
    finally:
        _RUNNER.reset(token)


def distributed() -> bool:
    """Whether a job's parts go to a runner (``run_parts``) rather than being done in its own process."""
    return _RUNNER.get() is not None


def run_parts(fn: Callable[[Config], T], configs: Sequence[Config], *, label: str, progress: Progress = silent) -> list[T]:
    """Run ``fn`` on every config through the current parts runner (in this process when there is none).

    Args:
        fn: A module-level function of one config.
        configs: One small JSON-ready config per part.
        label: The progress task's name (``"experts"``).
        progress: Called as ``progress(label, finished, total)`` as parts end.

    Returns:
        Each part's result, in the order of ``configs``.

    Raises:
        PartFailed: a part raised; the message is its one-line error and how many parts failed.
        RunnerStopped: the job was stopped (Ctrl-C, SIGTERM) while its parts ran.
    """
    from decisions.jobs.runner import SerialRunner

    runner = _RUNNER.get() or SerialRunner()
    outcomes: list[Any] = runner.run(fn, configs, progress=lambda done, total: progress(label, done, total))
    failed = [outcome for outcome in outcomes if not outcome.ok]
    if failed:
        raise PartFailed(f"{len(failed)} of {len(outcomes)} {label} parts failed; the first: {failed[0].error}")
    return [outcome.result for outcome in outcomes]
