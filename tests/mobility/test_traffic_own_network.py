"""Traffic signals on a network of one's own: an OSM extract converted by netconvert, counts per approach
turned into flows, every file checked when the spec is prepared (file, row or element, and field named)."""

from __future__ import annotations

import math
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from decisions.mobility.traffic.counts import route_shares
from decisions.mobility.traffic.net_layout import read_layout
from decisions.mobility.traffic.own_network import osm_network, own_scenario
from decisions.mobility.traffic.spec import prepare
from tests.helpers import assert_input_error

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OSM = EXAMPLES / "traffic_own.osm"
HEADER = "edge,vehicles_per_hour,begin,end,left,straight,right"


@pytest.fixture(autouse=True)
def cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path_factory.getbasetemp() / "own-traffic-cache"
    monkeypatch.setenv("DECISIONS_TRAFFIC_CACHE", str(folder))
    return folder


@pytest.fixture
def net(cache: Path) -> Path:
    return osm_network(OSM, cache)  # converted once, then cached


def _spec(folder: Path, counts: str | None = None, **scenarios: object) -> dict:
    files: dict[str, object] = {"counts_file": "counts.csv"} if counts is not None else {}
    if counts is not None:
        (folder / "counts.csv").write_text(counts)
    return {"scenarios": {"names": ["custom"], "osm_file": str(OSM), **files, **scenarios}}


def test_the_example_spec_converts_its_extract_and_turns_its_counts_into_flows(cache: Path) -> None:
    from decisions.mobility.traffic.demand import Demand
    from decisions.mobility.traffic.simulate import simulate

    job = prepare(tomllib.loads((EXAMPLES / "traffic_own.toml").read_text()), EXAMPLES)
    scenario = own_scenario(job.scenarios)
    assert (scenario.name, scenario.begin, scenario.end) == ("custom", 25200, 27000)
    layout = read_layout(scenario.net_file)
    assert layout.signals == ("10", "11")  # the extract's two highway=traffic_signals nodes
    assert set(layout.approaches) == {"101", "-103", "201", "-202", "301", "-302"}
    # west approach: 15% left, 70% straight, 15% right at each crossroads it has a choice at
    split = route_shares(layout, "101", {"left": 0.15, "straight": 0.7, "right": 0.15})
    assert split[("101", "102", "103")] == pytest.approx(0.49) and split[("101", "-201")] == pytest.approx(0.15)
    flows = ET.parse(scenario.route_file).getroot().findall("flow")
    rates = [float(f.get("period", "")[4:-1]) for f in flows if f.get("begin") == "25200"]
    assert sum(rates) * 3600 == pytest.approx(640 + 540 + 180 + 150 + 260 + 200)  # the 07:00 counts
    assert [float(f.get("begin", "")) for f in flows] == sorted(float(f.get("begin", "")) for f in flows)
    m = simulate(scenario, "max_pressure", Demand(seed=100, ped_rate_per_hour=600.0), seconds=60, cache_dir=cache,
                 in_process=True)  # with the sidewalks and crossings netconvert guesses, as for every scenario
    assert m["veh_count"] > 5 and math.isfinite(m["veh_delay_mean"])


def test_counts_in_seconds_without_turn_shares_split_evenly_at_each_choice(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "edge,vehicles_per_hour,begin,end\n201,360,25200,26100\n201,720,26100,27000\n",
                 begin=25200, seconds=1800)
    spec["agent"] = {"scenario_env_steps": {"custom": 500}}
    job = prepare(spec, tmp_path)
    assert job.agent.steps_for("custom") == 500
    scenario = own_scenario(job.scenarios)
    flows = ET.parse(scenario.route_file).getroot().findall("flow")
    assert [(f.get("begin"), f.get("end")) for f in flows[:1]] == [("25200", "26100")]
    routes = {r.get("id"): r.get("edges") for r in ET.parse(scenario.route_file).getroot().findall("route")}
    rate = {routes[f.get("route")]: float(f.get("period", "")[4:-1]) * 3600 for f in flows if f.get("end") == "26100"}
    # from the north of junction 10: a third each way there; the third turning onto 102 splits again at junction 11
    assert rate["201 202"] == pytest.approx(120) and rate["201 102 103"] == pytest.approx(40)
    assert sum(rate.values()) == pytest.approx(360)


