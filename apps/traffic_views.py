"""Views of the Traffic signals page: table shaping and Altair charts of a recorded run's report.

Pure functions of report tables (no Streamlit calls), so they are testable without running the
page. Tables are those of ``decisions.mobility.traffic.TrafficReport`` (a recorded run is reopened
with ``app_common.report_loader``). Vehicles and pedestrians are always shown as separate figures,
never merged into one number:

- ``controller_label`` / ``controller_order`` / ``is_agent``: how controllers are named and listed
  (the agents first, then the baselines in the spec's order);
- ``scenario_options`` / ``of_scenario`` / ``headline_scenario``: a scenario with and without
  pedestrians are two choices (``"cologne1"``, ``"cologne1 (no pedestrians)"``);
- ``controller_table``: one row per controller of a scenario, both groups' figures side by side;
- ``distribution_frame`` / ``distribution_chart``: per-seed figures of every controller (box and points);
- phase replays, the fairness-weight frontier and training curves: :mod:`traffic_replay_views`;
- ``headline`` / ``ratio_table`` / ``choice_text``: the figures and the lines on top of the report;
- ``upload_key`` / ``saved_uploads``: an own network's uploaded files, saved for the run's spec.
"""

from __future__ import annotations

import hashlib
import math
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import altair as alt
import app_common
import pandas as pd

from decisions.mobility.traffic.report import is_agent

BASELINES = ("fixed", "webster", "actuated", "max_pressure", "queue_greedy", "ped_greedy")
"""The baseline controllers, in the spec's order (``spec.CONTROLLER_NAMES``)."""
HEURISTICS = ("fixed", "webster", "actuated", "max_pressure", "queue_greedy")
"""The heuristics the fair agent's vehicle delay is held against (``spec.HEURISTICS``)."""
AGENTS = ("dqn_fair", "ppo_fair", "dqn_vehicle", "dqn_default", "dqn")
"""The agents, in display order (``ppo_fair``: the fair reward trained with PPO; ``dqn``: the agent of a
scenario without pedestrians); the fairness sweep's ``dqn_fair_w<weight>`` follow, by weight."""
LABELS = {
    "fixed": "fixed-time",
    "webster": "Webster",
    "actuated": "actuated (SUMO)",
    "max_pressure": "max-pressure",
    "queue_greedy": "queue-greedy",
    "ped_greedy": "pedestrian-aware greedy",
    "dqn_fair": "DQN fair",
    "ppo_fair": "PPO fair",
    "dqn_vehicle": "DQN vehicle-only",
    "dqn_default": "DQN sumo-rl reward",
    "dqn": "DQN",
}
"""Readable names of the controllers (others are shown as they are)."""
NO_PEDESTRIANS = " (no pedestrians)"
"""Suffix of a scenario run without pedestrians in the scenario choice."""

VEHICLE_COLUMNS = ("veh_delay_mean", "veh_delay_p95", "veh_delay_max", "veh_wait_mean", "veh_throughput")
PEDESTRIAN_COLUMNS = ("ped_wait_mean", "ped_wait_p95", "ped_wait_max", "ped_timeloss_mean", "ped_throughput")
FAIRNESS_COLUMNS = ("ped_veh_ratio", "jain_individual", "jain_groups")
TABLE_COLUMNS = (*VEHICLE_COLUMNS, *PEDESTRIAN_COLUMNS, *FAIRNESS_COLUMNS, "uninserted_vehicles",
                 "unfinished_pedestrians", "sim_seconds_per_wall_second")
"""The per-controller table's figures, grouped: vehicles, pedestrians, the two together (when present)."""
COLUMN_LABELS = {
    "veh_delay_mean": "vehicles: mean delay (s)",
    "veh_delay_p95": "vehicles: p95 delay (s)",
    "veh_delay_max": "vehicles: max delay (s)",
    "veh_wait_mean": "vehicles: mean wait (s)",
    "veh_throughput": "vehicles: arrived",
    "ped_wait_mean": "pedestrians: mean wait (s)",
    "ped_wait_p95": "pedestrians: p95 wait (s)",
    "ped_wait_max": "pedestrians: max wait (s)",
    "ped_timeloss_mean": "pedestrians: mean time loss, finished walks (s)",
    "ped_throughput": "pedestrians: arrived",
    "ped_veh_ratio": "ped/veh mean ratio",
    "jain_individual": "Jain (individuals)",
    "jain_groups": "Jain (group means)",
    "uninserted_vehicles": "vehicles never inserted",
    "unfinished_pedestrians": "pedestrians still walking at the end",
    "sim_seconds_per_wall_second": "sim s per wall s",
}
"""Column headings of the per-controller table and axis titles of the charts."""
DISTRIBUTION_METRICS = ("veh_delay_mean", "ped_wait_p95")
"""The per-seed figures drawn by default: vehicles' mean delay and pedestrians' p95 wait."""

