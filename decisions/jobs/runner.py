"""Runners: execute one job function over many configurations.

A job is a module-level function ``fn(config: dict) -> T``. A ``Runner`` calls
it once per configuration and returns one ``JobOutcome`` per configuration, in
the order given; a job that raises yields an outcome with its error text and
does not stop the others.

- ``SerialRunner`` runs the jobs one after another in this process
  (debugging, tests, tiny sweeps).
- ``LocalProcessRunner`` runs them in a ``ProcessPoolExecutor`` whose workers
  are started with the ``spawn`` method, so each child imports JAX fresh
  (forking a process that has initialised JAX or a GPU is unsafe). Configs
  and results travel between processes by pickling, so they must be plain
  picklable data produced by our own code; ``fn`` must be importable by
  name (a module-level function, not a lambda or a closure).

A distributed engine (e.g. a Ray runner submitting ``fn`` as a remote task
per config) implements the same ``Runner`` Protocol later; jobs, specs and
the CLI do not change, they only receive a different runner.
"""

from __future__ import annotations

import copy
import multiprocessing
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from decisions.errors import error_line

T = TypeVar("T")

Progress = Callable[[int, int], None]
"""Progress callback: ``progress(finished, total)``, called after each job ends."""


@dataclass(frozen=True)
class JobOutcome(Generic[T]):
    """What one job produced: its result, or the error it raised."""

    config: dict[str, Any]
    """The configuration the job was given."""
    result: T | None = None
    """The job's return value; None when it failed."""
    error: str | None = None
    """One line ``"ExceptionType: message"`` when the job failed, else None."""
    traceback: str | None = None
    """The formatted traceback when the job failed, for logs."""

    @property
    def ok(self) -> bool:
        """Whether the job finished without raising."""
        return self.error is None


class Runner(Protocol):
    """Executes a job function over a sequence of configurations."""

    def run(
        self,
        fn: Callable[[dict[str, Any]], T],
        configs: Sequence[dict[str, Any]],
        *,
        progress: Progress | None = None,
    ) -> list[JobOutcome[T]]:
        """Run ``fn`` once per configuration.

        Args:
            fn: The job, a module-level function of one config dict.
            configs: The configurations.
            progress: Called as ``progress(finished, total)`` after each job.

        Returns:
            One outcome per configuration, in the order of ``configs``.
        """
        ...


def _failure(config: dict[str, Any], exc: BaseException) -> JobOutcome[Any]:
    text = "".join(traceback.format_exception(exc))
    return JobOutcome(config=config, error=error_line(exc), traceback=text)


class SerialRunner:
    """Runs the jobs one after another in the calling process."""

    def run(
        self,
        fn: Callable[[dict[str, Any]], T],
        configs: Sequence[dict[str, Any]],
        *,
        progress: Progress | None = None,
    ) -> list[JobOutcome[T]]:
        """Run ``fn`` on each configuration in turn.

        Args:
            fn: The job; it receives a deep copy of each config.
            configs: The configurations.
            progress: Called as ``progress(finished, total)`` after each job.

        Returns:
            One outcome per configuration, in order.
        """
        outcomes: list[JobOutcome[T]] = []
        for config in configs:
            try:
                outcomes.append(JobOutcome(config=config, result=fn(copy.deepcopy(config))))
            except Exception as exc:  # one failing job must not stop the others
                outcomes.append(_failure(config, exc))
            if progress is not None:
                progress(len(outcomes), len(configs))
        return outcomes


def _call_job(
    fn: Callable[[dict[str, Any]], T], config: dict[str, Any]
) -> tuple[T | None, str | None, str | None]:
    """Child-side wrapper: run the job and return (result, error, traceback).

    Catching in the child keeps exceptions that cannot be pickled from
    breaking the pool.
    """
    try:
        return fn(config), None, None
    except Exception as exc:
        return None, error_line(exc), "".join(traceback.format_exception(exc))


def _check_importable(fn: Callable[..., Any]) -> None:
    """Reject functions a spawned child cannot import by name."""
    qualname = getattr(fn, "__qualname__", "")
    if not qualname or "<lambda>" in qualname or "<locals>" in qualname:
        raise TypeError(
            f"LocalProcessRunner needs a module-level function, got {qualname or fn!r}; "
            "define the job at the top level of a module"
        )


class LocalProcessRunner:
    """Runs the jobs in parallel worker processes on this machine (spawn start method)."""

    def __init__(self, max_workers: int | None = None) -> None:
        """Create the runner.

        Args:
            max_workers: Number of worker processes; None uses the CPU count.
                Never more than the number of jobs is started.
        """
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers

    def run(
        self,
        fn: Callable[[dict[str, Any]], T],
        configs: Sequence[dict[str, Any]],
        *,
        progress: Progress | None = None,
    ) -> list[JobOutcome[T]]:
        """Run ``fn`` on every configuration in worker processes.

        A worker that dies (e.g. killed for memory) breaks the pool: its job
        and the jobs not yet finished get outcomes with the pool error.

        Args:
            fn: The job, a module-level function (it is imported by name in the workers).
            configs: The configurations (picklable plain data).
            progress: Called in this process as ``progress(finished, total)``
                after each job, in completion order.

        Returns:
            One outcome per configuration, in the order of ``configs``.

        Raises:
            TypeError: if ``fn`` is a lambda or a nested function.
        """
        _check_importable(fn)
        total = len(configs)
        if total == 0:
            return []
        workers = min(self.max_workers or multiprocessing.cpu_count(), total)
        outcomes: list[JobOutcome[T] | None] = [None] * total
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures: dict[Future[tuple[T | None, str | None, str | None]], int] = {
                pool.submit(_call_job, fn, config): index for index, config in enumerate(configs)
            }
            for finished, future in enumerate(as_completed(futures), start=1):
                index = futures[future]
                config = configs[index]
                try:
                    result, error, trace = future.result()
                except Exception as exc:  # pool broken, result not picklable, ...
                    outcomes[index] = _failure(config, exc)
                else:
                    outcomes[index] = JobOutcome(config=config, result=result, error=error, traceback=trace)
                if progress is not None:
                    progress(finished, total)
        return [outcome for outcome in outcomes if outcome is not None]
