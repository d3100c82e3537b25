"""sumo-rl environments on a scenario and a demand draw, with pedestrians in the observation.

:func:`prepare_episode` builds the files of an episode (pedestrian net, pedestrian routes, the
tripinfo path) into an :class:`EpisodeSpec`, a picklable description that a worker process turns
into a running environment with :func:`make_env`. The environment is sumo-rl's multi-agent
``SumoEnvironment`` (dict API: ``reset() -> {ts: obs}``, ``step({ts: action}) -> (obs, rewards,
dones, info)``), with system/per-agent info off (they cost a TraCI call per vehicle per step;
measure with tripinfo instead) and the SUMO seed from the demand.

**Actions.** sumo-rl's action ``i`` of signal ``ts`` selects ``ts.green_phases[i]``: the i-th
phase, in programme order, of the net's first signal programme that has no yellow and is not all
red/stop. Choosing a different phase inserts ``yellow_time`` seconds of yellow (the links that
lose green turn ``y``), then the green; the next decision comes ``delta_time`` seconds after the
choice. A change is **ignored** (the current green is kept) while
``time_since_last_phase_change < yellow_time + min_green``; with the defaults (5/2/5) a green lasts
at least two decisions. :func:`action_masks` says which actions take effect now. On pedestrian
nets each vehicle phase appears twice (with and without pedestrian green: netconvert's clearance
phases), so there are about twice as many actions as on the original net.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from sumo_rl import SumoEnvironment
from sumo_rl.environment.observations import ObservationFunction

from decisions.errors import InputError
from decisions.mobility.traffic.demand import Demand, pedestrian_routes, sumo_args
from decisions.mobility.traffic.rewards import fair_reward, layout_of, vehicle_only_reward
from decisions.mobility.traffic.scenarios import Scenario, get_scenario, network
from decisions.mobility.traffic.sensing import lane_halting, pedestrian_census, sensed_queue

__all__ = [
    "CROWD_SCALE",
    "IGNORE_JUNCTION_BLOCKER_S",
    "EpisodeSpec",
    "FairObservation",
    "PHASE_TIME_SCALE_S",
    "TrafficEnv",
    "WAIT_SCALE_S",
    "action_masks",
    "fair_reward",
    "make_env",
    "pending_depart_delays",
    "prepare_episode",
    "vehicle_only_reward",
]

PHASE_TIME_SCALE_S = 120.0
"""Seconds in the current phase that map to 1 in the observation (clipped)."""
WAIT_SCALE_S = 120.0
"""Seconds of waiting that map to 1 in the observation (clipped)."""
CROWD_SCALE = 10.0
"""Pedestrians waiting at one crossing that map to 1 in the observation (clipped)."""
IGNORE_JUNCTION_BLOCKER_S = 60
"""Default ``--ignore-junction-blocker`` (s). Measured: on cologne1's pedestrian net (seed 0),
max-pressure deadlocked 12 vehicles inside the joined junction for the last ~1000 s of the hour
(mean delay 359 s, 610 vehicles never inserted); with 60 s it runs normally (34 s), and the
fixed-time result is unchanged (86.3 s either way)."""
_VEHICLE_SPACE_M = 7.5  # metres of lane per queued vehicle (5 m car + 2.5 m gap) for lane capacity


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything needed to start one episode, as files and numbers (picklable).

    Attributes:
        scenario: the scenario.
        demand: the demand draw.
        pedestrians: whether the pedestrian net and flows are used.
        net_file: the network simulated.
        route_files: vehicle routes, then pedestrian routes (when any).
        tripinfo: where SUMO writes trip information (at close).
        begin: first simulated second.
        seconds: simulated seconds of the episode.
        additional_files: SUMO additional files (e.g. an actuated programme).
        ignore_junction_blocker_s: vehicles standing this long inside a junction no longer block
            others (SUMO ``--ignore-junction-blocker``; -1: never). Teleports stay off (sumo-rl's
            ``time_to_teleport=-1``), so without it a junction deadlock lasts to the episode end.
    """

    scenario: Scenario
    demand: Demand
    pedestrians: bool
    net_file: Path
    route_files: tuple[Path, ...]
    tripinfo: Path
    begin: int
    seconds: int
    additional_files: tuple[Path, ...] = field(default=())
    ignore_junction_blocker_s: int = IGNORE_JUNCTION_BLOCKER_S

    @property
    def end(self) -> int:
        """Last simulated second."""
        return self.begin + self.seconds

    def sumo_cmd(self) -> str:
        """sumo-rl's ``additional_sumo_cmd``: demand options (not the seed), tripinfo output, additional files."""
        args = [
            *sumo_args(self.demand, include_seed=False),  # sumo-rl passes --seed from sumo_seed
            "--tripinfo-output",
            str(self.tripinfo),
            "--tripinfo-output.write-unfinished",
            "true",
            "--no-step-log",
            "true",
            "--ignore-junction-blocker",
            str(self.ignore_junction_blocker_s),
        ]
        if self.additional_files:
            args += ["--additional-files", ",".join(str(p) for p in self.additional_files)]
        return " ".join(args)

    def with_additional(self, files: tuple[Path, ...]) -> EpisodeSpec:
        """The same episode with extra SUMO additional files."""
        return replace(self, additional_files=(*self.additional_files, *files))


