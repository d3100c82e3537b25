"""Run episodes: one controller on one scenario and demand, in a worker process, to metrics."""

from __future__ import annotations

import csv
import multiprocessing
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from decisions.errors import InputError
from decisions.mobility.traffic.controllers import Controller, make_controller
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.env import EpisodeSpec, make_env, pending_depart_delays, prepare_episode
from decisions.mobility.traffic.metrics import episode_metrics
from decisions.mobility.traffic.scenarios import Scenario, get_scenario, network
from decisions.mobility.traffic.sumo_setup import uses_libsumo

__all__ = ["EpisodePool", "EpisodeTask", "PhaseTrace", "read_phase_trace", "run_episode", "simulate", "simulate_many"]

PHASE_TRACE_COLUMNS = ("signal", "time_s", "phase")
"""Columns of a phase-trace CSV file."""


class PhaseTrace:
    """Records each signal's phase at every decision of the first ``seconds`` of an episode.

    The phase is sumo-rl's green-phase index of the signal's current SUMO state (the state string
    matched against ``ts.green_phases``), or -1 for a state that is no green phase (yellow,
    all-red, or a programme phase sumo-rl does not offer), so controllers that act through sumo-rl
    and those that run a SUMO programme (fixed-time, actuated) are recorded alike.

    Args:
        path: the CSV file written by ``write`` (columns :data:`PHASE_TRACE_COLUMNS`).
        seconds: simulated seconds recorded from the episode's begin.
    """

    def __init__(self, path: Path, seconds: float = 900.0) -> None:
        self.path = Path(path)
        self.seconds = float(seconds)
        self.rows: list[tuple[str, float, int]] = []
        self._greens: dict[str, list[str]] = {}

    def _green_states(self, ts: Any) -> list[str]:
        """sumo-rl's green-phase states of ``ts`` (rebuilt by sumo-rl's rule under ``fixed_ts``)."""
        if ts.id not in self._greens:
            phases = getattr(ts, "green_phases", None)
            if phases is None:  # fixed_ts: sumo-rl does not build them
                phases = ts.sumo.trafficlight.getAllProgramLogics(ts.id)[0].phases
                phases = [
                    p for p in phases
                    if "y" not in p.state and p.state.count("r") + p.state.count("s") != len(p.state)
                ]
            self._greens[ts.id] = [p.state for p in phases]
        return self._greens[ts.id]

    def record(self, env: Any) -> None:
        """Append every signal's phase now (nothing after ``seconds``)."""
        elapsed = env.sim_step - env.begin_time
        if elapsed > self.seconds:
            return
        for ts_id, ts in env.traffic_signals.items():
            state = ts.sumo.trafficlight.getRedYellowGreenState(ts_id)
            greens = self._green_states(ts)
            phase = greens.index(state) if state in greens else -1
            self.rows.append((ts_id, float(elapsed), phase))

    def write(self) -> Path:
        """Write the rows as CSV; returns the path."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(PHASE_TRACE_COLUMNS)
            writer.writerows(self.rows)
        return self.path


def read_phase_trace(path: Path) -> list[tuple[str, float, int]]:
    """The ``(signal, time_s, phase)`` rows of a file written by :class:`PhaseTrace`."""
    with Path(path).open(newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        return [(signal, float(time_s), int(phase)) for signal, time_s, phase in reader]


@dataclass(frozen=True)
class EpisodeTask:
    """One episode to run (picklable).

    Attributes:
        scenario: registered scenario name (or a :class:`scenarios.Scenario`, e.g. a custom one).
        controller: a controller name (:data:`controllers.CONTROLLERS`) or a picklable controller.
        demand: the demand draw.
        pedestrians: simulate the pedestrian net and flows.
        seconds: episode length (default: the scenario's window).
        workdir: directory for the episode's files (a unique subdirectory is made in it); None:
            a temporary directory, removed afterwards.
        cache_dir: pedestrian-net cache (default :func:`scenarios.default_cache_dir`).
        phase_trace: where to write the signals' phases at every decision (:class:`PhaseTrace`),
            or None.
        trace_seconds: simulated seconds the phase trace covers.
    """

    scenario: str | Scenario
    controller: str | Controller
    demand: Demand
    pedestrians: bool = True
    seconds: int | None = None
    workdir: Path | None = None
    cache_dir: Path | None = None
    phase_trace: Path | None = None
    trace_seconds: float = 900.0


def run_episode(
    spec: EpisodeSpec, controller: Controller, *, trace: PhaseTrace | None = None
) -> dict[str, float]:
    """Run one episode in this process (no other libsumo simulation may be open in it).

    Returns the metrics plus ``sim_seconds``, ``wall_seconds`` and ``sim_seconds_per_wall_second``;
    ``trace`` (optional) records the signals' phases, written when the episode ends.
    """
    spec = spec.with_additional(controller.additional_files(spec))
    start = time.perf_counter()
    env = make_env(spec, fixed_ts=controller.fixed_ts)
    try:
        env.reset()
        controller.reset(env)
        done = False
        while not done:
            if trace is not None:
                trace.record(env)
            _obs, _rewards, dones, _info = env.step(controller.act(env))
            done = bool(dones["__all__"])
        pending = pending_depart_delays(env)
    finally:
        env.close()
    wall = time.perf_counter() - start
    if trace is not None:
        trace.write()
    metrics = episode_metrics(spec.tripinfo, pending)
    metrics.update(
        sim_seconds=float(spec.seconds), wall_seconds=wall, sim_seconds_per_wall_second=spec.seconds / wall
    )
    return metrics


def _run_task(task: EpisodeTask) -> dict[str, float]:
    """Prepare and run a task (in a worker process)."""
    controller = make_controller(task.controller)
    base = Path(task.workdir) if task.workdir is not None else Path(tempfile.mkdtemp(prefix="traffic-"))
    name = getattr(controller, "name", "controller")
    label = f"{get_scenario(task.scenario).name}-{name}-s{task.demand.seed}-{uuid.uuid4().hex[:8]}"
    workdir = base / label if task.workdir is not None else base
    try:
        spec = prepare_episode(
            task.scenario,
            task.demand,
            workdir,
            pedestrians=task.pedestrians,
            seconds=task.seconds,
            cache_dir=task.cache_dir,
        )
        trace = PhaseTrace(task.phase_trace, task.trace_seconds) if task.phase_trace is not None else None
        return run_episode(spec, controller, trace=trace)
    finally:
        if task.workdir is None:
            shutil.rmtree(base, ignore_errors=True)


def _check(task: EpisodeTask) -> None:
    """Validate a task in the parent (fast errors) and build its pedestrian net once."""
    get_scenario(task.scenario)
    make_controller(task.controller)
    if not isinstance(task.demand, Demand):
        raise InputError("demand", f"expected a Demand, got {type(task.demand).__name__}")
    network(task.scenario, task.pedestrians, task.cache_dir)


def simulate(
    scenario_name: str | Scenario,
    controller: str | Controller,
    demand: Demand,
    *,
    pedestrians: bool = True,
    seconds: int | None = None,
    workdir: Path | None = None,
    cache_dir: Path | None = None,
    in_process: bool | None = None,
) -> dict[str, float]:
    """Run one episode of ``controller`` (a name or a picklable object) and return its metrics.

    ``seconds`` defaults to the scenario's window, ``workdir`` to a temporary directory (removed);
    ``in_process`` defaults to a spawned process when libsumo is in use, here otherwise. Returns
    :data:`metrics.METRIC_NAMES` plus ``sim_seconds``, ``wall_seconds`` and
    ``sim_seconds_per_wall_second``.
    """
    task = EpisodeTask(scenario_name, controller, demand, pedestrians, seconds, workdir, cache_dir)
    _check(task)
    if in_process is None:
        in_process = not uses_libsumo()
    if in_process:
        return _run_task(task)
    return simulate_many([task], workers=1)[0]


def _check_workers(workers: int) -> None:
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError("workers", f"must be a positive integer, got {workers!r}")


class EpisodePool:
    """Up to ``workers`` spawned processes that run episodes, kept for every ``simulate_many`` call
    given it (each process starts once: on first use) until ``close`` or the end of a ``with`` block.

    Raises ``InputError`` (``workers``) for a non-positive count.
    """

    def __init__(self, workers: int) -> None:
        _check_workers(workers)
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def run(self, tasks: Sequence[EpisodeTask]) -> Iterator[dict[str, float]]:
        """Each task's metrics, in the tasks' order, as they finish."""
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        return self._pool.map(_run_task, tasks)

    def close(self) -> None:
        """Stop the processes (after their tasks)."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None

    def __enter__(self) -> EpisodePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def simulate_many(
    tasks: Sequence[EpisodeTask],
    workers: int,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    task_name: str = "episodes",
    pool: EpisodePool | None = None,
) -> list[dict[str, float]]:
    """Run episodes over ``workers`` spawned processes (``pool``'s when given); their metrics, in the
    tasks' order.

    ``progress(task_name, done, total)`` is called as results arrive. Raises ``InputError``
    (``workers``) for a non-positive count, and the tasks' own input errors before any process starts.
    """
    _check_workers(workers)
    for task in tasks:
        _check(task)
    if not tasks:
        return []
    if pool is None:
        with EpisodePool(min(workers, len(tasks))) as own:
            return _collect(own.run(tasks), len(tasks), progress, task_name)
    return _collect(pool.run(tasks), len(tasks), progress, task_name)


def _collect(
    found: Iterator[dict[str, float]], total: int, progress: Callable[[str, int, int], None] | None, task_name: str
) -> list[dict[str, float]]:
    results: list[dict[str, float]] = []
    for result in found:
        results.append(result)
        if progress is not None:
            progress(task_name, len(results), total)
    return results
