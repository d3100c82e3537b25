"""``RayRunner``: run a sweep's jobs as Ray tasks, on this machine or on a Ray cluster.

It implements the ``Runner`` protocol of ``decisions.jobs.runner``: each configuration becomes
one Ray task that calls the same module-level job function a ``LocalProcessRunner`` worker
calls, and returns the same small ``JobOutcome`` (a job's arrays and files stay in the run
store and its artifact folder; only its return value, e.g. a run id, comes back).

- Resources: each task declares ``num_cpus`` (default 1), ``memory`` (default 1.5 GiB, a
  reservation Ray schedules by, not a limit) and ``num_gpus`` (default 0).
- Retries: a task whose worker process dies (killed, out of memory, node lost) runs again,
  up to ``max_retries`` times; a job's own exception is not retried (``retry_exceptions=False``),
  it is the outcome's error. The run the dead attempt recorded stays ``running`` in the store
  (it reads as ``lost``); ``RayRunner.retries_dead_workers`` tells ``execute_specs`` to mark such
  runs ``failed`` once the sweep has ended.
- Progress: ``progress(finished, total)`` is fed from task completions (``ray.wait``).
- Where: ``address=None`` joins the Ray this process is already connected to, else
  ``$RAY_ADDRESS``, else starts a local Ray with this machine's cores, bound to 127.0.0.1
  (``start_local_cluster``), without the dashboard, and shuts it down at the end of the run.
  ``"auto"``, ``"host:port"`` or ``"ray://host:port"`` joins that cluster (where ``decisions``
  must be installed, and the run store reachable).
- Environment: the driver's ``DECISIONS_*`` variables (the run store, the artifacts folder)
  are set in the worker for the length of each job, so the workers record where the driver
  would.
- Stopping: a ``KeyboardInterrupt`` in the driver (Ctrl-C, or SIGTERM turned into
  ``Terminated``) cancels every unfinished task: queued ones never start (``cancelled``),
  running ones get a ``KeyboardInterrupt`` (their recorded run ends ``interrupted``); those
  still running after ``stop_grace_s`` are killed with their worker. The runner then raises
  ``RunnerStopped`` with one outcome per configuration.

Ray is an optional dependency (``pip install -e ".[ray]"``): this module imports it only when
a runner runs; building a ``RayRunner`` without Ray installed raises ``InputError`` on field
``backend``.
"""

from __future__ import annotations

import _thread
import dataclasses
import importlib.util
import logging
import os
import re
import signal
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import FrameType, ModuleType
from typing import Any, TypeVar

from decisions.errors import InputError, error_line
from decisions.jobs.interrupt import REDELIVER_AFTER_S, Terminated, in_store_call
from decisions.jobs.runner import (
    CANCELLED,
    INTERRUPTED,
    STOP_GRACE_S,
    Config,
    JobOutcome,
    Progress,
    RunnerStopped,
    _failure,
    _stopped,
    attempt,
)

log = logging.getLogger(__name__)

T = TypeVar("T")

RAY_MISSING = 'Ray is not installed (pip install -e ".[ray]")'
"""The problem reported on field ``backend`` when Ray is asked for but not installed."""

DEFAULT_NUM_CPUS = 1.0
"""CPUs each task reserves."""
DEFAULT_MEMORY_MB = 1536
"""Memory each task reserves, in MiB (a worker running gas storage grid points peaks at 1.2 GiB resident)."""
DEFAULT_MAX_RETRIES = 3
"""How many times a task whose worker died runs again."""

FORWARDED_ENV_PREFIX = "DECISIONS_"
"""Environment variables of the driver that each job sees in its worker (store and artifacts)."""

LOOPBACK = "127.0.0.1"
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch for multi-node clusters: set to 0 before Ray starts, its processes listen on
127.0.0.1 only and the node is labelled 127.0.0.1 (otherwise they listen on every interface)."""

WAIT_SLICE_S = 1.0
"""Longest single ``ray.wait``: the driver returns to Python at least this often, so a
Ctrl-C or SIGTERM is handled promptly."""

_ADDRESS = re.compile(r"^(ray://)?[A-Za-z0-9.\-\[\]:]+:(\d{1,5})$")


def ray_available() -> bool:
    """Whether Ray can be imported here (without importing it)."""
    return importlib.util.find_spec("ray") is not None


def check_address(address: str | None) -> str | None:
    """Validate a Ray cluster address.

    Args:
        address: None, ``"auto"``, ``"host:port"`` or ``"ray://host:port"``.

    Returns:
        The address, stripped.

    Raises:
        InputError: on field ``address`` when it is none of those.
    """
    if address is None:
        return None
    text = address.strip()
    if text == "auto":
        return text
    match = _ADDRESS.match(text)
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise InputError("address", f"expected 'auto', 'host:port' or 'ray://host:port', got {address!r}")
    return text


def _import_ray() -> ModuleType:
    """Import Ray, or raise the one-line ``InputError`` saying how to install it."""
    if not ray_available():
        raise InputError("backend", RAY_MISSING)
    import ray

    return ray


@contextmanager
def _keep_sigterm_handler() -> Iterator[None]:
    """Restore this process's SIGTERM handler after the block (``ray.init`` installs one that exits)."""
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and handler is not None:
            signal.signal(signal.SIGTERM, handler)