def _no_whitespace(path: Path, field_name: str) -> Path:
    if any(ch.isspace() for ch in str(path)):
        raise InputError(field_name, f"{path} contains whitespace (sumo-rl splits SUMO options on spaces)")
    return path


def prepare_episode(
    scenario: str | Scenario,
    demand: Demand,
    workdir: Path,
    *,
    pedestrians: bool = True,
    seconds: int | None = None,
    cache_dir: Path | None = None,
) -> EpisodeSpec:
    """Build an episode's files: the (pedestrian) net, the pedestrian route file, the tripinfo path.

    Args:
        scenario: a registered name or a :class:`Scenario`.
        demand: the demand draw (its pedestrian flows are used only when ``pedestrians``).
        workdir: a directory for this episode's files (no whitespace in the path).
        pedestrians: simulate the pedestrian net and flows.
        seconds: episode length (default: the scenario's window).
        cache_dir: cache for pedestrian nets (default :func:`scenarios.default_cache_dir`).

    Returns:
        The episode's spec.

    Raises:
        InputError: ``seconds`` when not a positive integer, ``workdir`` with whitespace, and the
            scenario's and demand's own errors.
    """
    scenario = get_scenario(scenario)
    if not isinstance(demand, Demand):
        raise InputError("demand", f"expected a Demand, got {type(demand).__name__}")
    seconds = scenario.seconds if seconds is None else seconds
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
        raise InputError("seconds", f"must be a positive integer, got {seconds!r}")
    workdir = _no_whitespace(Path(workdir).resolve(), "workdir")
    workdir.mkdir(parents=True, exist_ok=True)
    net = _no_whitespace(network(scenario, pedestrians, cache_dir), "cache_dir")
    routes: tuple[Path, ...] = (_no_whitespace(scenario.route_file, "scenario.route_file"),)
    if pedestrians and demand.has_pedestrians:
        ped = pedestrian_routes(
            net, None, demand, scenario.begin, scenario.begin + seconds, workdir / "pedestrians.rou.xml"
        )
        routes += (ped,)
    return EpisodeSpec(
        scenario=scenario,
        demand=demand,
        pedestrians=pedestrians,
        net_file=net,
        route_files=routes,
        tripinfo=workdir / "tripinfo.xml",
        begin=scenario.begin,
        seconds=seconds,
    )


class TrafficEnv(SumoEnvironment):
    """sumo-rl's ``SumoEnvironment`` that remembers its :class:`EpisodeSpec` (``env.episode_spec``)."""

    def __init__(self, episode: EpisodeSpec, **kwargs: Any) -> None:
        """Create the environment (see :func:`make_env`)."""
        self.episode_spec = episode
        self._ped_census: tuple[float, dict[str, tuple[int, float]]] | None = None  # sensing's per-step caches
        self._pending_by_edge: tuple[float, dict[str, int]] | None = None
        super().__init__(**kwargs)


def make_env(
    spec: EpisodeSpec,
    *,
    reward: Callable[[Any], float] | None = None,
    observation_class: type[ObservationFunction] | None = None,
    fixed_ts: bool = False,
) -> TrafficEnv:
    """A sumo-rl multi-agent environment for the episode (call ``reset()`` before stepping).

    libsumo allows one running simulation per process: close an environment before resetting
    another in the same process (:mod:`decisions.mobility.traffic.simulate` uses worker processes).

    Args:
        spec: the episode (:func:`prepare_episode`).
        reward: sumo-rl ``reward_fn``, called with each ``TrafficSignal`` (default :func:`fair_reward`
            with unit weights; picklable objects such as :class:`rewards.FairReward` suit workers).
        observation_class: sumo-rl observation class (default :class:`FairObservation`).
        fixed_ts: run the net's own signal programme (actions are ignored).

    Returns:
        The environment; ``env.episode_spec`` is ``spec``.
    """
    return TrafficEnv(
        spec,
        net_file=str(spec.net_file),
        route_file=",".join(str(p) for p in spec.route_files),
        use_gui=False,
        begin_time=spec.begin,
        num_seconds=spec.seconds,
        delta_time=spec.scenario.delta_time,
        yellow_time=spec.scenario.yellow_time,
        min_green=spec.scenario.min_green,
        single_agent=False,
        reward_fn=reward if reward is not None else fair_reward(),
        observation_class=observation_class or FairObservation,
        add_system_info=False,
        add_per_agent_info=False,
        sumo_seed=spec.demand.seed,
        fixed_ts=fixed_ts,
        sumo_warnings=False,
        additional_sumo_cmd=spec.sumo_cmd(),
    )


