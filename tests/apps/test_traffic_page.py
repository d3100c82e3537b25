"""The Traffic signals page: the form and the spec it sends, a recorded run opened with ``?run=<id>``
and every section drawn from its tables read back, the views on small hand-made tables."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.mobility.traffic import DOMAIN, TrafficReport
from decisions.mobility.traffic.metrics import METRIC_NAMES
from decisions.store import list_runs
from tests.apps.conftest import APPS
from tests.apps.helpers import one_line_error, open_form, open_page, open_report, record_report, submit

TRAFFIC_PAGE = DOMAIN.page

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import traffic_replay_views  # noqa: E402
import traffic_views  # noqa: E402

SCENARIO = "cologne1"
SEEDS = (100, 101)
# controller -> (vehicles' mean delay, pedestrians' p95 wait): max-pressure is the best heuristic by vehicle
# delay, the vehicle-only agent lets pedestrians wait longest, ped_greedy the other way round.
WITH_PEDS = {
    "fixed": (40.0, 60.0), "webster": (35.0, 55.0), "actuated": (30.0, 70.0), "max_pressure": (25.0, 120.0),
    "queue_greedy": (28.0, 90.0), "ped_greedy": (50.0, 20.0), "dqn_fair_w4": (32.0, 30.0),
    "dqn_fair": (27.0, 40.0), "dqn_vehicle": (24.0, 150.0), "dqn_default": (26.0, 80.0),
    "dqn_fair_w0.25": (25.5, 70.0),
}
PLAIN = {"fixed": (30.0, math.nan), "max_pressure": (20.0, math.nan), "queue_greedy": (22.0, math.nan),
         "dqn": (19.0, math.nan)}
AGENTS_WITH_PEDS = ("dqn_fair", "dqn_vehicle", "dqn_default", "dqn_fair_w0.25", "dqn_fair_w4")
FRONTIER = {0.0: "dqn_vehicle", 0.25: "dqn_fair_w0.25", 1.0: "dqn_fair", 4.0: "dqn_fair_w4"}
METRICS = {
    "veh_delay_vs_best_heuristic_cologne1": 27 / 25, "ped_p95_wait_vs_best_heuristic_cologne1": 40 / 120,
    "fair_beats_fixed_both_cologne1": 1.0, "vehicle_only_ped_p95_vs_fair_cologne1": 150 / 40,
    "nopeds_dqn_vs_max_pressure_cologne1": 0.95, "nopeds_dqn_vs_fixed_cologne1": 19 / 30,
    "training_sim_seconds_per_wall_second": 850.0, "agent_train_seconds": 120.0,
}
EXTRA = ("sim_seconds", "wall_seconds", "sim_seconds_per_wall_second")


def _run_row(pedestrians: bool, controller: str, seed: int, veh: float, ped: float) -> dict[str, object]:
    """One run's figures: vehicles' mean delay and pedestrians' p95 wait one second either side of the mean."""
    shift = -1.0 if seed == SEEDS[0] else 1.0
    row: dict[str, object] = {"scenario": SCENARIO, "pedestrians": pedestrians, "controller": controller, "seed": seed}
    for name in (*METRIC_NAMES, *EXTRA):
        value = 10.0
        if name.startswith("ped_") or name in ("jain_groups", "unfinished_pedestrians"):
            value = math.nan if not pedestrians else 5.0
        row[name] = value
    row |= {"veh_delay_mean": veh + shift, "veh_delay_p95": 2 * veh, "ped_wait_p95": ped + shift,
            "ped_count": 40.0 if pedestrians else 0.0, "jain_individual": 0.8}
    if pedestrians:
        row |= {"ped_wait_mean": ped / 3, "ped_wait_max": 2 * ped, "ped_veh_ratio": ped / 3 / veh}
    return row


def _runs() -> pd.DataFrame:
    rows = [_run_row(peds, c, seed, veh, ped) for peds, table in ((True, WITH_PEDS), (False, PLAIN))
            for c, (veh, ped) in table.items() for seed in SEEDS]
    return pd.DataFrame(rows)


def _summary(runs: pd.DataFrame) -> pd.DataFrame:
    keys = ["scenario", "pedestrians", "controller"]
    summary = runs.drop(columns="seed").groupby(keys, sort=False).mean().reset_index()
    summary.insert(3, "seeds", len(SEEDS))
    return summary