@contextmanager
def _noting_sigterm(seen: list[int]) -> Iterator[None]:
    """Append each SIGTERM received in the block to ``seen``, then handle it as before.

    A ``Terminated`` raised while ``ray.wait`` runs reaches the caller as a plain
    ``KeyboardInterrupt`` (Ray's signal check re-raises it so): ``seen`` tells which it was.
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


@contextmanager
def _local_only() -> Iterator[None]:
    """Make the Ray started in the block listen on 127.0.0.1 only (see ``LOCAL_ONLY_ENV``).

    The processes Ray starts read the variable from their environment; this process read it
    when it imported Ray, so its module-level copy is set too.
    """
    before = os.environ.get(LOCAL_ONLY_ENV)
    os.environ[LOCAL_ONLY_ENV] = "0"
    constants = _ray_constants()
    enabled = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if enabled:
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[union-attr]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(LOCAL_ONLY_ENV, None)
        else:
            os.environ[LOCAL_ONLY_ENV] = before
        if enabled:
            constants.ENABLE_RAY_CLUSTER = enabled  # type: ignore[union-attr]


def _ray_constants() -> ModuleType | None:
    """Ray's ``ray_constants`` module (private, hence looked up defensively)."""
    try:
        from ray._private import ray_constants
    except ImportError:
        return None
    return ray_constants


def start_local_cluster(num_cpus: int | None = None, *, temp_dir: str | None = None) -> str:
    """Start a Ray on this machine for this process: 127.0.0.1 only, no dashboard.

    This process's SIGTERM handler is kept (``ray.init`` replaces it with one that exits, which
    would skip the recording of interrupted runs).

    Args:
        num_cpus: CPUs Ray may schedule on; None uses ``os.cpu_count()``.
        temp_dir: Ray's session folder root; None keeps Ray's default (``/tmp/ray``).

    Returns:
        The IP address of the node (``127.0.0.1``).

    Raises:
        InputError: on field ``backend`` when Ray is not installed or cannot start.
    """
    ray = _import_ray()
    options: dict[str, Any] = {
        "num_cpus": num_cpus or os.cpu_count() or 1,
        "include_dashboard": False,
        "_node_ip_address": LOOPBACK,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
    }
    if temp_dir is not None:
        options["_temp_dir"] = temp_dir
    try:
        with _keep_sigterm_handler(), _local_only():
            ray.init(**options)
    except (RuntimeError, OSError, ValueError) as exc:
        raise InputError("backend", f"Ray could not start here: {error_line(exc)}") from exc
    node_ip = str(ray.util.get_node_ip_address())
    if node_ip != LOOPBACK:
        log.warning("the local Ray node is %s, not %s: it may listen on every interface", node_ip, LOOPBACK)
    return node_ip


def join_cluster(address: str) -> None:
    """Connect this process to the Ray cluster at ``address`` (SIGTERM handler kept).

    Args:
        address: ``"auto"``, ``"host:port"`` or ``"ray://host:port"``.

    Raises:
        InputError: on field ``address`` when the cluster cannot be reached.
    """
    ray = _import_ray()
    try:
        with _keep_sigterm_handler():
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, OSError, ValueError) as exc:
        raise InputError("address", f"cannot join the Ray cluster at {address!r}: {error_line(exc)}") from exc


# --- in the worker ---------------------------------------------------------------------------


class _WorkerState:
    """What a Ray worker process knows of its job: whether one runs, and which (a counter)."""

    in_job = False
    job = 0


_WORKER = _WorkerState()