_SWEEP = re.compile(r"^dqn_fair_w(.+)$")


def sweep_weight(name: str) -> float | None:
    """The fairness weight of a sweep agent (``"dqn_fair_w0.5"`` -> 0.5), None for any other controller."""
    match = _SWEEP.match(str(name))
    if not match:
        return None
    try:
        return float(match.group(1))
    except ValueError:
        return None


def controller_label(name: str) -> str:
    """Readable name of a controller: ``"max-pressure"``, ``"DQN fair, weight 0.5"``; unknown names as they are."""
    name = str(name)
    weight = sweep_weight(name)
    if weight is not None:
        return f"DQN fair, weight {weight:g}"
    return LABELS.get(name, name)


def _rank(name: str) -> tuple[int, float, str]:
    name = str(name)
    if name in AGENTS:
        return 0, AGENTS.index(name), name
    weight = sweep_weight(name)
    if weight is not None:
        return 1, weight, name
    if is_agent(name):
        return 2, 0.0, name
    if name in BASELINES:
        return 3, BASELINES.index(name), name
    return 4, 0.0, name


def controller_order(names: Sequence[str]) -> list[str]:
    """The controllers, each once: agents (fair, vehicle-only, default reward, plain), the sweep by weight,
    other agents, the baselines in the spec's order, then anything else by name."""
    return sorted(dict.fromkeys(str(n) for n in names), key=_rank)


def _peds(frame: pd.DataFrame) -> pd.Series:
    """The ``pedestrians`` flags of a table as bools (True when the table has no such column)."""
    if "pedestrians" not in frame:
        return pd.Series(True, index=frame.index)
    return frame["pedestrians"].map(lambda v: str(v).strip().lower() in ("true", "1", "1.0", "yes"))


def scenario_label(scenario: str, pedestrians: bool) -> str:
    """``"cologne1"`` with pedestrians, ``"cologne1 (no pedestrians)"`` without."""
    return str(scenario) if pedestrians else f"{scenario}{NO_PEDESTRIANS}"


def scenario_options(summary: pd.DataFrame) -> dict[str, tuple[str, bool]]:
    """Label -> ``(scenario, pedestrians)`` of every scenario of the summary: those with pedestrians
    first, each in the summary's order."""
    if summary.empty or "scenario" not in summary:
        return {}
    keys = list(dict.fromkeys(zip(summary["scenario"].astype(str), _peds(summary), strict=True)))
    keys.sort(key=lambda k: not k[1])  # stable: with pedestrians first
    return {scenario_label(s, p): (s, bool(p)) for s, p in keys}


def headline_scenario(summary: pd.DataFrame) -> tuple[str, bool] | None:
    """The scenario of the headline figures: the first with pedestrians, else the first; None when empty."""
    options = scenario_options(summary)
    return next(iter(options.values()), None)


def of_scenario(frame: pd.DataFrame, scenario: str, pedestrians: bool | None = None) -> pd.DataFrame:
    """The rows of one scenario (and, where the table says, with or without pedestrians)."""
    if frame.empty or "scenario" not in frame:
        return frame.iloc[0:0]
    rows = frame["scenario"].astype(str) == str(scenario)
    if pedestrians is not None and "pedestrians" in frame:
        rows &= _peds(frame) == bool(pedestrians)
    return frame[rows]