def _training() -> pd.DataFrame:
    rows = [{"scenario": SCENARIO, "pedestrians": peds, "agent": agent, "env_steps": steps,
             "episode_return": -100.0 + 10 * k}
            for peds, agents in ((True, AGENTS_WITH_PEDS), (False, ("dqn",)))
            for agent in agents for k, steps in enumerate((1000, 2000, 3000))]
    return pd.DataFrame(rows)


def _replays() -> pd.DataFrame:
    """Twelve decisions of 5 s on one signal; fixed-time changes phase every 15 s, the others every 10 s."""
    rows = [{"scenario": SCENARIO, "controller": c, "signal": "GS_cluster_1", "time_s": 25_200 + 5 * k,
             "phase": (k // 3 if c == "fixed" else k // 2) % 4}
            for c in WITH_PEDS for k in range(12)]
    return pd.DataFrame(rows)


def _frontier() -> pd.DataFrame:
    rows = [{"scenario": SCENARIO, "fairness_weight": w, "veh_delay_mean": WITH_PEDS[c][0],
             "ped_wait_p95": WITH_PEDS[c][1], "ped_wait_mean": WITH_PEDS[c][1] / 3} for w, c in FRONTIER.items()]
    return pd.DataFrame(rows)


def _selection() -> pd.DataFrame:
    nan = math.nan
    rows = [(True, "fixed", nan, None, 40.0, 90.0, False), (True, "max_pressure", nan, None, 30.0, 40.0, False),
            (True, "dqn_fair_p1", 1.0, 0, 29.0, 45.0, False), (True, "dqn_fair_p3", 3.0, 0, 31.0, 25.0, True),
            (False, "max_pressure", nan, None, 20.0, nan, False), (False, "dqn_s0", nan, 0, 21.0, nan, False),
            (False, "dqn_s1", nan, 1, 19.0, nan, True)]  # fmt: skip
    columns = ["pedestrians", "controller", "ped_weight", "train_seed", "veh_delay_mean", "ped_wait_p95", "chosen"]
    frame = pd.DataFrame(rows, columns=columns)
    frame["train_seed"] = frame["train_seed"].astype("Int64")
    frame.insert(0, "scenario", SCENARIO)
    return frame


def _hand_made_report() -> TrafficReport:
    """A small report with the real tables' columns, written by hand (no SUMO run needed)."""
    runs = _runs()
    return TrafficReport(summary=_summary(runs), runs=runs, training=_training(), replays=_replays(),
                         frontier=_frontier(), selection=_selection(), metrics=dict(METRICS))


@pytest.fixture
def run_id(store_url: str, tmp_path: Path) -> int:
    """A recorded traffic run of the hand-made report (its tables written and read back as CSV)."""
    return record_report(store_url, _hand_made_report(), tmp_path / "run", kind=DOMAIN.name)


def test_views_name_order_and_choose_scenarios() -> None:
    assert traffic_views.controller_order(list(WITH_PEDS)) == [
        "dqn_fair", "dqn_vehicle", "dqn_default", "dqn_fair_w0.25", "dqn_fair_w4",
        "fixed", "webster", "actuated", "max_pressure", "queue_greedy", "ped_greedy"]
    assert traffic_views.controller_label("dqn_fair_w0.25") == "DQN fair, weight 0.25"
    assert traffic_views.controller_label("max_pressure") == "max-pressure"
    assert traffic_views.controller_label("other") == "other" and traffic_views.sweep_weight("dqn_fair_wx") is None
    summary = _summary(_runs())
    assert traffic_views.scenario_options(summary) == {
        "cologne1": ("cologne1", True), "cologne1 (no pedestrians)": ("cologne1", False)}
    plain_first = pd.concat([summary[~summary["pedestrians"]], summary[summary["pedestrians"]]])
    assert traffic_views.headline_scenario(plain_first) == ("cologne1", True)  # pedestrians first
    assert traffic_views.headline_scenario(summary.iloc[0:0]) is None
    text_flags = summary.assign(pedestrians=summary["pedestrians"].map(str))  # "True"/"False" from a CSV
    assert len(traffic_views.of_scenario(text_flags, SCENARIO, False)) == len(PLAIN)


def test_views_controller_table_shows_both_groups_and_drops_empty_pedestrian_figures() -> None:
    summary = _summary(_runs())
    table = traffic_views.controller_table(summary, SCENARIO, True)
    assert len(table) == len(WITH_PEDS) and table["controller"].is_unique
    assert list(table["controller"][:2]) == ["dqn_fair", "dqn_vehicle"] and table["label"].iloc[0] == "DQN fair"
    assert list(table.columns[:4]) == ["controller", "label", "role", "seeds"]
    for column in ("veh_delay_mean", "veh_delay_p95", "ped_wait_mean", "ped_wait_p95", "ped_wait_max",
                   "ped_veh_ratio", "jain_individual", "veh_throughput", "ped_throughput"):
        assert column in table, column
    by = table.set_index("controller")
    assert by.loc["max_pressure", "veh_delay_mean"] == pytest.approx(25.0)  # the mean over both seeds
    assert by.loc["dqn_vehicle", "ped_wait_p95"] == pytest.approx(150.0)
    assert by.loc["dqn_fair", "role"] == "fair agent" and by.loc["fixed", "role"] == "heuristic"
    assert by.loc["ped_greedy", "role"] == "baseline" and by.loc["dqn_fair_w4", "role"] == "agent (fairness sweep)"

    plain = traffic_views.controller_table(summary, SCENARIO, False)
    assert list(plain["controller"]) == ["dqn", "fixed", "max_pressure", "queue_greedy"]
    assert not [c for c in plain.columns if c.startswith("ped_")] and "jain_individual" in plain
    assert plain.notna().all().all()  # no NaN column left to draw
    assert traffic_views.controller_table(summary, "absent").empty


def test_views_distribution_and_replay() -> None:
    runs = _runs()
    frame = traffic_views.distribution_frame(runs, SCENARIO, True)
    assert len(frame) == 2 * len(WITH_PEDS) * len(SEEDS) and list(frame["metric"].unique()) == [
        "veh_delay_mean", "ped_wait_p95"]
    fixed = frame[(frame["controller"] == "fixed") & (frame["metric"] == "ped_wait_p95")]
    assert list(fixed["value"]) == [59.0, 61.0] and set(fixed["kind"]) == {"baseline"}
    panels = traffic_views.distribution_chart(frame).to_dict()["hconcat"]
    assert [p["layer"][0]["encoding"]["x"]["title"] for p in panels] == [
        "vehicles: mean delay (s)", "pedestrians: p95 wait (s)"]
    plain = traffic_views.distribution_frame(runs, SCENARIO, False)  # NaN pedestrian waits left out
    assert set(plain["metric"]) == {"veh_delay_mean"} and len(plain) == len(PLAIN) * len(SEEDS)
    assert len(traffic_views.distribution_chart(plain).to_dict()["hconcat"]) == 1

    replays = _replays()
    summary = _summary(_runs())
    offered = traffic_replay_views.replay_controllers(replays, summary, SCENARIO, True)
    assert offered == traffic_views.controller_order(list(WITH_PEDS))
    assert traffic_replay_views.default_replay_controllers(offered) == ["dqn_fair", "fixed", "max_pressure"]
    plain = traffic_replay_views.replay_controllers(replays, summary, SCENARIO, False)  # no flag: the plain run's only
    assert plain == ["fixed", "max_pressure", "queue_greedy"]
    assert traffic_replay_views.default_replay_controllers(plain) == ["fixed", "max_pressure"]
    assert traffic_replay_views.default_replay_controllers(["webster"]) == ["webster"]
    assert traffic_replay_views.signals(replays, SCENARIO) == ["GS_cluster_1"]
    lanes = traffic_replay_views.replay_frame(replays, SCENARIO, ["fixed", "dqn_fair", "absent"])
    assert list(dict.fromkeys(lanes["label"])) == ["fixed-time", "DQN fair"] and len(lanes) == 24
    first = lanes[lanes["controller"] == "fixed"]
    assert list(first["time_end"][:2]) == [25_205, 25_210] and first["time_end"].iloc[-1] == 25_260
    assert list(first["phase"][:4]) == [0, 0, 0, 1]
    spec = traffic_replay_views.replay_chart(lanes).to_dict()
    assert spec["mark"]["type"] == "rect" and spec["encoding"]["x2"]["field"] == "time_end"
    assert spec["encoding"]["color"]["field"] == "phase_label" and spec["height"] == {"step": 34}
    assert traffic_replay_views.replay_frame(replays, SCENARIO, []).empty


def test_views_frontier_includes_the_baselines_and_training_curves() -> None:
    summary = _summary(_runs())
    frontier = traffic_replay_views.frontier_frame(_frontier(), summary, SCENARIO)
    sweep, base = frontier[frontier["kind"] == "sweep"], frontier[frontier["kind"] == "baseline"]
    assert list(sweep["fairness_weight"]) == [0.0, 0.25, 1.0, 4.0]
    assert sweep["label"].iloc[0] == "weight 0 (vehicle-only)" and sweep["ped_wait_p95"].iloc[0] == 150.0
    assert list(base["label"]) == ["fixed-time", "Webster", "actuated (SUMO)", "max-pressure", "queue-greedy",
                                   "pedestrian-aware greedy"]
    assert base.set_index("label").loc["max-pressure", "veh_delay_mean"] == pytest.approx(25.0)
    spec = traffic_replay_views.frontier_chart(frontier).to_dict()
    data = spec["datasets"][spec["data"]["name"]]
    assert {row["label"] for row in data if row["kind"] == "baseline"} == set(base["label"])
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["line", "point", "text", "square", "text"]
    only_baselines = traffic_replay_views.frontier_frame(_frontier().iloc[0:0], summary, SCENARIO)
    assert set(only_baselines["kind"]) == {"baseline"}
    assert traffic_replay_views.frontier_frame(_frontier(), summary.iloc[0:0], "absent").empty

    curves = traffic_replay_views.training_frame(_training(), SCENARIO, True)
    assert list(dict.fromkeys(curves["agent"])) == list(AGENTS_WITH_PEDS) and len(curves) == 15
    assert list(curves["episode_return"][:3]) == [-100.0, -90.0, -80.0]
    assert traffic_replay_views.training_chart(curves).to_dict()["encoding"]["x"]["field"] == "env_steps"
    assert list(traffic_replay_views.training_frame(_training(), SCENARIO, False)["agent"].unique()) == ["dqn"]


def test_views_headline_ratios_and_choice() -> None:
    assert [v for _, v, _ in traffic_views.headline(METRICS, SCENARIO)] == [
        "1.08×", "0.33×", "yes", "3.75×", "850", "120 s"]
    assert [v for _, v, _ in traffic_views.headline(METRICS, SCENARIO, False)] == ["0.95×", "0.63×", "850", "120 s"]
    undefined = {"veh_delay_vs_best_heuristic_cologne1": math.nan}
    assert [v for _, v, _ in traffic_views.headline(undefined, SCENARIO)] == ["n/a"] * 4
    assert traffic_views.headline({}, None) == []

    ratios = traffic_views.ratio_table({**METRICS, "veh_delay_vs_best_heuristic_single-intersection": 0.9,
                                        "fair_beats_fixed_both_single-intersection": 0.0,
                                        "veh_delay_mean_fixed_cologne1": 40.0})
    assert list(ratios["scenario"]) == ["cologne1", "single-intersection"]
    assert list(ratios.columns) == ["scenario", *(p for p, _, _ in traffic_views.RATIOS)]
    by = ratios.set_index("scenario")
    assert by.loc["single-intersection", "fair_beats_fixed_both"] == "no"
    assert by.loc["cologne1", "fair_beats_fixed_both"] == "yes"
    assert by.loc["cologne1", "nopeds_dqn_vs_fixed"] == pytest.approx(19 / 30)
    assert np.isnan(by.loc["single-intersection", "vehicle_only_ped_p95_vs_fair"])
    assert list(traffic_views.ratio_table({"agent_train_seconds": 1.0}).columns) == ["scenario"]

    summary = _summary(_runs())
    assert traffic_views.best_heuristic(summary, SCENARIO) == "max_pressure"
    text = traffic_views.choice_text(summary, SCENARIO)
    assert "**max-pressure** (vehicles' mean delay 25.0 s, pedestrians' p95 wait 120.0 s)" in text
    assert "**DQN fair**: vehicles' mean delay 27.0 s, pedestrians' p95 wait 40.0 s." in text
    plain = traffic_views.choice_text(summary, SCENARIO, False)
    assert "cologne1 (no pedestrians)" in plain and "pedestrians'" not in plain and "**DQN**" in plain


def test_page_renders_its_form_and_sends_a_spec_prepare_accepts(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    at, prepared = open_form(DOMAIN, monkeypatch)
    assert at.multiselect(key="scenarios").value == ["single-intersection"]
    assert "custom" not in at.multiselect(key="scenarios").options
    assert "your own network (upload)" in at.multiselect(key="scenarios").options
    assert at.number_input(key="seconds").value == 600 and at.number_input(key="env_steps").value == 3000
    at.button(key="run").click().run()
    at.multiselect(key="scenarios").set_value(["single-intersection", "cologne1"])
    at.checkbox(key="sweep").check()
    submit(at, {"seconds": 900, "env_steps": 5000, "test_seeds": 3, "ped_rate": 60.0, "fairness_weight": 2.0})
    assert [e.value for e in at.error] == ["test: prepared"]
    first, second = prepared
    assert first.scenarios.names == ["single-intersection"] and first.scenarios.seconds == 600
    assert first.demand.test_seeds == [100, 101] and first.agent.env_steps == 3000
    assert first.study.fairness_weights == [] and first.reward.fairness_weight == 1.0
    assert second.scenarios.names == ["single-intersection", "cologne1"] and second.scenarios.pedestrians
    assert (second.scenarios.seconds, second.agent.env_steps) == (900, 5000)
    assert second.demand.test_seeds == [100, 101, 102] and second.demand.ped_rate_per_hour == 60.0
    assert second.reward.fairness_weight == 2.0 and second.study.fairness_weights == [0.25, 2.0, 4.0]
    assert not set(second.demand.train_seeds) & set(second.demand.test_seeds)
    assert list_runs(url=store_url) == []


def test_bad_input_shows_one_line_error_and_records_nothing(store_url: str) -> None:
    at = open_page(TRAFFIC_PAGE)
    at.multiselect(key="scenarios").set_value([])
    one_line_error(submit(at, {}), "scenarios.names:")
    at.multiselect(key="scenarios").set_value(["cologne1"])
    one_line_error(submit(at, {"seconds": 10}), "scenarios.seconds:")
    one_line_error(submit(at, {"seconds": 600, "env_steps": 0}), "agent.env_steps:")
    at.multiselect(key="scenarios").set_value(["your own network (upload)"])
    one_line_error(submit(at, {"env_steps": 3000}), "scenarios.net_file:")  # nothing uploaded
    assert list_runs(url=store_url) == [] and not at.status


def test_an_own_networks_uploads_are_saved_once_under_names_of_the_pages_choosing(tmp_path: Path) -> None:
    examples = Path(__file__).parents[2] / "examples"
    uploads = {traffic_views.upload_key(name): (name, (examples / name).read_bytes())
               for name in ("traffic_own.osm", "traffic_own_counts.csv")}
    assert set(uploads) == {"osm_file", "counts_file"}
    assert traffic_views.upload_key("../../x.rou.xml") == "route_file" and traffic_views.upload_key("a.xml") == "net_file"
    paths = traffic_views.saved_uploads(uploads, str(tmp_path))
    assert traffic_views.saved_uploads(uploads, str(tmp_path)) == paths
    assert [Path(p).name for p in paths.values()] == ["osm.osm", "counts.csv"]
    assert all(Path(p).is_relative_to(tmp_path / "uploads") for p in paths.values())
    job = DOMAIN.prepare({"job": {"kind": "traffic", "name": "own"},
                          "scenarios": {"names": ["custom"], "begin": 25200, "seconds": 600, **paths}})
    assert job.scenarios.osm_file == paths["osm_file"]


def test_recorded_run_opens_with_every_section(store_url: str, run_id: int) -> None:
    at = open_report(TRAFFIC_PAGE, run_id)
    assert [m.value for m in at.metric] == ["1.08×", "0.33×", "yes", "3.75×", "850", "120 s"]
    subheaders = [s.value for s in at.subheader]
    for section in ("Vehicles and pedestrians per controller", "Across the held-out seeds",
                    "Signal phases over time", "Vehicles against pedestrians", "Choosing the pedestrian weight",
                    "Training", "Tables"):
        assert section in subheaders, subheaders
    chosen = next(d.value for d in at.dataframe if "ped_weight" in d.value.columns)
    assert list(chosen["controller"]) == ["fixed", "max_pressure", "dqn_fair_p1", "dqn_fair_p3"]
    assert list(chosen["chosen"]) == [False, False, False, True]  # read back from the recorded CSV
    assert at.selectbox(key=f"scenario_{run_id}").value == "cologne1"
    table = at.dataframe[0].value
    assert len(table) == len(WITH_PEDS) and table["controller"].iloc[0] == "dqn_fair"
    assert table.set_index("controller").loc["dqn_vehicle", "ped_wait_p95"] == pytest.approx(150.0)
    assert any("**max-pressure**" in m.value for m in at.markdown)
    assert at.multiselect(key=f"replay_controllers_{run_id}").value == ["dqn_fair", "fixed", "max_pressure"]
    assert len(at.get("vega_lite_chart")) == 4  # seeds, replay, trade-off, training
    assert {b.key for b in at.download_button} == {f"download_{name}" for name in
                                                   ("summary", "runs", "training", "replays", "frontier")}

    at.selectbox(key=f"scenario_{run_id}").set_value("cologne1 (no pedestrians)").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert list(table["controller"]) == ["dqn", "fixed", "max_pressure", "queue_greedy"]
    assert not [c for c in table.columns if str(c).startswith("ped_")]
    assert at.multiselect(key=f"replay_controllers_{run_id}").value == ["fixed", "max_pressure"]
    assert len(at.get("vega_lite_chart")) == 3  # seeds, replay, training (no trade-off without pedestrians)
    assert "Choosing the agent" in [s.value for s in at.subheader]
    chosen = next(d.value for d in at.dataframe if "train_seed" in d.value.columns)
    assert list(chosen["controller"]) == ["max_pressure", "dqn_s0", "dqn_s1"]
    assert list(chosen["chosen"]) == [False, False, True] and list(chosen["train_seed"].iloc[1:]) == [0, 1]

    at.selectbox(key=f"scenario_{run_id}").set_value("cologne1").run()
    at.multiselect(key=f"replay_controllers_{run_id}").set_value([]).run()
    assert not at.exception and "Choose at least one controller to replay." in [i.value for i in at.info]


def test_the_ppo_agent_is_an_agent_not_a_baseline() -> None:
    from decisions.mobility.traffic.report import is_agent

    summary = pd.DataFrame([{"scenario": SCENARIO, "pedestrians": True, "controller": c, "veh_delay_mean": d,
                             "ped_wait_p95": w, "seeds": 2}
                            for c, (d, w) in {**WITH_PEDS, "ppo_fair": (29.0, 45.0)}.items()])
    assert is_agent("ppo_fair") and is_agent("dqn_fair_w4") and not is_agent("ped_greedy")
    table = traffic_views.controller_table(summary, SCENARIO).set_index("controller")
    assert table.loc["ppo_fair", "role"] == "fair agent (PPO)" and table.loc["ppo_fair", "label"] == "PPO fair"
    assert list(table.index[:2]) == ["dqn_fair", "ppo_fair"]  # with the agents, before the sweep and baselines
    runs = summary.assign(seed=100)
    kinds = traffic_views.distribution_frame(runs, SCENARIO).drop_duplicates("controller").set_index("controller")
    assert kinds.loc["ppo_fair", "kind"] == "agent"


def test_a_replay_names_the_transition_phase_and_keeps_its_lanes_apart() -> None:
    replays = _replays()
    replays.loc[replays.index % 4 == 3, "phase"] = -1
    lanes = traffic_replay_views.replay_frame(replays, SCENARIO, ["fixed", "dqn_fair"])
    assert traffic_replay_views.TRANSITION in set(lanes["phase_label"]) and "-1" not in set(lanes["phase_label"])
    spec = traffic_replay_views.replay_chart(lanes).to_dict()
    scale = spec["encoding"]["color"]["scale"]
    assert scale["domain"][-1] == traffic_replay_views.TRANSITION and len(scale["domain"]) == len(scale["range"])
    assert spec["height"] == {"step": 34}  # each lane its own band, whatever the page's width


def test_the_tradeoff_chart_labels_its_wait_axis(tmp_path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from decisions.mobility.traffic import report

    fig, ax = plt.subplots()
    ax.scatter([20, 30], [15.0, 400.0])
    report._wait_axis(ax, pd.Series([15.0, 400.0]))
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    plt.close(fig)
    assert labels == ["0", "5", "10", "20", "50", "100", "200", "500"]
    summary = pd.DataFrame([{"scenario": SCENARIO, "pedestrians": True, "controller": c, "veh_delay_mean": d,
                             "ped_wait_p95": w} for c, (d, w) in {**WITH_PEDS, "ppo_fair": (29.0, 45.0)}.items()])
    assert report.tradeoff_chart(summary, tmp_path / "tradeoff.png").stat().st_size > 10_000
