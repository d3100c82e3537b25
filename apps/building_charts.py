"""Altair charts of the building-energy page: pure functions of a recorded run's tables, no Streamlit calls.

Controllers are ``building_data.ControllerId`` pairs; tables carry them as ``controller`` and
``seed`` columns. Pages pass the charts to ``st.altair_chart``.

Pages import this module by name (``import building_charts``), like ``app_charts``.
"""

from __future__ import annotations

import altair as alt
import pandas as pd
from building_data import LP, ControllerId, controller_ids, controller_label, rows_of


def cost_bars(kpis: pd.DataFrame) -> alt.Chart:
    """Cost / no battery per controller (lower is better; 1 is no battery), baselines and agents apart."""
    ids = controller_ids(kpis)
    frame = kpis[["cost", "saving_fraction_of_lp"]].reset_index(drop=True)
    frame["label"] = [controller_label(c) for c in ids]
    frame["kind"] = ["agent" if c.is_agent else "baseline" for c in ids]
    order = frame.sort_values("cost")["label"].tolist()
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", sort=order, title=None),
            x=alt.X("cost:Q", title="cost / no battery on the held-out months (lower is better)"),
            color=alt.Color("kind:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=[
                alt.Tooltip("label:N", title="controller"),
                alt.Tooltip("cost:Q", format=".4f"),
                alt.Tooltip("saving_fraction_of_lp:Q", title="share of LP saving", format=".3f"),
            ],
        )
        .properties(height=alt.Step(26))
    )


def _time_x() -> alt.X:
    return alt.X("time:T", title=None, axis=alt.Axis(format="%a %d %b %H:%M"))


def site_chart(week: pd.DataFrame) -> alt.LayerChart:
    """Load and PV (kWh, left axis) and the import price ($/kWh, right axis, steps) over a week.

    Args:
        week: one controller's rows of the week (load, PV and price do not depend on the controller).
    """
    energy = week[["time", "load", "pv"]].melt("time", var_name="series", value_name="kWh")
    energy["series"] = energy["series"].map({"load": "load", "pv": "PV"})
    lines = (
        alt.Chart(energy)
        .mark_line(strokeWidth=1.2)
        .encode(
            x=_time_x(),
            y=alt.Y("kWh:Q", title="kWh per hour"),
            color=alt.Color("series:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["time:T", "series:N", alt.Tooltip("kWh:Q", format=".3f")],
        )
    )
    price = (
        alt.Chart(week[["time", "price"]])
        .mark_line(interpolate="step-after", color="#e45756", strokeDash=[4, 2])
        .encode(
            x="time:T",
            y=alt.Y("price:Q", title="price $/kWh", scale=alt.Scale(zero=False)),
            tooltip=["time:T", alt.Tooltip("price:Q", format=".4f")],
        )
    )
    return alt.layer(lines, price).resolve_scale(y="independent").properties(height=220)


def _against_lp(
    week: pd.DataFrame, controller: ControllerId, column: str, title: str, marker: pd.Timestamp | None
) -> alt.Chart:
    lp = ControllerId(LP)
    shown = week[rows_of(week, controller) | rows_of(week, lp)]
    frame = shown[["time", column]].reset_index(drop=True)
    frame["series"] = [controller_label(c) for c in controller_ids(shown)]
    chart = (
        alt.Chart(frame)
        .mark_line(interpolate="step-after" if column == "battery" else "linear", strokeWidth=1.3)
        .encode(
            x=_time_x(),
            y=alt.Y(f"{column}:Q", title=title),
            color=alt.Color("series:N", title=None, legend=alt.Legend(orient="top")),
            strokeDash=alt.StrokeDash("series:N", legend=None),
            tooltip=["time:T", "series:N", alt.Tooltip(f"{column}:Q", format=".3f")],
        )
    )
    if marker is not None:
        rule = (
            alt.Chart(pd.DataFrame({"time": [marker]}))
            .mark_rule(color="grey", strokeDash=[2, 2])
            .encode(x="time:T")
        )
        chart = chart + rule
    return chart.properties(height=200)


def battery_chart(week: pd.DataFrame, controller: ControllerId, marker: pd.Timestamp | None = None) -> alt.Chart:
    """Battery energy per hour (+ charge, - discharge, kWh) of a controller and of the LP optimum."""
    return _against_lp(week, controller, "battery", "battery kWh (+ charge)", marker)


def soc_chart(week: pd.DataFrame, controller: ControllerId, marker: pd.Timestamp | None = None) -> alt.Chart:
    """State of charge after each hour of a controller and of the LP optimum."""
    return _against_lp(week, controller, "soc", "state of charge", marker)


def importance_chart(importance: pd.DataFrame) -> alt.Chart:
    """Per feature group: mean |integrated gradients| and permutation importance, side by side."""
    measures = {"importance": "integrated gradients", "permutation": "permutation"}
    present = [m for m in measures if m in importance]
    frame = importance[["group", *present]].melt("group", var_name="measure", value_name="value")
    frame["measure"] = frame["measure"].map(measures)
    order = importance.sort_values("importance", ascending=False)["group"].tolist()
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("group:N", sort=order, title=None),
            yOffset="measure:N",
            x=alt.X("value:Q", title="mean |effect on the action|"),
            color=alt.Color("measure:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["group:N", "measure:N", alt.Tooltip("value:Q", format=".4f")],
        )
        .properties(height=alt.Step(12))  # per bar: two bars per group
    )


def sensitivity_bars(sensitivity: pd.DataFrame) -> alt.Chart:
    """Per forecast feature: mean |d action / d feature| (bars), the signed mean gradient as a tooltip."""
    order = sensitivity.sort_values("importance", ascending=False)["feature"].tolist()
    return (
        alt.Chart(sensitivity)
        .mark_bar(color="#4c78a8")
        .encode(
            y=alt.Y("feature:N", sort=order, title=None, axis=alt.Axis(labelLimit=240)),
            x=alt.X("importance:Q", title="mean |d action / d forecast|"),
            tooltip=[
                "feature:N",
                alt.Tooltip("importance:Q", format=".4f"),
                alt.Tooltip("mean_gradient:Q", format=".4f"),
            ],
        )
        .properties(height=alt.Step(20))
    )