def _role(name: str) -> str:
    if name in ("dqn_fair", "dqn"):
        return "fair agent" if name == "dqn_fair" else "agent"
    if name == "ppo_fair":
        return "fair agent (PPO)"
    if name == "dqn_vehicle":
        return "agent (vehicle-only ablation)"
    if name == "dqn_default":
        return "agent (sumo-rl reward)"
    if sweep_weight(name) is not None:
        return "agent (fairness sweep)"
    if is_agent(name):
        return "agent"
    return "heuristic" if name in HEURISTICS else "baseline"


def controller_table(summary: pd.DataFrame, scenario: str, pedestrians: bool = True) -> pd.DataFrame:
    """One row per controller of a scenario: both groups' figures side by side (means over held-out seeds).

    Args:
        summary: the report's ``summary`` table.
        scenario: the scenario.
        pedestrians: the run with pedestrians (True) or the one without.

    Returns:
        ``controller, label, role, seeds`` then the ``TABLE_COLUMNS`` the summary has, controllers in
        ``controller_order``. Pedestrian columns that are empty for every controller (a scenario
        without pedestrians) are left out.
    """
    rows = of_scenario(summary, scenario, pedestrians)
    figures = [c for c in TABLE_COLUMNS if c in rows]
    empty = [c for c in PEDESTRIAN_COLUMNS + ("ped_veh_ratio", "jain_groups", "unfinished_pedestrians")
             if c in figures and pd.to_numeric(rows[c], errors="coerce").isna().all()]
    figures = [c for c in figures if c not in empty]
    columns = ["controller", "label", "role", *(["seeds"] if "seeds" in rows else []), *figures]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    view = rows.drop_duplicates("controller").set_index("controller", drop=False)
    view = view.loc[controller_order(list(view["controller"]))].copy()
    view["controller"] = view["controller"].astype(str)
    view["label"] = view["controller"].map(controller_label)
    view["role"] = view["controller"].map(_role)
    for column in figures:
        view[column] = pd.to_numeric(view[column], errors="coerce")
    return view[columns].reset_index(drop=True)


def distribution_frame(runs: pd.DataFrame, scenario: str, pedestrians: bool = True,
                       metrics: Sequence[str] = DISTRIBUTION_METRICS) -> pd.DataFrame:
    """Per held-out seed and controller, the chosen figures of one scenario in long form.

    Args:
        runs: the report's ``runs`` table.
        scenario: the scenario.
        pedestrians: with or without pedestrians.
        metrics: which figures (columns of ``runs``).

    Returns:
        ``controller, label, kind (agent | baseline), seed, metric, metric_label, value``; NaN values
        (an empty group) are left out, controllers in ``controller_order``.
    """
    columns = ["controller", "label", "kind", "seed", "metric", "metric_label", "value"]
    rows = of_scenario(runs, scenario, pedestrians)
    present = [m for m in metrics if m in rows]
    if rows.empty or not present:
        return pd.DataFrame(columns=columns)
    long = rows.assign(seed=rows["seed"] if "seed" in rows else 0)[["controller", "seed", *present]].melt(
        id_vars=["controller", "seed"], var_name="metric", value_name="value")
    long["value"] = pd.to_numeric(long["value"], errors="coerce")
    long = long.dropna(subset=["value"])
    long["controller"] = long["controller"].astype(str)
    order = {c: i for i, c in enumerate(controller_order(list(long["controller"])))}
    long = long.assign(_order=long["controller"].map(order), _metric=long["metric"].map(present.index))
    long = long.sort_values(["_metric", "_order", "seed"], kind="stable", ignore_index=True)
    long["label"] = long["controller"].map(controller_label)
    long["kind"] = long["controller"].map(lambda c: "agent" if is_agent(c) else "baseline")
    long["metric_label"] = long["metric"].map(lambda m: COLUMN_LABELS.get(m, m))
    return long[columns]


