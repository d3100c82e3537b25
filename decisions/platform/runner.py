"""Runners: call a module-level job ``fn(config) -> T`` once per configuration, in order.

A job that raises yields an outcome with its error and does not stop the others.
``SerialRunner`` runs in this process; ``LocalProcessRunner`` in spawned worker processes
(configs and results are pickled). A ``KeyboardInterrupt`` stops the sweep: queued jobs are
``cancelled``, running ones ``interrupted``, and the runner raises ``RunnerStopped``.
"""

from __future__ import annotations

import copy
import multiprocessing
import signal
import traceback
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed, wait
from dataclasses import dataclass
from types import FrameType
from typing import Any, Generic, Protocol, TypeVar

from decisions.errors import error_line
from decisions.platform.interrupt import (
    interrupt_unless_in_store,
    redeliver_swallowed_interrupts,
    signal_number,
)

T = TypeVar("T")

Config = dict[str, Any]
"""One job configuration (plain, picklable data)."""

Progress = Callable[[int, int], None]
"""``progress(finished, total)``, called after each job ends."""

INTERRUPTED = "interrupted"
CANCELLED = "cancelled"
"""``JobOutcome.stopped`` of a job running when its sweep was stopped, or queued and never started."""

STOP_GRACE_S = 10.0
"""Seconds stopped workers get to record their interrupted runs before they are killed."""


@dataclass(frozen=True)
class JobOutcome(Generic[T]):
    """What one job produced: its result (None when it failed), or its one-line error and traceback.

    ``stopped`` is ``"interrupted"`` or ``"cancelled"`` when the sweep was stopped before the job ended.
    """

    config: Config
    result: T | None = None
    error: str | None = None
    traceback: str | None = None
    stopped: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the job finished without raising."""
        return self.error is None


class RunnerStopped(KeyboardInterrupt):
    """A runner stopped by ``cause``; ``outcomes`` has one per configuration, ``stopped`` set where it did not end."""

    def __init__(self, outcomes: Sequence[JobOutcome[Any]], cause: BaseException) -> None:
        self.outcomes = list(outcomes)
        self.signum = signal_number(cause)
        left = sum(outcome.stopped is not None for outcome in self.outcomes)
        super().__init__(f"stopped: {left} of {len(self.outcomes)} jobs did not end")


class Runner(Protocol):
    """Executes a job function over a sequence of configurations."""

    def run(
        self, fn: Callable[[Config], T], configs: Sequence[Config], *, progress: Progress | None = None
    ) -> list[JobOutcome[T]]:
        """Run ``fn`` once per configuration; one outcome per configuration, in order.

        Raises:
            RunnerStopped: when interrupted; the running jobs were stopped, the queued ones dropped.
        """
        ...


def failure_outcome(config: Config, exc: BaseException) -> JobOutcome[Any]:
    """The outcome of a job that raised ``exc``."""
    text = "".join(traceback.format_exception(exc))
    return JobOutcome(config=config, error=error_line(exc), traceback=text)


def stopped_outcome(config: Config, how: str, exc: BaseException | None = None) -> JobOutcome[Any]:
    """The outcome of a job ``how`` (``INTERRUPTED`` or ``CANCELLED``) by a stop."""
    error = f"{how}: {error_line(exc)}" if exc is not None else f"{how}: the sweep was stopped"
    return JobOutcome(config=config, error=error, stopped=how)


def attempt(fn: Callable[[Config], T], config: Config) -> JobOutcome[T]:
    """Run one job on a deep copy of its config; an ``Exception`` becomes a failed outcome, others propagate."""
    try:
        return JobOutcome(config=config, result=fn(copy.deepcopy(config)))
    except Exception as exc:  # one failing job must not stop the others
        return failure_outcome(config, exc)


class SerialRunner:
    """Runs the jobs one after another in the calling process."""

    def run(
        self, fn: Callable[[Config], T], configs: Sequence[Config], *, progress: Progress | None = None
    ) -> list[JobOutcome[T]]:
        """``Runner.run`` in this process; each job receives a deep copy of its config."""
        outcomes: list[JobOutcome[T]] = []
        running = False
        try:
            for config in configs:
                running = True
                outcomes.append(attempt(fn, config))
                running = False
                if progress is not None:
                    progress(len(outcomes), len(configs))
        except KeyboardInterrupt as exc:
            if running:
                outcomes.append(stopped_outcome(configs[len(outcomes)], INTERRUPTED, exc))
            outcomes.extend(stopped_outcome(config, CANCELLED) for config in configs[len(outcomes):])
            raise RunnerStopped(outcomes, exc) from exc
        return outcomes


class _WorkerState:
    """What a worker process knows of its own stop: inside a job, asked to stop."""

    in_job = False
    stopping = False


_WORKER = _WorkerState()


def _init_worker() -> None:
    """Worker start-up: ignore Ctrl-C (the parent stops the workers) and stop a job on SIGTERM."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _on_sigterm)
    redeliver_swallowed_interrupts()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """In a worker: interrupt the running job (its run is recorded as interrupted); start no other."""
    _WORKER.stopping = True
    if _WORKER.in_job:
        interrupt_unless_in_store(signum, frame)