class FairObservation(ObservationFunction):
    """Per signal: phase, timing, vehicle queues and waits, and pedestrians waiting at crossings.

    ``obs = [phase one-hot (P), min-green passed (1), time in phase (1), queue per approach (L),
    mean wait of halting vehicles per approach (L), pedestrians waiting per crossing (K),
    longest pedestrian wait per crossing (K)]``, all in [0, 1]: an approach is an incoming lane
    with the lanes upstream of it (``sensing.APPROACH_M``); its queue is halting vehicles (and those
    waiting to be inserted on its edges) over its capacity (length / 7.5 m), times and waits are
    divided by 120 s and counts by 10, then clipped. ``P`` = sumo-rl's number of green phases, ``L`` = incoming vehicle lanes (walking
    areas excluded), ``K`` = crossings (0 on nets without pedestrians).
    """

    def __init__(self, ts: Any) -> None:
        """Bind to a sumo-rl ``TrafficSignal`` (its lanes are read lazily: they do not exist yet)."""
        super().__init__(ts)
        self._capacity: dict[str, float] | None = None

    def _capacities(self) -> dict[str, float]:
        if self._capacity is None:
            layout = layout_of(self.ts)
            self._capacity = {
                lane: max(1.0, length / _VEHICLE_SPACE_M)
                for lane, length in zip(layout.in_lanes, layout.approach_length_m, strict=True)
            }
        return self._capacity

    def __call__(self) -> np.ndarray:
        """The observation now (float32, shape ``(P + 2 + 2L + 2K,)``)."""
        ts = self.ts
        layout = layout_of(ts)
        capacity = self._capacities()
        phase = np.zeros(ts.num_green_phases, dtype=np.float32)
        phase[ts.green_phase] = 1.0
        since = ts.time_since_last_phase_change
        timing = [float(since >= ts.min_green + ts.yellow_time), min(1.0, since / PHASE_TIME_SCALE_S)]
        lanes = layout.sensed_lanes
        halting = lane_halting(ts.sumo, lanes)
        queued = sensed_queue(ts.env, layout, halting)
        waiting = {lane: ts.sumo.lane.getWaitingTime(lane) for lane in lanes}
        queue, waits = [], []
        for lane in layout.in_lanes:
            approach = layout.approach(lane)
            halted = sum(halting[x] for x in approach)
            queue.append(min(1.0, sum(queued[x] for x in approach) / capacity[lane]))
            waits.append(min(1.0, sum(waiting[x] for x in approach) / max(halted, 1) / WAIT_SCALE_S))
        census = pedestrian_census(ts.env) if layout.crossings else {}
        crowd = [min(1.0, census.get(c.edge, (0, 0.0))[0] / CROWD_SCALE) for c in layout.crossings]
        longest = [min(1.0, census.get(c.edge, (0, 0.0))[1] / WAIT_SCALE_S) for c in layout.crossings]
        return np.concatenate([phase, np.asarray(timing + queue + waits + crowd + longest, dtype=np.float32)])

    def observation_space(self) -> spaces.Box:
        """``Box(0, 1, (P + 2 + 2L + 2K,))``."""
        layout = layout_of(self.ts)
        size = self.ts.num_green_phases + 2 + 2 * len(layout.in_lanes) + 2 * len(layout.crossings)
        return spaces.Box(low=np.zeros(size, dtype=np.float32), high=np.ones(size, dtype=np.float32))


def action_masks(env: SumoEnvironment, max_green_s: int = 0) -> dict[str, np.ndarray]:
    """Which actions would take effect at each signal's next decision (and, optionally, a maximum green).

    sumo-rl keeps the current green while ``time_since_last_phase_change < yellow_time +
    min_green`` (and always under ``fixed_ts``); then only the current green phase is effective.
    With ``max_green_s > 0``, a green that has lasted ``max_green_s`` seconds or more is masked
    out, so a controller acting on the mask must change phase (the maximum green of actuated
    control; sumo-rl 1.4.5 accepts ``max_green`` but ignores it).

    Args:
        env: the running environment.
        max_green_s: the longest green a controller may hold (s); 0: no limit.

    Returns:
        ``{ts_id: bool array (num_green_phases,)}``, at least one True per signal.
    """
    masks = {}
    for ts_id, ts in env.traffic_signals.items():
        mask = np.zeros(ts.num_green_phases, dtype=bool)
        since = ts.time_since_last_phase_change
        if env.fixed_ts or since < ts.yellow_time + ts.min_green:
            mask[ts.green_phase] = True
        else:
            mask[:] = True
            if 0 < max_green_s <= since and ts.num_green_phases > 1:
                mask[ts.green_phase] = False
        masks[ts_id] = mask
    return masks


def pending_depart_delays(env: SumoEnvironment) -> list[float]:
    """Delays (now - scheduled depart, s) of vehicles due but never inserted; call before ``close()``.

    These vehicles are missing from tripinfo output; :func:`metrics.episode_metrics` adds them
    (RESCO counts them the same way).
    """
    sumo = env.sumo
    if sumo is None:
        raise InputError("env", "the simulation is closed: read pending vehicles before env.close()")
    delays = (sumo.vehicle.getDepartDelay(veh) for veh in sumo.simulation.getPendingVehicles())
    return [float(d) for d in delays if d >= 0]
