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
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from decisions.errors import InputError
from decisions.mobility.traffic.demand import Demand, pedestrian_routes, sumo_args
from decisions.mobility.traffic.rewards import fair_reward, layout_of, vehicle_only_reward
from decisions.mobility.traffic.scenarios import Scenario, get_scenario, network
from decisions.mobility.traffic.sensing import lane_halting, pedestrian_census, sensed_queue
from decisions.mobility.traffic.sumo_setup import ensure_sumo

if TYPE_CHECKING:
    from gymnasium import spaces
    from sumo_rl import SumoEnvironment
    from sumo_rl.environment.observations import ObservationFunction

__all__ = [
    "CROWD_SCALE",
    "IGNORE_JUNCTION_BLOCKER_S",
    "EpisodeSpec",
    "PHASE_TIME_SCALE_S",
    "WAIT_SCALE_S",
    "action_masks",
    "fair_observation",
    "fair_observation_space",
    "lane_capacities",
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
"""Default ``--ignore-junction-blocker`` (s): vehicles blocking a junction this long are ignored (no deadlocks)."""
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
    """Build an episode's files (the net, the pedestrian route file, the tripinfo path) in ``workdir``.

    Pedestrian flows are used only with ``pedestrians``; ``seconds`` defaults to the scenario's window.
    Raises ``InputError``: ``seconds`` when not a positive integer, ``workdir`` with whitespace, and the
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


def lane_capacities(ts: Any) -> dict[str, float]:
    """Vehicles each incoming lane's approach holds (length / 7.5 m, at least 1), by lane."""
    layout = layout_of(ts)
    return {
        lane: max(1.0, length / _VEHICLE_SPACE_M)
        for lane, length in zip(layout.in_lanes, layout.approach_length_m, strict=True)
    }


def fair_observation(ts: Any, capacity: dict[str, float]) -> np.ndarray:
    """A sumo-rl ``TrafficSignal``'s observation now (float32, shape ``(P + 2 + 2L + 2K,)``).

    ``obs = [phase one-hot (P), min-green passed (1), time in phase (1), queue per approach (L),
    mean wait of halting vehicles per approach (L), pedestrians waiting per crossing (K),
    longest pedestrian wait per crossing (K)]``, all in [0, 1]: an approach is an incoming lane
    with the lanes upstream of it (``sensing.APPROACH_M``); its queue is halting vehicles (and those
    waiting to be inserted on its edges) over ``capacity``; times and waits are divided by 120 s
    and counts by 10, then clipped. ``P`` = sumo-rl's number of green phases, ``L`` = incoming
    vehicle lanes (walking areas excluded), ``K`` = crossings (0 on nets without pedestrians).
    """
    layout = layout_of(ts)
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


def fair_observation_space(ts: Any) -> spaces.Box:
    """``Box(0, 1, (P + 2 + 2L + 2K,))`` for :func:`fair_observation` of ``ts``."""
    from gymnasium import spaces  # imported here: gymnasium sets an environment variable on import

    layout = layout_of(ts)
    size = ts.num_green_phases + 2 + 2 * len(layout.in_lanes) + 2 * len(layout.crossings)
    return spaces.Box(low=np.zeros(size, dtype=np.float32), high=np.ones(size, dtype=np.float32))


@cache
def _sumo_classes() -> tuple[type, type]:
    """Point SUMO at the installed wheel, import sumo-rl and build the classes that subclass it.

    sumo-rl reads ``SUMO_HOME`` and ``LIBSUMO_AS_TRACI`` when it is imported, so nothing in this
    package imports it at module level: SUMO's environment is set here, when a simulation starts.
    """
    ensure_sumo()
    from sumo_rl import SumoEnvironment
    from sumo_rl.environment.observations import ObservationFunction

    class TrafficEnv(SumoEnvironment):
        """sumo-rl's ``SumoEnvironment`` that remembers its :class:`EpisodeSpec` (``env.episode_spec``)."""

        def __init__(self, episode: EpisodeSpec, **kwargs: Any) -> None:
            self.episode_spec = episode
            self._ped_census: tuple[float, dict[str, tuple[int, float]]] | None = None  # sensing's per-step caches
            self._pending_by_edge: tuple[float, dict[str, int]] | None = None
            super().__init__(**kwargs)

    class FairObservation(ObservationFunction):
        """sumo-rl observation function computing :func:`fair_observation` per signal."""

        def __init__(self, ts: Any) -> None:
            super().__init__(ts)  # the signal's lanes do not exist yet: capacities are read lazily
            self._capacity: dict[str, float] | None = None

        def __call__(self) -> np.ndarray:
            if self._capacity is None:
                self._capacity = lane_capacities(self.ts)
            return fair_observation(self.ts, self._capacity)

        def observation_space(self) -> spaces.Box:
            return fair_observation_space(self.ts)

    return TrafficEnv, FairObservation


def __getattr__(name: str) -> type:
    """``TrafficEnv`` and ``FairObservation``, built on first use (importing sumo-rl then)."""
    if name == "TrafficEnv":
        return _sumo_classes()[0]
    if name == "FairObservation":
        return _sumo_classes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def make_env(
    spec: EpisodeSpec,
    *,
    reward: Callable[[Any], float] | None = None,
    observation_class: type[ObservationFunction] | None = None,
    fixed_ts: bool = False,
) -> SumoEnvironment:
    """A sumo-rl multi-agent environment for the episode (call ``reset()`` before stepping).

    Starts SUMO's environment (:func:`sumo_setup.ensure_sumo`) and sumo-rl on first use. ``reward``
    is a sumo-rl ``reward_fn`` (default :func:`fair_reward` with unit weights), ``observation_class``
    defaults to the fair observation, ``fixed_ts`` runs the net's own programme. libsumo allows one
    running simulation per process. ``env.episode_spec`` is ``spec``.
    """
    traffic_env, fair_observation = _sumo_classes()
    return traffic_env(
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
        observation_class=observation_class or fair_observation,
        add_system_info=False,
        add_per_agent_info=False,
        sumo_seed=spec.demand.seed,
        fixed_ts=fixed_ts,
        sumo_warnings=False,
        additional_sumo_cmd=spec.sumo_cmd(),
    )


def action_masks(env: SumoEnvironment, max_green_s: int = 0) -> dict[str, np.ndarray]:
    """``{ts_id: bool (num_green_phases,)}``: the actions that would take effect at each signal's next decision.

    sumo-rl keeps the current green while ``time_since_last_phase_change < yellow_time + min_green``
    (always under ``fixed_ts``). With ``max_green_s > 0`` a green held that long is masked out, so a
    controller acting on the mask must change phase (sumo-rl 1.4.5 ignores its own ``max_green``).
    At least one action per signal is True.
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