def _on_cancel(signum: int, frame: FrameType | None) -> None:
    """SIGINT handler in a Ray worker: ``ray.cancel`` simulates SIGINT in the task's thread.

    Raises ``KeyboardInterrupt`` in the running job (its recorded run ends ``interrupted``);
    inside a run store call the interruption is delivered again a moment later instead (as
    ``interrupt.interrupt_unless_in_store`` does for SIGTERM; Ray workers block a real SIGINT,
    so it is simulated again). Between jobs it does nothing.
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
    """The body of each Ray task: run one job and return its outcome (it never raises).

    Args:
        fn: The job.
        config: Its configuration.
        env: The driver's ``DECISIONS_*`` environment variables.

    Returns:
        The outcome; ``interrupted`` when the task was cancelled while the job ran.
    """
    _install_cancel_handler()
    _WORKER.job += 1
    _WORKER.in_job = True
    try:
        with _environment(env):
            return attempt(fn, config)
    except KeyboardInterrupt as exc:
        return _stopped(config, INTERRUPTED, exc)
    finally:
        _WORKER.in_job = False


# --- in the driver ---------------------------------------------------------------------------


class RayRunner:
    """Runs the jobs as Ray tasks (see the module docstring)."""

    retries_dead_workers = True
    """Its tasks run again when their worker dies: ``execute_specs`` then marks the runs the dead
    attempts left ``running`` as ``failed`` once the sweep has ended."""

    runs_parts = True
    """A single job run with this runner hands its independent parts to it (``decisions.jobs.parts``)."""

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
        """Create the runner (Ray is not started here).

        Args:
            address: The cluster to join: ``"auto"``, ``"host:port"`` or ``"ray://host:port"``;
                None joins the Ray already connected, else ``$RAY_ADDRESS``, else starts a
                local one.
            num_cpus: CPUs each task reserves (fractions allowed: 0.25 runs four per CPU).
            memory_mb: Memory each task reserves, in MiB; None reserves none.
            num_gpus: GPUs each task reserves.
            max_retries: Times a task whose worker died runs again (0: never).
            stop_grace_s: Seconds cancelled running tasks get to record their interrupted runs
                before they are killed with their worker.
            local_cpus: CPUs of a local Ray this runner starts; None uses ``os.cpu_count()``.

        Raises:
            InputError: on field ``backend`` when Ray is not installed, on ``address`` when the
                address is malformed.
            ValueError: on a negative or zero resource, or negative retries.
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
        """``Runner.run`` as Ray tasks; ``fn`` and the configs are pickled (cloudpickle) to the workers.

        Returns:
            One outcome per configuration, in order; a task whose worker died more than
            ``max_retries`` times gets Ray's error.

        Raises:
            InputError: Ray is not installed, cannot start, or the cluster cannot be joined.
            RunnerStopped: when interrupted (see the module docstring).
        """
        total = len(configs)
        if total == 0:
            return []
        ray = _import_ray()
        try:
            started_here = self._connect(ray)
        except KeyboardInterrupt as exc:  # stopped while Ray started: nothing ran
            _shutdown_quietly(ray)
            raise RunnerStopped([_stopped(config, CANCELLED) for config in configs], exc) from exc
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
            settled = [outcome or _stopped(config, CANCELLED) for outcome, config in zip(outcomes, configs, strict=True)]
            raise RunnerStopped(settled, cause) from exc
        return [outcome for outcome in outcomes if outcome is not None]


def _shutdown_quietly(ray: ModuleType) -> None:
    """Disconnect from (and stop, if this process started it) a Ray that may be half started."""
    try:
        ray.shutdown()
    except Exception:  # nothing more to stop
        log.debug("ray.shutdown failed", exc_info=True)


def _collected(ray: ModuleType, ref: Any, config: Config, *, stopping: bool) -> JobOutcome[Any]:
    """The outcome a finished task returned (with the driver's own config), or one for Ray's error.

    After a stop, a task cancelled before it ran is ``cancelled``, one killed or unfinished is
    ``interrupted``.
    """
    from ray.exceptions import GetTimeoutError, RayError, TaskCancelledError

    try:
        outcome = ray.get(ref, timeout=0 if stopping else None)
    except TaskCancelledError:
        return _stopped(config, CANCELLED)
    except GetTimeoutError:
        return _stopped(config, INTERRUPTED)
    except RayError as exc:  # the worker died more than max_retries times, the node was lost, ...
        return _stopped(config, INTERRUPTED, exc) if stopping else _failure(config, exc)
    return dataclasses.replace(outcome, config=config)


def _cancel(ray: ModuleType, refs: Sequence[Any], grace_s: float) -> None:
    """Cancel unfinished tasks: queued ones are dropped, running ones interrupted; those still
    running after ``grace_s`` are killed with their worker."""
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
