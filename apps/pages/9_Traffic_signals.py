"""Traffic signals page: fair signal control for vehicles and pedestrians on the SUMO simulator.

The run goes through ``execute_domain``, so it is recorded in the run store like a
CLI run; the page then reopens the recorded report (``TrafficReport.load``, the CSV tables read
back) and draws the headline figures, both groups' figures per controller of a scenario, their
spread over the held-out demand seeds, a replay of one signal's phases, the vehicle/pedestrian
trade-off as the fairness weight moves (baselines as reference points), the agents' training
curves and the downloads of the tables. ``?run=<id>`` opens the report of a recorded run. The
page imports the domain's package API only.
"""

from __future__ import annotations

from typing import Any

import app_common
import page_skeleton
import streamlit as st
import traffic_replay_views
import traffic_views

from decisions.mobility.traffic import DOMAIN, SCENARIO_NAMES, TrafficReport

# What the page decides, under its title.
INTRO = (
    "A signal agent decides, every few seconds, which green phase each traffic light of a network shows "
    "next, for the vehicles and the pedestrians waiting at it; one DQN network is shared by every "
    "signal. Its reward weighs halted vehicles, waiting pedestrians and the longest single wait of "
    "either group, so no one is left waiting. Fairness is judged on individuals (the 95th-percentile "
    "and longest waits, Jain's index over every person's delay), and the vehicles' and the pedestrians' "
    "figures are always shown separately, never merged into one number. Every controller is scored on "
    "held-out demand against fixed-time, Webster, SUMO's actuated control, max-pressure and greedy rules."
)

# Budgets small enough for an interactive run of a few minutes on a CPU (no bare string literals at
# module level here: Streamlit's "magic" would print them).
SCENARIOS = tuple(SCENARIO_NAMES)  # the registered networks
OWN = "custom"  # the scenario of an uploaded network
OWN_LABEL = "your own network (upload)"
INTERACTIVE_DEFAULTS = {"seconds": 600, "env_steps": 3000, "test_seeds": 2, "ped_rate": 120.0,
                        "fairness_weight": 1.0}
TEST_SEED_BASE = 100
SWEEP_WEIGHTS = (0.25, 4.0)
TABLES = ("summary", "runs", "training", "replays", "frontier")


def settings_inputs() -> dict[str, Any]:
    """Run name, scenarios, pedestrian rate, episode length, fairness weight, training and held-out seeds."""
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Scenarios and demand")
        data: dict[str, Any] = {
            "name": st.text_input("Run name", value="traffic-app", key="run_name"),
            "scenarios": st.multiselect("Scenarios (each with sidewalks, crossings and pedestrian flows)",
                                        [*SCENARIOS, OWN_LABEL], default=[SCENARIOS[0]], key="scenarios"),
            "ped_rate": st.number_input("Pedestrians per hour per pedestrian flow", min_value=0.0,
                                        value=INTERACTIVE_DEFAULTS["ped_rate"], step=30.0, key="ped_rate"),
            "seconds": st.number_input("Simulated seconds per episode", min_value=0,
                                       value=INTERACTIVE_DEFAULTS["seconds"], step=300, key="seconds"),
        }
        if OWN_LABEL in data["scenarios"]:
            data["own_files"] = own_network_uploads()
            data["begin"] = st.number_input("Your network's first simulated second (e.g. 25200 for demand "
                                            "counted from 07:00)", min_value=0, value=0, step=1800, key="begin")
    with right:
        st.subheader("Agents and study")
        data |= {
            "fairness_weight": st.number_input("Fairness weight (the longest single wait, either group)",
                                               min_value=0.0, value=INTERACTIVE_DEFAULTS["fairness_weight"],
                                               step=0.5, key="fairness_weight"),
            "env_steps": st.number_input("Training decisions per agent (signal-steps)", min_value=0,
                                         value=INTERACTIVE_DEFAULTS["env_steps"], step=1000, key="env_steps"),
            "test_seeds": st.number_input("Held-out demand seeds", min_value=1, max_value=3,
                                          value=INTERACTIVE_DEFAULTS["test_seeds"], key="test_seeds"),
            "sweep": st.checkbox(f"Sweep the fairness weight (also {', '.join(f'{w:g}' for w in SWEEP_WEIGHTS)}: "
                                 "one more fair agent each)", value=False, key="sweep"),
        }
        st.caption("The fair agent, the vehicle-only agent (the ablation) and an agent on sumo-rl's default "
                   "reward train on their own demand draws; every baseline (fixed-time, Webster, actuated, "
                   "max-pressure, queue-greedy, pedestrian-aware greedy) and every agent is then scored on the "
                   "held-out draws. Longer studies and runs without pedestrians run from the command line.")
    data["seed"] = 0
    return data


