"""Independent parts of one job, run through the runner the platform put in place, else in turn.

A part is a module-level function of one small JSON-ready config returning a small result; its
results are the same with or without a runner.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from decisions.core.progress import Progress, silent
from decisions.errors import error_line
from decisions.kit.context import set_within

T = TypeVar("T")

Config = dict[str, Any]
"""One part's configuration (plain, JSON-ready data)."""


class Outcome(Protocol):
    """What a runner reports of one part."""

    @property
    def ok(self) -> bool: ...

    result: Any
    error: str | None


class PartsRunner(Protocol):
    """What the platform puts in place to run a job's parts (a sweep's ``Runner``)."""

    def run(self, fn: Callable[[Config], Any], configs: Sequence[Config], *,
            progress: Callable[[int, int], None] | None = None) -> Sequence[Outcome]: ...


_RUNNER: ContextVar[PartsRunner | None] = ContextVar("decisions_parts_runner", default=None)


class PartFailed(RuntimeError):
    """A part of a job failed on its worker (its one-line error is the message)."""


def parts_runner(runner: PartsRunner | None) -> AbstractContextManager[PartsRunner | None]:
    """Send the independent parts of the jobs run inside this block to ``runner`` (None: in process)."""
    return set_within(_RUNNER, runner)


def distributed() -> bool:
    """Whether a job's parts go to a runner rather than being done in its own process."""
    return _RUNNER.get() is not None


def run_parts(fn: Callable[[Config], T], configs: Sequence[Config], *, label: str, progress: Progress = silent) -> list[T]:
    """Each part's result of ``fn`` in the order of ``configs``, through the current parts runner if any.

    ``progress(label, finished, total)`` is called as parts end.

    Raises:
        PartFailed: a part raised; the message counts the failures and gives the first error.
        KeyboardInterrupt: the job was stopped while its parts ran.
    """
    runner = _RUNNER.get()
    if runner is None:
        return _run_here(fn, configs, label=label, progress=progress)
    outcomes = runner.run(fn, configs, progress=lambda done, total: progress(label, done, total))
    failed = [outcome.error for outcome in outcomes if not outcome.ok]
    _raise_failed(failed, len(outcomes), label)
    return [outcome.result for outcome in outcomes]


def _run_here(fn: Callable[[Config], T], configs: Sequence[Config], *, label: str, progress: Progress) -> list[T]:
    """Every part in this process, one after another; a failing part does not stop the others."""
    results: list[T] = []
    failed: list[str] = []
    for done, config in enumerate(configs, start=1):
        try:
            results.append(fn(copy.deepcopy(config)))
        except Exception as exc:  # the other parts still run, as under a runner
            failed.append(error_line(exc))
        progress(label, done, len(configs))
    _raise_failed(failed, len(configs), label)
    return results


def _raise_failed(failed: Sequence[str | None], total: int, label: str) -> None:
    """Raise ``PartFailed`` naming the count and the first error, when any part failed."""
    if failed:
        raise PartFailed(f"{len(failed)} of {total} {label} parts failed; the first: {failed[0]}")