def _call_job(fn: Callable[[Config], T], config: Config) -> JobOutcome[T]:
    """In a worker: run the job and return its outcome, never raising; ``cancelled`` once asked to stop."""
    if _WORKER.stopping:
        return stopped_outcome(config, CANCELLED)
    _WORKER.in_job = True
    try:
        return attempt(fn, config)
    except KeyboardInterrupt as exc:
        _WORKER.stopping = True
        return stopped_outcome(config, INTERRUPTED, exc)
    finally:
        _WORKER.in_job = False


def _check_importable(fn: Callable[..., Any]) -> None:
    """Reject functions a spawned child cannot import by name."""
    qualname = getattr(fn, "__qualname__", "")
    if not qualname or "<lambda>" in qualname or "<locals>" in qualname:
        raise TypeError(
            f"LocalProcessRunner needs a module-level function, got {qualname or fn!r}; "
            "define the job at the top level of a module"
        )


def _collected(future: Future[JobOutcome[T]], config: Config, *, stopping: bool) -> JobOutcome[T]:
    """The outcome of a job's future; after a stop, a job without one counts as stopped."""
    if future.cancelled():
        return stopped_outcome(config, CANCELLED)
    if not future.done():
        return stopped_outcome(config, INTERRUPTED)
    try:
        return future.result()
    except Exception as exc:  # pool broken (a worker died), result not picklable, ...
        return stopped_outcome(config, INTERRUPTED, exc) if stopping else failure_outcome(config, exc)


def _stop_pool(pool: ProcessPoolExecutor, futures: Sequence[Future[Any]], grace_s: float) -> None:
    """Cancel the queued jobs, SIGTERM the workers, wait up to ``grace_s`` for every job, then kill them."""
    for future in futures:
        future.cancel()
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public handle before 3.14
    for process in processes:
        if process.is_alive():
            process.terminate()
    try:
        wait(futures, timeout=grace_s)
    except KeyboardInterrupt:
        pass  # asked again: stop waiting
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.kill()
        process.join(1.0)


class LocalProcessRunner:
    """Runs the jobs in parallel worker processes on this machine (spawn start method)."""

    def __init__(self, max_workers: int | None = None, *, stop_grace_s: float = STOP_GRACE_S) -> None:
        """Run on at most ``max_workers`` processes (None: the CPU count), never more than there are jobs."""
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.stop_grace_s = stop_grace_s

    def run(
        self, fn: Callable[[Config], T], configs: Sequence[Config], *, progress: Progress | None = None
    ) -> list[JobOutcome[T]]:
        """``Runner.run`` in worker processes; a worker that dies fails its job and the unfinished ones.

        Raises:
            TypeError: if ``fn`` is a lambda or a nested function (workers import it by name).
            RunnerStopped: when interrupted.
        """
        _check_importable(fn)
        total = len(configs)
        if total == 0:
            return []
        workers = min(self.max_workers or multiprocessing.cpu_count(), total)
        outcomes: list[JobOutcome[T] | None] = [None] * total
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker)
        futures: dict[Future[JobOutcome[T]], int] = {}
        try:
            for index, config in enumerate(configs):
                futures[pool.submit(_call_job, fn, config)] = index
            for finished, future in enumerate(as_completed(futures), start=1):
                index = futures[future]
                outcomes[index] = _collected(future, configs[index], stopping=False)
                if progress is not None:
                    progress(finished, total)
        except KeyboardInterrupt as exc:
            _stop_pool(pool, list(futures), self.stop_grace_s)
            for future, index in futures.items():
                outcomes[index] = outcomes[index] or _collected(future, configs[index], stopping=True)
            settled = [outcome or stopped_outcome(config, CANCELLED) for outcome, config in zip(outcomes, configs, strict=True)]
            raise RunnerStopped(settled, exc) from exc
        finally:
            pool.shutdown(wait=True)
        return [outcome for outcome in outcomes if outcome is not None]