def own_network_uploads() -> dict[str, tuple[str, bytes]]:
    """The uploaded network (SUMO .net.xml or an OpenStreetMap .osm extract) and demand (SUMO .rou.xml
    or counts per approach, CSV: edge, vehicles_per_hour): ``[scenarios]`` key -> (file name, bytes)."""
    network = st.file_uploader("Your network: SUMO .net.xml, or an OpenStreetMap .osm extract",
                               type=["xml", "osm"], key="own_network")
    demand = st.file_uploader("Its demand: SUMO .rou.xml, or a CSV of vehicles per hour per approach "
                              "(columns edge, vehicles_per_hour)", type=["xml", "csv"], key="own_demand")
    return {traffic_views.upload_key(f.name): (f.name, f.getvalue()) for f in (network, demand) if f is not None}


def job_spec(settings: dict[str, Any], output_dir: str | None) -> dict[str, Any]:
    """The job spec (``[job]``, ``[scenarios]``, ``[demand]``, ``[reward]``, ``[agent]``, ``[study]``) of the
    form; an own network's uploads are saved (``traffic_views.saved_uploads``) and named in ``[scenarios]``."""
    weight = float(settings["fairness_weight"])
    sweep = sorted({weight, *SWEEP_WEIGHTS}) if settings.get("sweep") else []
    names = [OWN if name == OWN_LABEL else name for name in settings["scenarios"]]
    scenarios = {"names": names, "pedestrians": True, "seconds": int(settings["seconds"])}
    if OWN in names:
        scenarios |= traffic_views.saved_uploads(settings.get("own_files", {}), output_dir)
        scenarios["begin"] = int(settings.get("begin", 0))
    return {
        "job": app_common.job_table(DOMAIN, settings, output_dir),
        "scenarios": scenarios,
        "demand": {"ped_rate_per_hour": float(settings["ped_rate"]),
                   "test_seeds": [TEST_SEED_BASE + k for k in range(int(settings["test_seeds"]))]},
        "reward": {"fairness_weight": weight},
        "agent": {"env_steps": int(settings["env_steps"])},
        "study": {"fairness_weights": sweep},
    }


def choose_scenario(report: TrafficReport, run_id: int) -> tuple[str, bool] | None:
    """The scenario the sections show: the only one, or the operator's choice."""
    options = traffic_views.scenario_options(report.summary)
    if not options:
        return None
    if len(options) == 1:
        return next(iter(options.values()))
    label = st.selectbox("Scenario", list(options), key=f"scenario_{run_id}")
    return options[label]


def show_ratios(report: TrafficReport) -> None:
    """The per-scenario ratios of the run's metrics (when it has more than the headline scenario's)."""
    ratios = traffic_views.ratio_table(report.metrics)
    if len(ratios) <= 1:
        return
    st.caption("Per scenario: the fair agent against the best heuristic by vehicle delay (below 1: better), "
               "and the vehicle-only agent's pedestrians against the fair agent's (above 1: they wait longer).")
    names = traffic_views.ratio_labels()
    st.dataframe(ratios, hide_index=True, width="stretch", column_config={
        name: (st.column_config.TextColumn(names[name]) if name == "fair_beats_fixed_both" else
               st.column_config.NumberColumn(names[name], format="%.2f×")) for name in ratios.columns if name in names
    })


def show_controllers(report: TrafficReport, scenario: str, pedestrians: bool) -> None:
    """Both groups' figures per controller of a scenario, side by side."""
    st.subheader("Vehicles and pedestrians per controller")
    st.caption("Means over the held-out demand seeds. Vehicles' delay counts time lost on the way and waiting "
               "to enter (vehicles never inserted too); pedestrians' wait is per person. Jain's index is over "
               "every individual's delay (1: all equal) and over the two group means.")
    table = traffic_views.controller_table(report.summary, scenario, pedestrians)
    formats = {"ped_veh_ratio": "%.2f", "jain_individual": "%.3f", "jain_groups": "%.3f",
               "veh_throughput": "%d", "ped_throughput": "%d", "uninserted_vehicles": "%.1f",
               "unfinished_pedestrians": "%.1f", "sim_seconds_per_wall_second": "%.0f"}
    st.dataframe(table, hide_index=True, width="stretch", column_config={
        "controller": None,
        "label": st.column_config.TextColumn("controller"),
        **{name: st.column_config.NumberColumn(traffic_views.COLUMN_LABELS[name], format=formats.get(name, "%.1f"))
           for name in table.columns if name in traffic_views.COLUMN_LABELS},
    })
    text = traffic_views.choice_text(report.summary, scenario, pedestrians)
    if text:
        st.markdown(text)


def show_distribution(report: TrafficReport, scenario: str, pedestrians: bool) -> None:
    """Each controller's vehicles' mean delay and pedestrians' p95 wait on every held-out seed."""
    st.subheader("Across the held-out seeds")
    frame = traffic_views.distribution_frame(report.runs, scenario, pedestrians)
    if frame.empty:
        st.info("This run recorded no per-seed figures for that scenario.")
        return
    st.caption("A box over the held-out demand seeds per controller (minimum to maximum), each seed a point.")
    st.altair_chart(traffic_views.distribution_chart(frame), width="content")


