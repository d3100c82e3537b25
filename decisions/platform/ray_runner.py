"""``RayRunner``: the ``Runner`` that runs each configuration as a Ray task, here or on a cluster.

A task whose worker dies runs again; a job's own exception does not. Each job sees the driver's
``DECISIONS_*`` variables. A ``KeyboardInterrupt`` cancels every unfinished task.
"""

from __future__ import annotations

import _thread
import dataclasses
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType, ModuleType
from typing import Any, TypeVar

from decisions.errors import InputError
from decisions.platform.interrupt import REDELIVER_AFTER_S, Terminated, in_store_call
from decisions.platform.ray_cluster import (
    RAY_MISSING,
    check_address,
    import_ray,
    join_cluster,
    ray_available,
    start_local_cluster,
)
from decisions.platform.runner import (
    CANCELLED,
    INTERRUPTED,
    STOP_GRACE_S,
    Config,
    JobOutcome,
    Progress,
    RunnerStopped,
    attempt,
    failure_outcome,
    stopped_outcome,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

DEFAULT_NUM_CPUS = 1.0
"""CPUs each task reserves."""
DEFAULT_MEMORY_MB = 1536
"""Memory each task reserves, in MiB (a scheduling reservation, not a limit)."""
DEFAULT_MAX_RETRIES = 3
"""How many times a task whose worker died runs again."""

FORWARDED_ENV_PREFIX = "DECISIONS_"
"""Environment variables of the driver that each job sees in its worker."""

WAIT_SLICE_S = 1.0
"""Longest single ``ray.wait``, so the driver handles a Ctrl-C or SIGTERM promptly."""


@contextmanager
def _noting_sigterm(seen: list[int]) -> Iterator[None]:
    """Append each SIGTERM received in the block to ``seen``, then handle it as before.

    Ray re-raises a ``Terminated`` raised inside ``ray.wait`` as a plain ``KeyboardInterrupt``.
    """
    previous = signal.getsignal(signal.SIGTERM)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        yield
        return

    def note(signum: int, frame: FrameType | None) -> None:
        seen.append(signum)
        previous(signum, frame)

    signal.signal(signal.SIGTERM, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


# --- in the worker ---------------------------------------------------------------------------


class _WorkerState:
    """What a Ray worker process knows of its job: whether one runs, and which (a counter)."""

    in_job = False
    job = 0


_WORKER = _WorkerState()


def _on_cancel(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler of a Ray worker (``ray.cancel`` simulates SIGINT): interrupt the running job.

    Inside a run store call the interruption is delivered again a moment later; between jobs it does nothing.
    """
    if not _WORKER.in_job:
        return
    if in_store_call(frame):
        timer = threading.Timer(REDELIVER_AFTER_S, _interrupt_job, (_WORKER.job,))
        timer.daemon = True
        timer.start()
        return
    raise KeyboardInterrupt("the sweep was stopped")


def _interrupt_job(job: int) -> None:
    """Interrupt the main thread again if job number ``job`` still runs."""
    if _WORKER.in_job and _WORKER.job == job:
        _thread.interrupt_main()


def _install_cancel_handler() -> None:
    """Handle Ray's cancellation with ``_on_cancel`` (once per worker, from its main thread)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is not _on_cancel:
        signal.signal(signal.SIGINT, _on_cancel)


@contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """Set the driver's ``DECISIONS_*`` variables (and drop the worker's others) for the block."""
    before = {name: value for name, value in os.environ.items() if name.startswith(FORWARDED_ENV_PREFIX)}
    for name in before:
        if name not in values:
            del os.environ[name]
    os.environ.update(values)
    try:
        yield
    finally:
        for name in [name for name in os.environ if name.startswith(FORWARDED_ENV_PREFIX)]:
            if name not in before:
                del os.environ[name]
        os.environ.update(before)


def run_in_worker(fn: Callable[[Config], T], config: Config, env: Mapping[str, str]) -> JobOutcome[T]:
    """The body of each Ray task: run one job with the driver's ``env`` and return its outcome; never raises.

    The outcome is ``interrupted`` when the task was cancelled while the job ran.
    """
    _install_cancel_handler()
    _WORKER.job += 1
    _WORKER.in_job = True
    try:
        with _environment(env):
            return attempt(fn, config)
    except KeyboardInterrupt as exc:
        return stopped_outcome(config, INTERRUPTED, exc)
    finally:
        _WORKER.in_job = False


# --- in the driver ---------------------------------------------------------------------------


class RayRunner:
    """Runs the jobs as Ray tasks (see the module docstring)."""

    retries_dead_workers = True
    """Tasks run again when their worker dies, so ``execute_specs`` fails the runs dead attempts left."""

    runs_parts = True
    """A single job run with this runner hands its independent parts to it (``decisions.kit.parts``)."""

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: float = DEFAULT_NUM_CPUS,
        memory_mb: int | None = DEFAULT_MEMORY_MB,
        num_gpus: float = 0.0,
        max_retries: int = DEFAULT_MAX_RETRIES,
        stop_grace_s: float = STOP_GRACE_S,
        local_cpus: int | None = None,
    ) -> None:
        """Create the runner; Ray is not started here.

        ``address`` None joins the Ray already connected, else ``$RAY_ADDRESS``, else starts a
        local one on ``local_cpus`` (None: all). Each task reserves ``num_cpus``, ``memory_mb``
        (MiB; None: none) and ``num_gpus``.

        Raises:
            InputError: on ``backend`` when Ray is not installed, on ``address`` when malformed.
            ValueError: on a non-positive resource or negative retries.
        """
        if not ray_available():
            raise InputError("backend", RAY_MISSING)
        if num_cpus <= 0 or num_gpus < 0 or (memory_mb is not None and memory_mb <= 0):
            raise ValueError(f"resources must be positive, got num_cpus={num_cpus}, memory_mb={memory_mb}, num_gpus={num_gpus}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be at least 0, got {max_retries}")
        self.address = check_address(address)
        self.num_cpus = num_cpus
        self.memory_mb = memory_mb
        self.num_gpus = num_gpus
        self.max_retries = max_retries
        self.stop_grace_s = stop_grace_s
        self.local_cpus = local_cpus

    def run(
        self, fn: Callable[[Config], T], configs: Sequence[Config], *, progress: Progress | None = None
    ) -> list[JobOutcome[T]]:
        """``Runner.run`` as Ray tasks (``fn`` and the configs are cloudpickled to the workers).

        A task whose worker died more than ``max_retries`` times gets Ray's error as its outcome.

        Raises:
            InputError: Ray is not installed, cannot start, or the cluster cannot be joined.
            RunnerStopped: when interrupted.
        """
        total = len(configs)
        if total == 0:
            return []
        ray = import_ray()
        try:
            started_here = self._connect(ray)
        except KeyboardInterrupt as exc:  # stopped while Ray started: nothing ran
            _shutdown_quietly(ray)
            raise RunnerStopped([stopped_outcome(config, CANCELLED) for config in configs], exc) from exc
        try:
            return self._run(ray, fn, configs, progress)
        finally:
            if started_here:
                ray.shutdown()

    def _connect(self, ray: ModuleType) -> bool:
        """Join or start Ray; True when this runner started it (and shuts it down after its run)."""
        if ray.is_initialized():
            return False
        address = self.address or check_address(os.environ.get("RAY_ADDRESS") or None)
        if address is None:
            start_local_cluster(self.local_cpus)
        else:
            join_cluster(address)
        return True

    def _task_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {
            "num_cpus": self.num_cpus,
            "num_gpus": self.num_gpus,
            "max_retries": self.max_retries,
            "retry_exceptions": False,
        }
        if self.memory_mb is not None:
            options["memory"] = self.memory_mb * 1024 * 1024
        return options

    def _run(
        self, ray: ModuleType, fn: Callable[[Config], T], configs: Sequence[Config], progress: Progress | None
    ) -> list[JobOutcome[T]]:
        total = len(configs)
        env = {name: value for name, value in os.environ.items() if name.startswith(FORWARDED_ENV_PREFIX)}
        task = ray.remote(run_in_worker).options(**self._task_options())
        job = ray.put(fn)
        refs = [task.remote(job, config, env) for config in configs]
        index = {ref: position for position, ref in enumerate(refs)}
        outcomes: list[JobOutcome[T] | None] = [None] * total
        pending = list(refs)
        sigterms: list[int] = []
        try:
            with _noting_sigterm(sigterms):
                while pending:
                    ready, pending = ray.wait(pending, num_returns=1, timeout=WAIT_SLICE_S)
                    for ref in ready:
                        position = index[ref]
                        outcomes[position] = _collected(ray, ref, configs[position], stopping=False)
                        if progress is not None:
                            progress(total - len(pending), total)
        except KeyboardInterrupt as exc:
            cause = exc if isinstance(exc, Terminated) or not sigterms else Terminated(sigterms[-1])
            unfinished = [ref for ref in refs if outcomes[index[ref]] is None]
            _cancel(ray, unfinished, self.stop_grace_s)
            for ref in unfinished:
                outcomes[index[ref]] = _collected(ray, ref, configs[index[ref]], stopping=True)
            settled = [outcome or stopped_outcome(config, CANCELLED) for outcome, config in zip(outcomes, configs, strict=True)]
            raise RunnerStopped(settled, cause) from exc
        return [outcome for outcome in outcomes if outcome is not None]


def _shutdown_quietly(ray: ModuleType) -> None:
    """Shut down a Ray that may be half started, ignoring errors."""
    try:
        ray.shutdown()
    except Exception:  # nothing more to stop
        log.debug("ray.shutdown failed", exc_info=True)


def _collected(ray: ModuleType, ref: Any, config: Config, *, stopping: bool) -> JobOutcome[Any]:
    """The outcome a finished task returned (with the driver's config), or one for Ray's error.

    After a stop: ``cancelled`` for a task that never ran, ``interrupted`` for one killed or unfinished.
    """
    from ray.exceptions import GetTimeoutError, RayError, TaskCancelledError

    try:
        outcome = ray.get(ref, timeout=0 if stopping else None)
    except TaskCancelledError:
        return stopped_outcome(config, CANCELLED)
    except GetTimeoutError:
        return stopped_outcome(config, INTERRUPTED)
    except RayError as exc:  # the worker died more than max_retries times, the node was lost, ...
        return stopped_outcome(config, INTERRUPTED, exc) if stopping else failure_outcome(config, exc)
    return dataclasses.replace(outcome, config=config)


def _cancel(ray: ModuleType, refs: Sequence[Any], grace_s: float) -> None:
    """Cancel unfinished tasks; those still running after ``grace_s`` are killed with their worker."""
    for ref in refs:
        ray.cancel(ref, force=False)
    try:
        _, running = ray.wait(list(refs), num_returns=len(refs), timeout=grace_s)
    except KeyboardInterrupt:  # asked again: stop waiting
        running = list(refs)
    for ref in running:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # already finished, or Ray refuses: its run is marked interrupted by the caller
            log.debug("could not kill a cancelled task", exc_info=True)
    if running:
        ray.wait(list(running), num_returns=len(running), timeout=grace_s)