def distribution_chart(frame: pd.DataFrame, *, width: int = 320) -> alt.HConcatChart:
    """One panel per figure: a box over the held-out seeds per controller, with every seed as a point.

    Args:
        frame: ``distribution_frame``'s table (not empty).
        width: each panel's width in pixels.

    Returns:
        The panels side by side, controllers down the shared vertical axis.
    """
    order = list(dict.fromkeys(frame["label"]))
    colour = alt.Color("kind:N", title=None, scale=alt.Scale(domain=["agent", "baseline"],
                                                             range=["#4c78a8", "#9d9d9d"]),
                       legend=alt.Legend(orient="top"))
    panels = []
    for metric in dict.fromkeys(frame["metric"]):
        rows = frame[frame["metric"] == metric]
        title = str(rows["metric_label"].iloc[0])
        y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=200))
        x = alt.X("value:Q", title=title, scale=alt.Scale(zero=False))
        box = alt.Chart(rows).mark_boxplot(extent="min-max", opacity=0.5, size=14).encode(x=x, y=y, color=colour)
        points = alt.Chart(rows).mark_circle(size=45, color="black", opacity=0.7).encode(
            x=x, y=y, tooltip=[alt.Tooltip("label:N", title="controller"), "seed:N",
                               alt.Tooltip("value:Q", title=title, format=",.1f")])
        panels.append(alt.layer(box, points).properties(width=width, height=max(120, 26 * len(order))))
    return alt.hconcat(*panels).resolve_scale(x="independent")


RATIOS = (
    ("veh_delay_vs_best_heuristic", "fair agent's vehicle delay / best heuristic's", "{:.2f}×"),
    ("ped_p95_wait_vs_best_heuristic", "fair agent's pedestrian p95 wait / that heuristic's", "{:.2f}×"),
    ("fair_beats_fixed_both", "fair agent beats fixed-time on both groups", "yes/no"),
    ("vehicle_only_ped_p95_vs_fair", "pedestrian p95 wait: vehicle-only agent / fair agent", "{:.2f}×"),
    ("nopeds_dqn_vs_max_pressure", "no pedestrians: DQN delay / max-pressure's", "{:.2f}×"),
    ("nopeds_dqn_vs_fixed", "no pedestrians: DQN delay / fixed-time's", "{:.2f}×"),
)
"""``(metric prefix, label, format)`` of the per-scenario figures (``<prefix>_<scenario>``)."""


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _yes_no(value: Any) -> str | None:
    number = _finite(value)
    return None if number is None else ("yes" if number >= 0.5 else "no")


def ratio_table(metrics: Mapping[str, float]) -> pd.DataFrame:
    """The per-scenario figures of the run's metrics, one row per scenario.

    Args:
        metrics: the run's metrics (``<prefix>_<scenario>`` for the prefixes of ``RATIOS``).

    Returns:
        ``scenario`` then one column per prefix found (``fair_beats_fixed_both`` as ``"yes"``/``"no"``),
        scenarios in the metrics' order; empty (no columns but ``scenario``) when there are none.
    """
    found: dict[str, dict[str, Any]] = {}
    prefixes = sorted((p for p, _, _ in RATIOS), key=len, reverse=True)  # the longest prefix wins
    for name, value in metrics.items():
        prefix = next((p for p in prefixes if name.startswith(p + "_")), None)
        if prefix is None:
            continue
        scenario = name[len(prefix) + 1:]
        number = _finite(value)
        found.setdefault(scenario, {})[prefix] = (_yes_no(value) if prefix == "fair_beats_fixed_both"
                                                   else number)
    present = [p for p, _, _ in RATIOS if any(p in row for row in found.values())]
    rows = [{"scenario": s, **{p: row.get(p) for p in present}} for s, row in found.items()]
    return pd.DataFrame(rows, columns=["scenario", *present])


def ratio_labels() -> dict[str, str]:
    """Column -> heading of ``ratio_table``."""
    return {p: label for p, label, _ in RATIOS}


def headline(metrics: Mapping[str, float], scenario: str | None,
             pedestrians: bool = True) -> list[tuple[str, str, str | None]]:
    """The headline figures of one scenario and the training speed, as ``(label, value, delta)``.

    With pedestrians: the fair agent's vehicle delay and pedestrian p95 wait against the best
    heuristic's, whether it beats fixed-time on both groups, and the vehicle-only agent's pedestrian
    p95 against the fair agent's; without: the DQN's vehicle delay against max-pressure and fixed-time.
    A figure the run left undefined reads ``"n/a"``; the training figures are left out when absent.
    """
    figures: list[tuple[str, str, str | None]] = []
    if scenario is not None:
        wanted = ("veh_delay_vs_best_heuristic", "ped_p95_wait_vs_best_heuristic", "fair_beats_fixed_both",
                  "vehicle_only_ped_p95_vs_fair") if pedestrians else ("nopeds_dqn_vs_max_pressure",
                                                                       "nopeds_dqn_vs_fixed")
        tiles = {p: (label, fmt) for p, label, fmt in RATIOS}
        for prefix in wanted:
            label, fmt = tiles[prefix]
            label = label[0].upper() + label[1:]
            value = metrics.get(f"{prefix}_{scenario}")
            if fmt == "yes/no":
                figures.append((label, _yes_no(value) or "n/a", None))
            else:
                figures += app_common.format_figures({prefix: value} if value is not None else {},
                                                     [(prefix, label, fmt)], missing="n/a")
    figures += app_common.format_figures(metrics, [
        ("training_sim_seconds_per_wall_second", "Simulated s per wall s (training)", "{:,.0f}"),
        ("agent_train_seconds", "Agent training time", "{:,.0f} s"),
    ])
    return figures


