"""Views of the Traffic signals page over time and weights: phase replays, the fairness-weight frontier, training curves.

Pure functions of report tables (no Streamlit calls), like :mod:`traffic_views`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import altair as alt
import pandas as pd
from traffic_views import BASELINES, COLUMN_LABELS, controller_label, controller_order, of_scenario


def replay_controllers(replays: pd.DataFrame, summary: pd.DataFrame, scenario: str,
                       pedestrians: bool = True) -> list[str]:
    """The controllers with a phase replay of a scenario, in ``controller_order``.

    Where the replays do not say whether pedestrians ran (no ``pedestrians`` column), only the
    controllers the summary lists for the chosen variant are offered (the plain variant's ``dqn``, not
    the fair agent of the pedestrian run).
    """
    names = list(of_scenario(replays, scenario, pedestrians)["controller"].astype(str))
    if "pedestrians" not in replays and not summary.empty:
        ran = set(of_scenario(summary, scenario, pedestrians)["controller"].astype(str))
        names = [n for n in names if n in ran]
    return controller_order(names)


def default_replay_controllers(available: Sequence[str]) -> list[str]:
    """The controllers a replay shows first: the fair agent (or the plain one), fixed-time and max-pressure
    (the first available one when none of them is)."""
    chosen = [c for c in ("dqn_fair", "dqn", "fixed", "max_pressure") if c in available]
    return chosen or list(available[:1])


def signals(replays: pd.DataFrame, scenario: str, pedestrians: bool | None = None) -> list[str]:
    """The signals a scenario's replays hold, in the table's order."""
    rows = of_scenario(replays, scenario, pedestrians)
    return list(dict.fromkeys(rows["signal"].astype(str))) if "signal" in rows else []


def replay_frame(replays: pd.DataFrame, scenario: str, controllers: Sequence[str],
                 signal: str | None = None, pedestrians: bool | None = None) -> pd.DataFrame:
    """The green phase of one signal over time, per controller, as intervals.

    Args:
        replays: the report's ``replays`` table (``scenario, controller, signal, time_s, phase``).
        scenario: the scenario.
        controllers: which controllers, in display order.
        signal: which signal (default: the first of the scenario).
        pedestrians: with or without pedestrians, where the table says (None: any).

    Returns:
        ``controller, label, signal, time_s, time_end, phase, phase_label``: each row holds its phase until
        the next row's time (the last one for the table's usual step), controllers in the order given;
        ``phase_label`` names it (``"phase 2"``, or ``TRANSITION`` for -1: yellow or all red).
    """
    columns = ["controller", "label", "signal", "time_s", "time_end", "phase", "phase_label"]
    rows = of_scenario(replays, scenario, pedestrians)
    rows = rows[rows["controller"].astype(str).isin([str(c) for c in controllers])]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    if "signal" in rows:
        rows = rows[rows["signal"].astype(str) == str(signal if signal is not None else rows["signal"].iloc[0])]
    else:
        rows = rows.assign(signal="")
    parts = []
    for controller in controllers:
        part = rows[rows["controller"].astype(str) == str(controller)].sort_values("time_s", kind="stable").copy()
        if part.empty:
            continue
        times = part["time_s"].astype(float)
        steps = times.diff().dropna()
        step = float(steps.median()) if not steps.empty and steps.median() > 0 else 1.0
        part["time_end"] = times.shift(-1).fillna(times.iloc[-1] + step)
        part["controller"] = str(controller)
        part["label"] = controller_label(controller)
        parts.append(part)
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True)
    out["signal"] = out["signal"].astype(str)
    out["phase"] = pd.to_numeric(out["phase"], errors="coerce").astype("Int64")
    out = out.dropna(subset=["phase"])
    out["phase_label"] = [phase_label(int(p)) for p in out["phase"]]
    return out[columns]


TRANSITION = "yellow / all red"
"""The name of phase -1 in a replay: the signal shows no green phase (a change of phases)."""


def phase_label(phase: int) -> str:
    """``"phase 2"`` for a green phase's index; ``TRANSITION`` for -1."""
    return TRANSITION if phase < 0 else f"phase {phase}"


def replay_chart(frame: pd.DataFrame, *, height_per_controller: int = 34) -> alt.Chart:
    """One lane per controller: the green phase as a coloured band over simulated time (grey: yellow or all red).

    The lanes have a fixed step (``height_per_controller`` pixels), so the chart's height follows the
    number of controllers whatever the container's width.
    """
    order = list(dict.fromkeys(frame["label"]))
    greens = sorted({int(p) for p in frame["phase"].dropna() if int(p) >= 0})
    domain = [phase_label(p) for p in greens] + ([TRANSITION] if (frame["phase"] < 0).any() else [])
    palette = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#eeca3b", "#b279a2", "#ff9da6",
               "#9d755d", "#bab0ac"]
    colours = [palette[i % len(palette)] for i in range(len(greens))] + (["#d9d9d9"] if TRANSITION in domain else [])
    return alt.Chart(frame).mark_rect().encode(
        x=alt.X("time_s:Q", title="simulated time (s)", scale=alt.Scale(zero=False)),
        x2="time_end:Q",
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=200)),
        color=alt.Color("phase_label:N", title="green phase", scale=alt.Scale(domain=domain, range=colours),
                        legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("label:N", title="controller"), "signal:N", alt.Tooltip("phase_label:N", title="phase"),
                 alt.Tooltip("time_s:Q", title="from (s)"), alt.Tooltip("time_end:Q", title="to (s)")],
    ).properties(height=alt.Step(height_per_controller))


