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

Stopping: a ``KeyboardInterrupt`` in the calling process (Ctrl-C, or SIGTERM turned into
``Terminated``) stops the whole sweep. Queued jobs never start (outcome ``cancelled``);
running ones are interrupted: in process the exception reaches them, worker processes get
SIGTERM, which raises ``Terminated`` inside their job (so a recorded run is marked
``interrupted``); once every job has reported, or after ``stop_grace_s``, the workers are
killed. The runner then raises ``RunnerStopped`` with one outcome per configuration.
Workers ignore SIGINT: Ctrl-C reaches the whole process group, and the parent stops them
in order.

A distributed engine implements the same ``Runner`` Protocol:
``decisions.jobs.ray_runner.RayRunner`` submits ``fn`` as a Ray task per
config; jobs, specs and the CLI do not change, they only receive a different
runner (``execute.choose_runner``).
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
from decisions.jobs.interrupt import interrupt_unless_in_store, redeliver_swallowed_interrupts, signal_number

T = TypeVar("T")

Config = dict[str, Any]
"""One job configuration (plain, picklable data)."""

Progress = Callable[[int, int], None]
"""Progress callback: ``progress(finished, total)``, called after each job ends."""

INTERRUPTED = "interrupted"
"""``JobOutcome.stopped`` of a job that was running when its sweep was stopped."""
CANCELLED = "cancelled"
"""``JobOutcome.stopped`` of a queued job that never started because its sweep was stopped."""

STOP_GRACE_S = 10.0
"""How long stopped workers get to record their interrupted runs before they are killed."""


@dataclass(frozen=True)
class JobOutcome(Generic[T]):
    """What one job produced: its result, or the error it raised."""

    config: Config
    """The configuration the job was given."""
    result: T | None = None
    """The job's return value; None when it failed."""
    error: str | None = None
    """One line ``"ExceptionType: message"`` when the job failed or was stopped, else None."""
    traceback: str | None = None
    """The formatted traceback when the job failed, for logs."""
    stopped: str | None = None
    """``"interrupted"`` or ``"cancelled"`` when the sweep was stopped before the job ended, else None."""

    @property
    def ok(self) -> bool:
        """Whether the job finished without raising."""
        return self.error is None


class RunnerStopped(KeyboardInterrupt):
    """A runner stopped by ``KeyboardInterrupt`` (Ctrl-C, SIGTERM): every job has ended or was dropped.

    Args:
        outcomes: One outcome per configuration, in order (``stopped`` set on those that did not end).
        cause: The interruption.
    """

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
        """Run ``fn`` once per configuration.

        Args:
            fn: The job, a module-level function of one config dict.
            configs: The configurations.
            progress: Called as ``progress(finished, total)`` after each job.

        Returns:
            One outcome per configuration, in the order of ``configs``.

        Raises:
            RunnerStopped: when interrupted; the running jobs were stopped, the queued ones dropped.
        """
        ...


def _failure(config: Config, exc: BaseException) -> JobOutcome[Any]:
    text = "".join(traceback.format_exception(exc))
    return JobOutcome(config=config, error=error_line(exc), traceback=text)


def _stopped(config: Config, how: str, exc: BaseException | None = None) -> JobOutcome[Any]:
    error = f"{how}: {error_line(exc)}" if exc is not None else f"{how}: the sweep was stopped"
    return JobOutcome(config=config, error=error, stopped=how)


def attempt(fn: Callable[[Config], T], config: Config) -> JobOutcome[T]:
    """Run one job on a deep copy of its config; an ``Exception`` becomes a failed outcome.

    Args:
        fn: The job.
        config: Its configuration (kept unchanged in the outcome).

    Returns:
        The outcome. ``KeyboardInterrupt`` and other non-``Exception`` errors propagate.
    """
    try:
        return JobOutcome(config=config, result=fn(copy.deepcopy(config)))
    except Exception as exc:  # one failing job must not stop the others
        return _failure(config, exc)


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
                outcomes.append(_stopped(configs[len(outcomes)], INTERRUPTED, exc))
            outcomes.extend(_stopped(config, CANCELLED) for config in configs[len(outcomes):])
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
    """Child-side wrapper: run the job and return its outcome (never raises).

    Catching in the child keeps exceptions that cannot be pickled from breaking the pool.
    A worker asked to stop returns ``cancelled`` for the jobs it still receives.
    """
    if _WORKER.stopping:
        return _stopped(config, CANCELLED)
    _WORKER.in_job = True
    try:
        return attempt(fn, config)
    except KeyboardInterrupt as exc:
        _WORKER.stopping = True
        return _stopped(config, INTERRUPTED, exc)
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
        return _stopped(config, CANCELLED)
    if not future.done():
        return _stopped(config, INTERRUPTED)
    try:
        return future.result()
    except Exception as exc:  # pool broken (a worker died), result not picklable, ...
        return _stopped(config, INTERRUPTED, exc) if stopping else _failure(config, exc)


def _stop_pool(pool: ProcessPoolExecutor, futures: Sequence[Future[Any]], grace_s: float) -> None:
    """Cancel the queued jobs, SIGTERM the workers and wait up to ``grace_s`` for every job to report.

    The workers are then killed: each has recorded its interrupted run and reported by then (or
    overran the grace), so nothing is lost, and no worker lingers in its interpreter's teardown.
    """
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
        """Create the runner.

        Args:
            max_workers: Number of worker processes; None uses the CPU count.
                Never more than the number of jobs is started.
            stop_grace_s: Seconds stopped workers get to record their interrupted runs
                before they are killed.
        """
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers must be at least 1, got {max_workers}")
        self.max_workers = max_workers
        self.stop_grace_s = stop_grace_s

    def run(
        self, fn: Callable[[Config], T], configs: Sequence[Config], *, progress: Progress | None = None
    ) -> list[JobOutcome[T]]:
        """``Runner.run`` in worker processes (``fn`` is imported by name there; configs are pickled).

        A worker that dies (e.g. killed for memory) breaks the pool: its job
        and the jobs not yet finished get outcomes with the pool error. ``progress``
        is called in this process, in completion order.

        Raises:
            TypeError: if ``fn`` is a lambda or a nested function.
            RunnerStopped: when interrupted (see the module docstring).
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
            settled = [outcome or _stopped(config, CANCELLED) for outcome, config in zip(outcomes, configs, strict=True)]
            raise RunnerStopped(settled, exc) from exc
        finally:
            pool.shutdown(wait=True)
        return [outcome for outcome in outcomes if outcome is not None]