def best_heuristic(summary: pd.DataFrame, scenario: str, pedestrians: bool = True) -> str | None:
    """The heuristic with the lowest mean vehicle delay on a scenario (None when none ran)."""
    rows = of_scenario(summary, scenario, pedestrians)
    rows = rows[rows["controller"].astype(str).isin(HEURISTICS)]
    delays = pd.to_numeric(rows["veh_delay_mean"], errors="coerce") if "veh_delay_mean" in rows else None
    if rows.empty or delays is None or delays.isna().all():
        return None
    return str(rows.loc[delays.idxmin(), "controller"])


def _fmt(value: Any, unit: str = " s") -> str:
    number = _finite(value)
    return "n/a" if number is None else f"{number:,.1f}{unit}"


def choice_text(summary: pd.DataFrame, scenario: str, pedestrians: bool = True) -> str:
    """One line comparing the fair agent (or the plain DQN) with the best heuristic on a scenario,
    each group's figure named separately."""
    rows = of_scenario(summary, scenario, pedestrians).drop_duplicates("controller")
    by = rows.assign(controller=rows["controller"].astype(str)).set_index("controller")
    best = best_heuristic(summary, scenario, pedestrians)
    agent = next((a for a in ("dqn_fair", "dqn") if a in by.index), None)
    parts = []

    def figures(name: str) -> str:
        text = f"vehicles' mean delay {_fmt(by.loc[name, 'veh_delay_mean'])}"
        if pedestrians and "ped_wait_p95" in by:
            text += f", pedestrians' p95 wait {_fmt(by.loc[name, 'ped_wait_p95'])}"
        return text

    if best is not None:
        parts.append(f"Best heuristic on {scenario_label(scenario, pedestrians)} by vehicle delay: "
                     f"**{controller_label(best)}** ({figures(best)}).")
    if agent is not None:
        parts.append(f"**{controller_label(agent)}**: {figures(agent)}.")
    return " ".join(parts)


OWN_FILES = {"net_file": ".net.xml", "osm_file": ".osm", "route_file": ".rou.xml", "counts_file": ".csv"}
"""An own network's files: the ``[scenarios]`` key of each kind and the name ending it is saved with."""


def upload_key(file_name: str) -> str:
    """The ``[scenarios]`` key of an uploaded file by its name: ``osm_file`` (.osm), ``counts_file``
    (.csv), ``route_file`` (.rou.xml), else ``net_file``."""
    name = file_name.lower()
    if name.endswith(".osm"):
        return "osm_file"
    if name.endswith(".csv"):
        return "counts_file"
    return "route_file" if name.endswith(".rou.xml") else "net_file"


def saved_uploads(files: Mapping[str, tuple[str, bytes]], output_dir: str | None) -> dict[str, str]:
    """Each upload (``[scenarios]`` key -> (its name, its bytes)) written once under the run's output folder
    (else the temporary folder), in a folder named by its content's digest and under a name of the page's
    choosing (the user's name is not used as a path): ``[scenarios]`` key -> path."""
    root = Path(output_dir or tempfile.gettempdir()) / "uploads"
    paths = {}
    for key, (_, content) in files.items():
        folder = root / hashlib.sha256(content).hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{key.removesuffix('_file')}{OWN_FILES[key]}"
        if not path.is_file():
            path.write_bytes(content)
        paths[key] = str(path)
    return paths