def frontier_frame(frontier: pd.DataFrame, summary: pd.DataFrame, scenario: str) -> pd.DataFrame:
    """The fairness sweep of a scenario with every baseline as a reference point.

    Args:
        frontier: the report's ``frontier`` table (``scenario, fairness_weight, veh_delay_mean,
            ped_wait_p95, ped_wait_mean``; weight 0 is the vehicle-only agent).
        summary: the report's ``summary`` table (its baselines with pedestrians give the references).
        scenario: the scenario.

    Returns:
        ``label, kind (sweep | baseline), fairness_weight, veh_delay_mean, ped_wait_p95, ped_wait_mean``:
        the sweep by ascending weight, then the baselines in the spec's order; rows whose vehicle delay
        or pedestrian p95 is missing are left out.
    """
    columns = ["label", "kind", "fairness_weight", "veh_delay_mean", "ped_wait_p95", "ped_wait_mean"]
    figures = ["veh_delay_mean", "ped_wait_p95", "ped_wait_mean"]
    sweep = of_scenario(frontier, scenario).copy()
    if not sweep.empty:
        sweep["fairness_weight"] = pd.to_numeric(sweep["fairness_weight"], errors="coerce")
        sweep = sweep.sort_values("fairness_weight", kind="stable")
        sweep["label"] = [f"weight {w:g}" + (" (vehicle-only)" if w == 0 else "") for w in sweep["fairness_weight"]]
        sweep["kind"] = "sweep"
    rows = of_scenario(summary, scenario, True)
    base = rows[rows["controller"].astype(str).isin(BASELINES)].copy()
    if not base.empty:
        base["controller"] = base["controller"].astype(str)
        base = base.set_index("controller", drop=False).loc[controller_order(list(base["controller"]))]
        base["label"] = base["controller"].map(controller_label)
        base["kind"] = "baseline"
        base["fairness_weight"] = math.nan
    parts = [p.reindex(columns=columns) for p in (sweep, base) if not p.empty]
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True)
    for column in ["fairness_weight", *figures]:
        out[column] = pd.to_numeric(out[column], errors="coerce")
    return out.dropna(subset=["veh_delay_mean", "ped_wait_p95"]).reset_index(drop=True)


def frontier_chart(frame: pd.DataFrame, *, height: int = 340) -> alt.LayerChart:
    """Vehicle mean delay against pedestrian p95 wait: the sweep as a line through its weights, the
    baselines as labelled grey squares."""
    x = alt.X("veh_delay_mean:Q", title=COLUMN_LABELS["veh_delay_mean"], scale=alt.Scale(zero=False))
    y = alt.Y("ped_wait_p95:Q", title=COLUMN_LABELS["ped_wait_p95"], scale=alt.Scale(zero=False))
    tooltip = ["label:N", "kind:N", alt.Tooltip("fairness_weight:Q", format="g"),
               alt.Tooltip("veh_delay_mean:Q", format=",.1f"), alt.Tooltip("ped_wait_p95:Q", format=",.1f"),
               alt.Tooltip("ped_wait_mean:Q", format=",.1f")]
    sweep = alt.Chart(frame).transform_filter(alt.datum.kind == "sweep").encode(
        x=x, y=y, order=alt.Order("fairness_weight:Q"), tooltip=tooltip)
    base = alt.Chart(frame).transform_filter(alt.datum.kind == "baseline").encode(x=x, y=y, tooltip=tooltip)
    return alt.layer(
        sweep.mark_line(color="#4c78a8"),
        sweep.mark_point(filled=True, size=70, color="#4c78a8"),
        sweep.mark_text(align="left", dx=7, dy=-7, color="#4c78a8").encode(text="label:N"),
        base.mark_square(size=70, color="#7f7f7f"),
        base.mark_text(align="left", dx=7, dy=7, color="#7f7f7f").encode(text="label:N"),
    ).properties(height=height)


def training_frame(training: pd.DataFrame, scenario: str, pedestrians: bool = True) -> pd.DataFrame:
    """Episode return against decisions trained of each agent of a scenario.

    Returns:
        ``agent, label, env_steps, episode_return``, agents in ``controller_order``, steps ascending;
        rows without a return are left out.
    """
    columns = ["agent", "label", "env_steps", "episode_return"]
    rows = of_scenario(training, scenario, pedestrians)
    if rows.empty:
        return pd.DataFrame(columns=columns)
    rows = rows.assign(agent=rows["agent"].astype(str),
                       env_steps=pd.to_numeric(rows["env_steps"], errors="coerce"),
                       episode_return=pd.to_numeric(rows["episode_return"], errors="coerce"))
    rows = rows.dropna(subset=["env_steps", "episode_return"])
    order = {a: i for i, a in enumerate(controller_order(list(rows["agent"])))}
    rows = rows.assign(_order=rows["agent"].map(order)).sort_values(["_order", "env_steps"], kind="stable")
    rows["label"] = rows["agent"].map(controller_label)
    return rows[columns].reset_index(drop=True)


def training_chart(frame: pd.DataFrame, *, height: int = 280) -> alt.Chart:
    """One line per agent: episode return against decisions (signal-steps) trained."""
    order = list(dict.fromkeys(frame["label"]))
    return alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("env_steps:Q", title="decisions trained"),
        y=alt.Y("episode_return:Q", title="episode return", scale=alt.Scale(zero=False)),
        color=alt.Color("label:N", title=None, sort=order, legend=alt.Legend(orient="top", labelLimit=0)),
        tooltip=[alt.Tooltip("label:N", title="agent"), alt.Tooltip("env_steps:Q", format=","),
                 alt.Tooltip("episode_return:Q", format=",.2f")],
    ).properties(height=height)