def show_replay(report: TrafficReport, run_id: int, scenario: str, pedestrians: bool) -> None:
    """The green phase of one signal over the first simulated minutes, per chosen controller."""
    st.subheader("Signal phases over time")
    replays = report.replays
    controllers = traffic_replay_views.replay_controllers(replays, report.summary, scenario, pedestrians)
    if not controllers:
        st.info("This run recorded no phase replay for that scenario.")
        return
    left, right = st.columns([3, 1])
    chosen = left.multiselect(
        "Controllers", controllers, format_func=traffic_views.controller_label, key=f"replay_controllers_{run_id}",
        default=traffic_replay_views.default_replay_controllers(controllers),
    )
    found = traffic_replay_views.signals(replays, scenario, pedestrians)
    signal = right.selectbox("Signal", found, key=f"replay_signal_{run_id}") if len(found) > 1 else None
    frame = traffic_replay_views.replay_frame(replays, scenario, chosen, signal=signal, pedestrians=pedestrians)
    if frame.empty:
        st.info("Choose at least one controller to replay.")
        return
    st.caption(f"Signal {frame['signal'].iloc[0]} on the first held-out seed: which green phase is on "
               "(grey: yellow or all red, between two green phases).")
    st.altair_chart(traffic_replay_views.replay_chart(frame), width="stretch")


def show_frontier(report: TrafficReport, scenario: str, pedestrians: bool) -> None:
    """Vehicles' mean delay against pedestrians' p95 wait as the fairness weight moves, with the baselines."""
    if not pedestrians:
        return
    st.subheader("Vehicles against pedestrians")
    frame = traffic_replay_views.frontier_frame(report.frontier, report.summary, scenario)
    if frame.empty:
        st.info("No controller recorded both groups' figures on this scenario.")
        return
    if not (frame["kind"] == "sweep").any():
        st.caption("This run did not sweep the fairness weight; the baselines alone are drawn.")
    else:
        st.caption("Blue: the fair agent at each fairness weight (weight 0: the vehicle-only agent); grey: the "
                   "baselines. Down and to the left is better for both groups.")
    st.altair_chart(traffic_replay_views.frontier_chart(frame), width="stretch")


def show_selection(report: TrafficReport, scenario: str, pedestrians: bool) -> None:
    """The validation figures a choice was made on: the fair agents' pedestrian weight (runs with a
    weight grid) or the plain agent's training seed (runs with several plain candidates)."""
    table = report.selection
    if table is None or table.empty:
        return
    rows = table[table["scenario"] == scenario]
    if "pedestrians" in rows.columns:  # runs before the plain candidates recorded the column
        rows = rows[rows["pedestrians"] == pedestrians]
    elif not pedestrians:
        return
    if rows.empty:
        return
    if pedestrians:
        st.subheader("Choosing the pedestrian weight")
        st.caption("On validation demand (neither trained nor tested on): one fair agent per candidate weight "
                   "beside the heuristics; the chosen weight has the lowest pedestrians' p95 wait among the "
                   "candidates within the vehicle-delay tolerance of the best heuristic.")
    else:
        st.subheader("Choosing the agent")
        st.caption("On validation demand (neither trained nor tested on): one DQN per training seed beside "
                   "the baselines; the chosen one has the lowest mean vehicle delay.")
    st.dataframe(rows.drop(columns=["scenario", "pedestrians"], errors="ignore"), hide_index=True)


def show_training(report: TrafficReport, scenario: str, pedestrians: bool) -> None:
    """Each agent's episode return against the decisions it trained on."""
    frame = traffic_replay_views.training_frame(report.training, scenario, pedestrians)
    if frame.empty:
        return
    page_skeleton.chart_section(
        "Training",
        "Episode return on the training demand against decisions (signal-steps) trained; each agent "
        "is scored on its own reward, so returns compare along a curve, not across agents.",
        traffic_replay_views.training_chart(frame),
    )


def show_downloads(report: TrafficReport, run_id: int) -> None:
    """The CSV downloads of the run's tables."""
    st.subheader("Tables")
    columns = st.columns(len(TABLES))
    for column, name in zip(columns, TABLES, strict=True):
        with column:
            app_common.download_csv(getattr(report, name), name, run_id)


def show_report(report: TrafficReport, run_id: int) -> None:
    """Draw a report: headline figures, per-controller table, seeds, replay, trade-off, training, tables."""
    first = traffic_views.headline_scenario(report.summary)
    app_common.results_header(run_id, traffic_views.headline(report.metrics, *(first or (None, True))))
    if first is not None:
        st.caption(f"Headline figures on {traffic_views.scenario_label(*first)}.")
    show_ratios(report)
    chosen = choose_scenario(report, run_id)
    if chosen is None:
        st.info("This run recorded no controller figures.")
    else:
        scenario, pedestrians = chosen
        show_controllers(report, scenario, pedestrians)
        show_distribution(report, scenario, pedestrians)
        show_replay(report, run_id, scenario, pedestrians)
        show_frontier(report, scenario, pedestrians)
        show_selection(report, scenario, pedestrians)
        show_training(report, scenario, pedestrians)
    show_downloads(report, run_id)


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/traffic:", intro=INTRO,
    settings=settings_inputs, job_spec=job_spec, show=lambda report, run_id, _url: show_report(report, run_id),
))
