"""Run episodes: one controller on one scenario and demand, in a worker process, to metrics.

libsumo (used when installed, see :mod:`.sumo_setup`) allows **one simulation per process**, so
:func:`simulate` runs each episode in a freshly spawned process by default and
:func:`simulate_many` maps episodes over a pool of spawned processes (each runs its episodes
one after the other, closing each before the next). Pedestrian nets are built in the parent first
(netconvert, cached), so workers only read them.

Each result is :func:`metrics.episode_metrics`' dict plus ``sim_seconds``, ``wall_seconds``
(environment creation to close, without process start-up) and ``sim_seconds_per_wall_second``.
"""

from __future__ import annotations

import multiprocessing
import shutil
import tempfile
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from decisions.errors import InputError
from decisions.mobility.traffic.controllers import Controller, make_controller
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.env import EpisodeSpec, make_env, pending_depart_delays, prepare_episode
from decisions.mobility.traffic.metrics import episode_metrics
from decisions.mobility.traffic.scenarios import get_scenario, network
from decisions.mobility.traffic.sumo_setup import uses_libsumo

__all__ = ["EpisodeTask", "run_episode", "simulate", "simulate_many"]


@dataclass(frozen=True)
class EpisodeTask:
    """One episode to run (picklable).

    Attributes:
        scenario: registered scenario name.
        controller: a controller name (:data:`controllers.CONTROLLERS`) or a picklable controller.
        demand: the demand draw.
        pedestrians: simulate the pedestrian net and flows.
        seconds: episode length (default: the scenario's window).
        workdir: directory for the episode's files (a unique subdirectory is made in it); None:
            a temporary directory, removed afterwards.
        cache_dir: pedestrian-net cache (default :func:`scenarios.default_cache_dir`).
    """

    scenario: str
    controller: str | Controller
    demand: Demand
    pedestrians: bool = True
    seconds: int | None = None
    workdir: Path | None = None
    cache_dir: Path | None = None


def run_episode(spec: EpisodeSpec, controller: Controller) -> dict[str, float]:
    """Run one episode in this process (no other libsumo simulation may be open in it).

    Args:
        spec: the episode (:func:`env.prepare_episode`).
        controller: the controller.

    Returns:
        The episode's metrics plus ``sim_seconds``, ``wall_seconds``, ``sim_seconds_per_wall_second``.
    """
    spec = spec.with_additional(controller.additional_files(spec))
    start = time.perf_counter()
    env = make_env(spec, fixed_ts=controller.fixed_ts)
    try:
        env.reset()
        controller.reset(env)
        done = False
        while not done:
            _obs, _rewards, dones, _info = env.step(controller.act(env))
            done = bool(dones["__all__"])
        pending = pending_depart_delays(env)
    finally:
        env.close()
    wall = time.perf_counter() - start
    metrics = episode_metrics(spec.tripinfo, pending)
    metrics.update(
        sim_seconds=float(spec.seconds), wall_seconds=wall, sim_seconds_per_wall_second=spec.seconds / wall
    )
    return metrics


def _run_task(task: EpisodeTask) -> dict[str, float]:
    """Prepare and run a task (in a worker process)."""
    controller = make_controller(task.controller)
    base = Path(task.workdir) if task.workdir is not None else Path(tempfile.mkdtemp(prefix="traffic-"))
    label = f"{task.scenario}-{getattr(controller, 'name', 'controller')}-s{task.demand.seed}-{uuid.uuid4().hex[:8]}"
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
        return run_episode(spec, controller)
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
    scenario_name: str,
    controller: str | Controller,
    demand: Demand,
    *,
    pedestrians: bool = True,
    seconds: int | None = None,
    workdir: Path | None = None,
    cache_dir: Path | None = None,
    in_process: bool | None = None,
) -> dict[str, float]:
    """Run one episode and return its metrics.

    Args:
        scenario_name: registered scenario name.
        controller: controller name or object (picklable when run in a worker).
        demand: the demand draw.
        pedestrians: simulate the pedestrian net and flows.
        seconds: episode length (default: the scenario's window).
        workdir: where to keep the episode's files (None: a temporary directory, removed).
        cache_dir: pedestrian-net cache.
        in_process: run here instead of in a spawned process; default: in a process when
            libsumo is in use (one simulation per process), here otherwise.

    Returns:
        Metrics (:data:`metrics.METRIC_NAMES`) plus ``sim_seconds``, ``wall_seconds`` and
        ``sim_seconds_per_wall_second``.
    """
    task = EpisodeTask(scenario_name, controller, demand, pedestrians, seconds, workdir, cache_dir)
    _check(task)
    if in_process is None:
        in_process = not uses_libsumo()
    if in_process:
        return _run_task(task)
    return simulate_many([task], workers=1)[0]


def simulate_many(tasks: Sequence[EpisodeTask], workers: int) -> list[dict[str, float]]:
    """Run episodes over a pool of spawned processes.

    Args:
        tasks: the episodes.
        workers: processes (each runs one simulation at a time).

    Returns:
        The metrics of each task, in order.

    Raises:
        InputError: ``workers`` when not a positive integer, and the tasks' own input errors
            (checked before any process starts).
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError("workers", f"must be a positive integer, got {workers!r}")
    for task in tasks:
        _check(task)
    if not tasks:
        return []
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(tasks)), mp_context=context) as pool:
        return list(pool.map(_run_task, tasks))
