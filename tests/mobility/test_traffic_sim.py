"""Short SUMO episodes through sumo-rl: controllers, observation, reward, masks, worker processes.

Episodes are 60-120 simulated seconds on single-intersection with pedestrians; they run in this
process (libsumo: one simulation at a time, each closed before the next) except the worker tests.
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from decisions.errors import InputError
from decisions.mobility.traffic.controllers import CONTROLLERS, make_controller
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.env import action_masks, make_env, pending_depart_delays, prepare_episode
from decisions.mobility.traffic.rewards import fair_reward, layout_of, vehicle_only_reward
from decisions.mobility.traffic.sensing import (
    SignalLayout,
    approach_halting,
    approach_lanes,
    pedestrian_census,
    pending_by_edge,
    queued_vehicles,
)
from decisions.mobility.traffic.simulate import EpisodePool, EpisodeTask, simulate, simulate_many

DEMAND = Demand(seed=5, ped_rate_per_hour=900.0)  # 4 flows x 900/h: about 30 pedestrians per 120 s


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traffic-cache")


@pytest.fixture(scope="module")
def results(cache: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, float]]:
    workdir = tmp_path_factory.mktemp("episodes")
    return {
        name: simulate(
            "single-intersection",
            name,
            DEMAND,
            seconds=120,
            workdir=workdir,
            cache_dir=cache,
            in_process=True,
        )
        for name in CONTROLLERS
    }


@pytest.mark.parametrize(
    "name", ["fixed", "max_pressure", "queue_greedy", "actuated", "webster", "ped_greedy"]
)
def test_episode_gives_finite_metrics_with_pedestrians(
    results: dict[str, dict[str, float]], name: str
) -> None:
    m = results[name]
    for key in (
        "veh_delay_mean",
        "veh_delay_p95",
        "ped_wait_mean",
        "ped_wait_p95",
        "jain_individual",
        "jain_groups",
    ):
        assert math.isfinite(m[key]), key
    assert m["ped_count"] >= 10 and m["ped_throughput"] >= 5
    assert m["veh_count"] >= 50 and m["veh_throughput"] >= 20
    assert 0 < m["jain_individual"] <= 1 and 0 < m["jain_groups"] <= 1
    assert m["sim_seconds"] == 120 and m["wall_seconds"] > 0
    assert m["sim_seconds_per_wall_second"] == pytest.approx(120 / m["wall_seconds"])


def test_same_demand_for_every_controller(results: dict[str, dict[str, float]]) -> None:
    # vehicles due (inserted + never inserted) and persons departed do not depend on the controller
    assert len({m["veh_count"] for m in results.values()}) == 1
    assert len({m["ped_count"] for m in results.values()}) == 1
    # the fixed plan makes pedestrians wait at red; the pedestrian-aware greedy serves them sooner
    assert results["fixed"]["ped_wait_mean"] > 0
    assert results["ped_greedy"]["ped_wait_mean"] < results["fixed"]["ped_wait_mean"]


def test_episodes_are_reproducible(cache: Path, results: dict[str, dict[str, float]]) -> None:
    again = simulate(
        "single-intersection", "max_pressure", DEMAND, seconds=120, cache_dir=cache, in_process=True
    )
    for key in ("veh_delay_mean", "ped_wait_mean", "veh_throughput", "ped_count"):
        assert again[key] == results["max_pressure"][key]
    other_seed = simulate(
        "single-intersection", "max_pressure", Demand(seed=6, ped_rate_per_hour=900.0), seconds=120, cache_dir=cache,
        in_process=True,
    )  # fmt: skip
    assert (
        other_seed["ped_count"] != again["ped_count"]
        or other_seed["veh_delay_mean"] != again["veh_delay_mean"]
    )


def test_observation_reward_and_masks(cache: Path, tmp_path: Path) -> None:
    spec = prepare_episode("single-intersection", DEMAND, tmp_path, seconds=120, cache_dir=cache)
    env = make_env(spec, reward=fair_reward(1.0, 1.0, 1.0))
    try:
        obs = env.reset()
        ts = env.traffic_signals["t"]
        layout = layout_of(ts)
        assert ts.num_green_phases == 4  # each vehicle phase with and without pedestrian green
        assert len(layout.in_lanes) == 4 and [c.edge for c in layout.crossings] == [":t_c0", ":t_c1"]
        assert obs["t"].shape == (4 + 2 + 2 * 4 + 2 * 2,)
        assert env.observation_spaces("t").shape == obs["t"].shape
        controller = make_controller("max_pressure")
        switched_at = None
        peds_seen = 0
        for _ in range(23):
            masks = action_masks(env)
            assert masks["t"][ts.green_phase]
            actions = controller.act(env)
            before = ts.green_phase
            obs, rewards, _dones, _info = env.step(actions)
            assert np.all((obs["t"] >= 0) & (obs["t"] <= 1)) and obs["t"][ts.green_phase] == 1.0
            assert rewards["t"] <= 0
            census = pedestrian_census(env)
            waiting = sum(census.get(c.edge, (0, 0.0))[0] for c in layout.crossings)
            peds_seen += waiting
            assert fair_reward(0.0, 1.0, 0.0)(ts) == -waiting
            if ts.green_phase != before:
                switched_at = env.sim_step
                # right after a switch sumo-rl ignores changes: only the current green is effective
                assert action_masks(env)["t"].tolist() == [i == ts.green_phase for i in range(4)]
        assert switched_at is not None and peds_seen > 0
        # single-intersection's approaches are its incoming lanes (their edges start the routes)
        assert layout.approaches == tuple((lane,) for lane in layout.in_lanes)
        backlog = pending_by_edge(env)
        halted = sum(env.sumo.lane.getLastStepHaltingNumber(lane) for lane in layout.in_lanes)
        edges = {lane.rsplit("_", 1)[0] for lane in layout.in_lanes}
        assert vehicle_only_reward()(ts) == pytest.approx(-(halted + sum(backlog.get(e, 0) for e in edges)))
        assert all(d >= 0 for d in pending_depart_delays(env))
    finally:
        env.close()
    with pytest.raises(InputError) as err:
        pending_depart_delays(env)
    assert err.value.field == "env"


def test_episode_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        simulate("nowhere", "fixed", DEMAND, seconds=60)
    assert err.value.field == "scenario"
    with pytest.raises(InputError) as err:
        simulate("single-intersection", "psychic", DEMAND, seconds=60)
    assert err.value.field == "controller"
    with pytest.raises(InputError) as err:
        prepare_episode("single-intersection", DEMAND, tmp_path, seconds=0)
    assert err.value.field == "seconds"
    with pytest.raises(InputError) as err:
        prepare_episode("single-intersection", DEMAND, tmp_path / "with space", seconds=60)
    assert err.value.field == "workdir"
    with pytest.raises(InputError) as err:
        simulate_many([], workers=0)
    assert err.value.field == "workers"
    with pytest.raises(InputError) as err:
        EpisodePool(0)
    assert err.value.field == "workers"


def test_worker_processes_run_episodes_side_by_side(
    cache: Path, results: dict[str, dict[str, float]]
) -> None:
    tasks = [
        EpisodeTask("single-intersection", name, DEMAND, seconds=120, cache_dir=cache)
        for name in ("fixed", "queue_greedy")
    ]
    fixed, greedy = simulate_many(tasks, workers=2)
    assert fixed["veh_delay_mean"] == results["fixed"]["veh_delay_mean"]
    assert greedy["ped_wait_mean"] == results["queue_greedy"]["ped_wait_mean"]
    with EpisodePool(1) as pool:  # one process kept for two calls: the same episodes, in order
        again = [simulate_many(tasks[::-1], workers=1, pool=pool), simulate_many(tasks, workers=1, pool=pool)]
    assert [m["veh_delay_mean"] for m in again[0]] == [greedy["veh_delay_mean"], fixed["veh_delay_mean"]]
    assert [m["veh_delay_mean"] for m in again[1]] == [fixed["veh_delay_mean"], greedy["veh_delay_mean"]]
    single = simulate(
        "single-intersection", "fixed", DEMAND, seconds=120, cache_dir=cache
    )  # a spawned process
    assert single["veh_delay_mean"] == results["fixed"]["veh_delay_mean"]


def test_action_masks_max_green() -> None:
    """Min green keeps the current phase only; past the maximum green the current phase is masked out."""
    def masks(since: float, max_green: int, phases: int = 3) -> list[bool]:
        ts = SimpleNamespace(num_green_phases=phases, green_phase=1, time_since_last_phase_change=since,
                             yellow_time=2, min_green=5)  # fmt: skip
        env = SimpleNamespace(fixed_ts=False, traffic_signals={"t": ts})
        return action_masks(env, max_green)["t"].tolist()

    assert masks(6.0, 60) == [False, True, False]  # in min green (+ yellow)
    assert masks(7.0, 60) == [True, True, True]
    assert masks(59.0, 60) == [True, True, True]
    assert masks(60.0, 60) == [True, False, True]  # held for the maximum: must change
    assert masks(600.0, 0) == [True, True, True]  # 0: no maximum
    assert masks(600.0, 60, phases=1) == [True]  # nothing else to change to


class _FakeLanes:
    """A traci-like lane/simulation/vehicle domain over a fixed little network (for sensing)."""

    def __init__(self) -> None:
        # a -> b -> in (signal) ; c -> in ; x (another signal's lane) -> a
        self.length = {"a_0": 60.0, "b_0": 50.0, "c_0": 300.0, "in_0": 40.0, "in_1": 40.0, "x_0": 100.0}
        self.links = {"a_0": ["b_0"], "b_0": ["in_0", "in_1"], "c_0": ["in_1"], "x_0": ["a_0"]}
        self.halting = {"a_0": 3, "b_0": 2, "c_0": 7, "in_0": 1, "in_1": 4, "x_0": 9}
        self.pending = ["v1", "v2", "v3"]
        self.lane, self.trafficlight, self.simulation, self.vehicle = self, self, self, self

    def getIDList(self) -> list[str]:  # lanes, and traffic lights
        return list(self.length)

    def getLinks(self, lane: str) -> list[tuple[str]]:
        return [(to,) for to in self.links.get(lane, [])]

    def getLength(self, lane: str) -> float:
        return self.length[lane]

    def getControlledLanes(self, tls: str) -> list[str]:
        return ["in_0", "in_1", "x_0"] if tls == "x_0" else []

    def getLastStepHaltingNumber(self, lane: str) -> int:
        return self.halting[lane]

    def getPendingVehicles(self) -> list[str]:
        return list(self.pending)

    def getRoute(self, veh: str) -> list[str]:
        return {"v1": ["in", "out"], "v2": ["in", "out"], "v3": ["elsewhere"]}[veh]


def test_approaches_walk_upstream_and_count_the_backlog() -> None:
    sumo = _FakeLanes()
    lanes = approach_lanes(sumo, ("in_0", "in_1"), approach_m=100.0)
    # in_0 (40 m) <- b (ends 40 m out) <- a (ends 90 m out); x is another signal's lane; in_1 also <- c
    assert [sorted(a) for a in lanes] == [["a_0", "b_0", "in_0"], ["a_0", "b_0", "c_0", "in_1"]]
    assert approach_lanes(sumo, ("in_0",), approach_m=80.0) == (("in_0", "b_0"),)  # a starts beyond 80 m
    assert approach_lanes(sumo, ("in_0",), approach_m=0.0) == (("in_0",),)
    assert sorted(approach_lanes(sumo, ("in_0",), approach_m=1000.0)[0]) == ["a_0", "b_0", "in_0"]  # not x
    layout = SignalLayout((), (), ("in_0", "in_1"), (), lanes, (150.0, 450.0))
    env = SimpleNamespace(sumo=sumo, sim_step=0.0)
    assert pending_by_edge(env) == {"in": 2, "elsewhere": 1}
    # two pending vehicles on edge "in", shared by its two sensed lanes
    assert approach_halting(env, layout) == {"in_0": 1 + 1 + 2 + 3, "in_1": 4 + 1 + 2 + 3 + 7}
    assert queued_vehicles(env, layout) == 1 + 4 + 2 + 2 + 3 + 7
    sumo.pending, sumo.halting["in_0"] = [], 5  # the same second: the backlog is read once, the lanes afresh
    assert queued_vehicles(env, layout) == 5 + 4 + 2 + 2 + 3 + 7
    env.sim_step = 1.0  # the next second reads the backlog again
    assert queued_vehicles(env, layout) == 5 + 4 + 2 + 3 + 7
