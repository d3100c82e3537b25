"""Traffic scenarios, pedestrian nets, demand and input errors (netconvert and a short SUMO run)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

from decisions.errors import InputError
from decisions.mobility.traffic import scenarios
from decisions.mobility.traffic.demand import Demand, pedestrian_routes, pedestrian_walks, sumo_args
from decisions.mobility.traffic.programs import actuated_programs
from decisions.mobility.traffic.rewards import fair_reward, vehicle_only_reward
from decisions.mobility.traffic.scenarios import SCENARIOS, get_scenario, network, pedestrian_network
from decisions.mobility.traffic.sumo_setup import binary, ensure_sumo


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("traffic-cache")


@pytest.fixture(scope="module")
def ped_net(cache: Path) -> Path:
    return pedestrian_network("single-intersection", cache)


def test_sumo_home_is_the_installed_wheel() -> None:
    home = ensure_sumo()
    assert os.environ["SUMO_HOME"] == str(home)
    assert (home / "bin").is_dir() and binary("netconvert").is_file()
    with pytest.raises(InputError) as err:
        binary("sumo-gui-not-a-tool")
    assert err.value.field == "binary"


def test_shell_sumo_home_is_overridden_before_sumo_rl_imports() -> None:
    code = (
        "import os, sumo, decisions.mobility.traffic.env as t; t.TrafficEnv; "
        "import sumo_rl.environment.env as e; "
        "print(os.environ['SUMO_HOME'] == sumo.SUMO_HOME, e.LIBSUMO)"
    )
    env = {**os.environ, "SUMO_HOME": "/nonexistent/sumo"}
    env.pop("LIBSUMO_AS_TRACI", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["True", "True"]


def test_importing_the_package_and_its_modules_leaves_environ_and_path_unchanged() -> None:
    code = (
        "import os, sys, pkgutil, importlib\n"
        "env, path = dict(os.environ), list(sys.path)\n"
        "import decisions.mobility.traffic as t\n"
        "names = [m.name for m in pkgutil.iter_modules(t.__path__, t.__name__ + '.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "print(len(names), dict(os.environ) == env, list(sys.path) == path, 'sumo_rl' in sys.modules)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("SUMO_HOME", "LIBSUMO_AS_TRACI")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert out.returncode == 0, out.stderr
    count, same_env, same_path, sumo_rl_imported = out.stdout.split()[-4:]
    assert int(count) > 10
    assert (same_env, same_path, sumo_rl_imported) == ("True", "True", "False")


def test_registry_has_the_resco_windows() -> None:
    assert SCENARIOS == ("single-intersection", "cologne1", "ingolstadt1", "grid4x4", "arterial4x4")
    windows = {name: (get_scenario(name).begin, get_scenario(name).end) for name in SCENARIOS}
    assert windows["cologne1"] == (25200, 28800) and windows["ingolstadt1"] == (57600, 61200)
    assert windows["grid4x4"] == windows["arterial4x4"] == windows["single-intersection"] == (0, 3600)
    for name in SCENARIOS:
        s = get_scenario(name)
        assert s.net_file.is_file() and s.route_file.is_file()
        assert (s.delta_time, s.yellow_time, s.min_green) == (5, 2, 5)


def test_pedestrian_net_is_built_once_and_cached(
    cache: Path, ped_net: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = ET.parse(ped_net).getroot()
    crossings = [e.get("id") for e in root.iter("edge") if e.get("function") == "crossing"]
    assert crossings == [":t_c0", ":t_c1"]
    (logic,) = root.iter("tlLogic")
    states = [p.get("state") for p in logic.iter("phase")]
    assert "GGGrrrrG" in states and all(len(s) == 8 for s in states)  # 6 vehicle links + 2 crossings

    def no_netconvert(*args: object, **kwargs: object) -> None:
        raise AssertionError("netconvert ran on a cache hit")

    monkeypatch.setattr(scenarios.subprocess, "run", no_netconvert)
    assert pedestrian_network("single-intersection", cache) == ped_net
    assert network("single-intersection", True, cache) == ped_net
    assert network("single-intersection", False, cache) == get_scenario("single-intersection").net_file
    assert [p.name for p in cache.iterdir() if p.name.startswith(".build")] == []  # no partial files left


def test_unknown_scenario_and_unparsable_nets_name_the_field(tmp_path: Path) -> None:
    with pytest.raises(InputError) as err:
        get_scenario("manhattan")
    assert err.value.field == "scenario" and "manhattan" in str(err.value)
    garbage = tmp_path / "garbage.net.xml"
    garbage.write_text("<net><edge id='a'")
    bad = replace(get_scenario("cologne1"), name="bad", net_file=garbage)
    with pytest.raises(InputError) as err:
        pedestrian_network(bad, tmp_path / "cache")
    assert err.value.field == "scenario.net_file"
    with pytest.raises(InputError) as err:
        network(bad, False)
    assert err.value.field == "scenario.net_file"
    with pytest.raises(InputError) as err:
        actuated_programs(garbage, tmp_path / "act.add.xml")
    assert err.value.field == "scenario.net_file"


def test_demand_validation_names_the_field() -> None:
    cases = {
        "demand.ped_rate_per_hour": {"ped_rate_per_hour": -1.0},
        "demand.depart_jitter_s": {"depart_jitter_s": -5.0},
        "demand.vehicle_scale": {"vehicle_scale": 0.0},
        "demand.seed": {"seed": -3},
    }
    for field, kwargs in cases.items():
        with pytest.raises(InputError) as err:
            Demand(**kwargs)
        assert err.value.field == field
    with pytest.raises(InputError) as err:
        Demand(ped_rate_per_hour=float("nan"))
    assert err.value.field == "demand.ped_rate_per_hour"
    assert sumo_args(Demand(seed=7, vehicle_scale=1.5, depart_jitter_s=30)) == [
        "--seed",
        "7",
        "--scale",
        "1.5",
        "--random-depart-offset",
        "30.0",
    ]
    assert "--random-depart-offset" not in sumo_args(Demand(seed=7))


def test_reward_weights_are_validated() -> None:
    for field, kwargs in {
        "reward.veh_weight": {"veh_weight": -1.0},
        "reward.ped_weight": {"ped_weight": -0.5},
        "reward.fairness_weight": {"fairness_weight": float("inf")},
        "reward.weights": {"veh_weight": 0.0, "ped_weight": 0.0, "fairness_weight": 0.0},
        "reward.wait_scale_s": {"wait_scale_s": 0.0},
    }.items():
        with pytest.raises(InputError) as err:
            fair_reward(**kwargs)
        assert err.value.field == field
    only = vehicle_only_reward()
    assert (only.veh_weight, only.ped_weight, only.fairness_weight) == (1.0, 0.0, 0.0)


def test_the_pedestrian_weight_grid_and_validation_seeds_are_checked() -> None:
    from decisions.mobility.traffic.spec import prepare

    bad = {
        "reward.ped_weight_grid": {"reward": {"ped_weight_grid": [1.0, -0.5]}},
        "demand.validation_seeds": {"reward": {"ped_weight_grid": [0.5, 1.0]}, "demand": {"validation_seeds": [1, 50]}},
        "study.veh_delay_tolerance": {"study": {"veh_delay_tolerance": -0.1}},
        "agent.scenario_env_steps": {"agent": {"scenario_env_steps": {"atlantis": 1000}}},
        "scenarios.names": {"scenarios": {"names": []}},  # no scenario at all
    }
    for field, spec in bad.items():
        with pytest.raises(InputError) as err:
            prepare(spec)
        assert err.value.field == field, field
    with pytest.raises(InputError, match="at most once"):
        prepare({"reward": {"ped_weight_grid": [1.0, 1.0]}})
    job = prepare({"reward": {"ped_weight_grid": [0.25, 1.0]}})
    assert job.demand.validation_seeds == [50, 51] and job.study.veh_delay_tolerance == 0.05
    assert prepare({"demand": {"validation_seeds": [0]}}).demand.validation_seeds == [0]  # unused without a grid
    with pytest.raises(InputError, match="grid4x4"):
        prepare({"agent": {"scenario_env_steps": {"grid4x4": 10}}})
    agent = prepare({"agent": {"env_steps": 500, "scenario_env_steps": {"grid4x4": 4000}}}).agent
    assert (agent.steps_for("grid4x4"), agent.steps_for("cologne1")) == (4000, 500)
    plain_only = prepare({"scenarios": {"names": []}, "study": {"without_pedestrians": ["grid4x4"]}})
    assert plain_only.scenarios.names == [] and plain_only.study.without_pedestrians == ["grid4x4"]


def test_pedestrian_walks_cross_each_signalised_junction(ped_net: Path, cache: Path) -> None:
    walks = pedestrian_walks(ped_net)
    assert {(w.from_edge, w.to_edge) for w in walks} == {
        ("n_t", "t_s"),
        ("t_s", "n_t"),
        ("w_t", "t_e"),
        ("t_e", "w_t"),
    }
    assert all(w.crossings and all(c.startswith(":t_c") for c in w.crossings) for w in walks)
    grid = pedestrian_walks(pedestrian_network("grid4x4", cache))
    assert len({w.tls_id for w in grid}) == 16 and all(w.crossings for w in grid)
    with pytest.raises(InputError) as err:
        pedestrian_walks(ped_net, ["no-such-light"])
    assert err.value.field == "demand.tls_ids"


def test_sumo_accepts_the_pedestrian_flows(ped_net: Path, tmp_path: Path) -> None:
    demand = Demand(seed=3, vehicle_scale=2.0, ped_rate_per_hour=720.0)
    routes = pedestrian_routes(ped_net, None, demand, 0, 3600, tmp_path / "ped.rou.xml")
    root = ET.parse(routes).getroot()
    flows = root.findall("personFlow")
    assert len(flows) == 4 and all(f.get("period") == "exp(0.2)" for f in flows)
    assert root.find("vType").get("scale") == "0.5"  # cancels --scale 2 for pedestrians
    tripinfo = tmp_path / "tripinfo.xml"
    cmd = [
        str(binary("sumo")),
        "-n",
        str(ped_net),
        "-r",
        f"{get_scenario('single-intersection').route_file},{routes}",
        "-e",
        "300",
        "--tripinfo-output",
        str(tripinfo),
        "--no-step-log",
        "--no-warnings",
        *sumo_args(demand),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    persons = ET.parse(tripinfo).getroot().findall("personinfo")
    # 4 flows x 0.2/s x 300 s = 240 expected departures, minus those still walking; no clones (ids "x.k.n")
    assert 120 < len(persons) < 300
    assert all(p.get("id").count(".") == 1 for p in persons)
    assert sum(float(w.get("waitingTime")) for p in persons for w in p.iter("walk")) > 0
    empty = pedestrian_routes(
        ped_net, None, Demand(ped_rate_per_hour=0.0), 0, 3600, tmp_path / "none.rou.xml"
    )
    assert ET.parse(empty).getroot().findall("personFlow") == []