@pytest.mark.parametrize(("rows", "words"), [
    ("edge,begin\n101,07:00", "counts.csv: missing column 'vehicles_per_hour'"),
    ("edge,vehicles_per_hour,begin\n101,600,07:00", "counts.csv: missing column 'end' (give begin, end together)"),
    (f"{HEADER}\n101,600,07:00,08:00,0.2,0.6,0.2\n201,lots,07:00,08:00,0.2,0.6,0.2",
     "counts.csv, row 3, column 'vehicles_per_hour': 'lots' is not a finite number"),
    (f"{HEADER}\n101,-5,07:00,08:00,0.2,0.6,0.2", "row 2, column 'vehicles_per_hour': -5 is below 0"),
    (f"{HEADER}\n101,600,07:00,08:00,0.2,0.6,0.2\n201,24000,07:00,08:00,0.2,0.6,0.2",
     "row 3, column 'vehicles_per_hour': 24000 is above 10000 (the file may count vehicles per day"),
    ("edge,vehicles_per_hour\n101,0.17\n201,0.05",
     "row 2, column 'vehicles_per_hour': 0.17 is below 1 vehicle per hour, as is every count of the file: it may "
     "be in vehicles per second"),
    (f"{HEADER}\n101,600,07:00,08:00,0.2,0.6,0.2\nA99,100,07:00,08:00,0.2,0.6,0.2",
     "counts.csv, row 3, column 'edge': unknown edge 'A99' (not in traffic_own."),
    (f"{HEADER}\n102,600,07:00,08:00,0.2,0.6,0.2", "row 2, column 'edge': '102' is not an approach at the network's "
                                                   "boundary"),
    (f"{HEADER}\n101,600,07:30,08:00,0.2,0.6,0.2\n101,600,07:00,07:30,0.2,0.6,0.2",
     "row 3, column 'begin': 07:00 comes before the end 08:00 of '101''s period in row 2"),
    (f"{HEADER}\n101,600,08:00,07:00,0.2,0.6,0.2", "row 2, column 'end': 07:00 is not after the row's begin 08:00"),
    (f"{HEADER}\n101,600,7h,08:00,0.2,0.6,0.2", "row 2, column 'begin': '7h' is neither a clock time"),
    (f"{HEADER}\n101,600,07:00,08:00,20,60,20", "row 2, column 'left': 20 is above 1 (shares are fractions"),
    (f"{HEADER}\n101,600,07:00,08:00,0.2,0.5,0.2", "row 2, column 'right': left + straight + right = 0.9, not 1"),
    (f"{HEADER}\n101,600,17:00,18:00,0.2,0.6,0.2", "counts.csv: no period overlaps the simulated 25200-27000 s"),
    ("edge,vehicles_per_hour\n101,600\n101,500", "row 3, column 'edge': '101' is counted again (first in row 2)"),
])  # fmt: skip
def test_a_bad_counts_file_is_refused_naming_its_row_and_column(tmp_path: Path, rows: str, words: str) -> None:
    spec = _spec(tmp_path, rows + "\n", begin=25200, seconds=1800)
    assert_input_error(prepare, spec, tmp_path, field="scenarios.counts_file", words=words)


@pytest.mark.parametrize(("text", "words"), [
    ("<osm><node id='1'", "does not parse as XML"),
    ("<net/>", "is not an OpenStreetMap extract (root <net>, expected <osm>)"),
    ("<osm><node id='1' lat='152.1' lon='13.4'/></osm>", "bad.osm, <node id='1'>, attribute 'lat': '152.1' is not"),
    ("<osm><node id='1' lat='52.1' lon='13.4'/></osm>", "bad.osm has no road (no <way> tagged highway=...)"),
    ("<osm><node id='1' lat='52.1' lon='13.4'/><way id='7'><nd ref='1'/><nd ref='2'/>"
     "<tag k='highway' v='residential'/></way></osm>", "bad.osm, <way id='7'>, <nd ref='2'>: no such node"),
])  # fmt: skip
def test_a_bad_osm_extract_is_refused_naming_its_element(tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "bad.osm").write_text(text)
    spec = {"scenarios": {"names": ["custom"], "osm_file": "bad.osm", "route_file": "r.rou.xml"}}
    assert_input_error(prepare, spec, tmp_path, field="scenarios.osm_file", words=words)


def test_a_network_without_signals_and_routes_off_the_network_are_refused(tmp_path: Path, net: Path) -> None:
    unsignalled = OSM.read_text().replace('<tag k="highway" v="traffic_signals"/>', "")
    (tmp_path / "plain.osm").write_text(unsignalled)
    spec = {"scenarios": {"names": ["custom"], "osm_file": "plain.osm", "route_file": "r.rou.xml"}}
    assert_input_error(prepare, spec, tmp_path, field="scenarios.osm_file",
                       words="the network converted from plain.osm has no traffic light")
    (tmp_path / "r.rou.xml").write_text('<routes><route id="a" edges="101 102"/>'
                                        '<flow id="f" from="101" to="Z9" begin="0" end="60" number="3"/></routes>')
    spec = {"scenarios": {"names": ["custom"], "net_file": str(net), "route_file": "r.rou.xml"}}
    assert_input_error(prepare, spec, tmp_path, field="scenarios.route_file",
                       words="r.rou.xml, <flow id='f'>, attribute 'to': unknown edge 'Z9'")


@pytest.mark.parametrize(("scenarios", "field", "words"), [
    ({"names": ["custom"], "counts_file": "c.csv"}, "scenarios.net_file", "is required with the 'custom' scenario"),
    ({"names": ["custom"], "net_file": "n.net.xml", "osm_file": "o.osm", "counts_file": "c.csv"},
     "scenarios.osm_file", "give scenarios.net_file or scenarios.osm_file, not both"),
    ({"names": ["custom"], "osm_file": "o.osm"}, "scenarios.route_file", "(or scenarios.counts_file)"),
    ({"names": ["cologne1"], "counts_file": "c.csv"}, "scenarios.counts_file", "only with the 'custom' scenario"),
])  # fmt: skip
def test_the_custom_scenario_takes_one_network_and_one_demand(tmp_path: Path, scenarios: dict, field: str,
                                                              words: str) -> None:
    assert_input_error(prepare, {"scenarios": scenarios}, tmp_path, field=field, words=words)


@pytest.mark.slow
def test_a_study_runs_on_the_converted_network_with_every_controller() -> None:
    from decisions.mobility.traffic.spec import CONTROLLER_NAMES
    from decisions.mobility.traffic.study import run_study

    spec = tomllib.loads((EXAMPLES / "traffic_own.toml").read_text())
    spec["scenarios"]["seconds"] = 90
    spec["demand"] = {"train_seeds": [0], "test_seeds": [100], "ped_rate_per_hour": 600.0}
    spec["agent"] = {"env_steps": 100, "num_envs": 1, "hidden": [16]}
    spec["study"] = {"controllers": list(CONTROLLER_NAMES), "vehicle_only": True, "default_reward": False,
                     "ppo": False}
    study = run_study(prepare(spec, EXAMPLES))
    assert list(study.summary["controller"]) == [*CONTROLLER_NAMES, "dqn_fair", "dqn_vehicle"]
    assert (study.summary["scenario"] == "custom").all() and study.best_heuristic["custom"] in CONTROLLER_NAMES
    for key in ("veh_delay_vs_best_heuristic", "ped_p95_wait_vs_best_heuristic", "vehicle_only_ped_p95_vs_fair"):
        assert math.isfinite(study.headline[f"{key}_custom"]), key
    assert set(study.junctions["networks"]["custom"]["signals"]) == {"10", "11"}


def test_clock_times_read_as_seconds() -> None:
    import io

    from decisions.core.csv_table import CsvTable
    from decisions.errors import InputError

    table = CsvTable.read(io.StringIO("t\n07:30\n07:30:15\n25:00\n3600\n"), field="f", required=("t",))
    assert table.clock_seconds("t").tolist() == [27000.0, 27015.0, 90000.0, 3600.0]
    for bad, words in (("07:75", "'07:75' is neither a clock time like 07:30 nor seconds"),
                       ("-5", "-5 is outside 0-604800 s")):
        with pytest.raises(InputError, match=words):
            CsvTable.read(io.StringIO(f"t\n{bad}\n"), field="f", required=("t",)).clock_seconds("t")
