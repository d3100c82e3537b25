"""Views of the pharma page: table shaping and Altair charts of a recorded run's report.

Pure functions of report tables (no Streamlit calls), so they are testable without running the
page. Tables are those of ``decisions.health.pharma.PharmaReport`` (a recorded run is reopened
with ``app_common.load_report``).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from decisions.health.pharma import PharmaReport, design_space_axes, ordered_methods

METHOD_LABELS = {"snapo": "SNAPO", "best_constant": "best constant", "nominal": "nominal (flat profiles)"}

AXIS_DEFAULTS: dict[str, tuple[float, float]] = {
    "reactor_temperature": (60.0, 90.0),
    "reaction_time": (2.0, 6.0),
    "cooling_end_temperature": (0.0, 30.0),
    "cooling_time": (3.0, 9.0),
    "wash_ratio": (0.0, 5.0),
    "dryer_temperature": (30.0, 80.0),
    "dryer_time": (5.0, 15.0),
}
"""Default design-space range of each CPP (about the defaults' operating ranges)."""


def method_label(name: str) -> str:
    """Readable name of an operating point (``"best_constant"`` -> ``"best constant"``)."""
    return METHOD_LABELS.get(name, name.replace("_", " "))


def spec_text(low: float, high: float) -> str:
    """A specification as text: ``>= 99.5``, ``<= 0.15``, ``80 - 250`` or empty."""
    has_low, has_high = pd.notna(low), pd.notna(high)
    if has_low and has_high:
        return f"{low:g} – {high:g}"
    if has_low:
        return f"≥ {low:g}"
    if has_high:
        return f"≤ {high:g}"
    return ""


def cqa_view(cqa: pd.DataFrame) -> pd.DataFrame:
    """The CQA table side by side per operating point, with pass/fail against the specifications.

    Args:
        cqa: the report's long CQA table (``method, cqa, unit, low, high, nominal, meets, mean``).

    Returns:
        One row per CQA: ``cqa, unit, specification`` and, per method, ``<method> nominal``
        (at the nominal constants), ``<method> mean`` (over fresh draws) and ``<method> check``
        (``pass`` / ``FAIL``, the hard check at the nominal constants; yield has no limit).
    """
    first = cqa[cqa["method"] == ordered_methods(cqa["method"])[0]]
    view = pd.DataFrame(
        {
            "cqa": first["cqa"].to_numpy(),
            "unit": first["unit"].to_numpy(),
            "specification": [spec_text(lo, hi) for lo, hi in zip(first["low"], first["high"], strict=True)],
        }
    )
    for method in ordered_methods(cqa["method"]):
        rows = cqa[cqa["method"] == method].set_index("cqa").loc[view["cqa"]]
        label = method_label(method)
        view[f"{label} nominal"] = rows["nominal"].to_numpy(float)
        view[f"{label} mean"] = rows["mean"].to_numpy(float)
        limited = (rows["low"].notna() | rows["high"].notna()).to_numpy()
        passed = rows["meets"].astype(bool).to_numpy()
        view[f"{label} check"] = np.where(limited, np.where(passed, "pass", "FAIL"), "")
    return view


def comparison_view(comparison: pd.DataFrame) -> pd.DataFrame:
    """The comparison table with readable method names, in display order."""
    frame = comparison.loc[ordered_methods(comparison.index)].reset_index()
    frame["method"] = frame["method"].map(method_label)
    return frame


def temperature_chart(trajectories: pd.DataFrame) -> alt.LayerChart:
    """Reactor, crystalliser and dryer temperatures on one batch clock, one line per operating point.

    Args:
        trajectories: the report's long trajectory table.

    Returns:
        Lines over ``batch_time_h`` with a rule and a label where each unit starts.
    """
    return variable_chart(trajectories, "temperature", title="temperature, C")


def variable_chart(trajectories: pd.DataFrame, variable: str, *, title: str | None = None) -> alt.LayerChart:
    """One trajectory variable over the batch, one line per operating point (broken between units).

    Args:
        trajectories: the report's long trajectory table.
        variable: e.g. ``temperature``, ``impurity``, ``d50``, ``residual_solvent``.
        title: y-axis title (default the variable).

    Returns:
        Lines over ``batch_time_h`` with a rule and a label where each unit starts.
    """
    rows = trajectories[trajectories["variable"] == variable].copy()
    rows["method"] = rows["method"].map(method_label)
    order = [method_label(m) for m in ordered_methods(trajectories["method"])]
    lines = (
        alt.Chart(rows)
        .mark_line()
        .encode(
            x=alt.X("batch_time_h:Q", title="batch time, h"),
            y=alt.Y("value:Q", title=title or variable.replace("_", " "), scale=alt.Scale(zero=False)),
            color=alt.Color("method:N", title=None, sort=order, legend=alt.Legend(orient="top")),
            detail="unit:N",
            tooltip=["method:N", "unit:N", alt.Tooltip("time_h:Q", format=".2f"), alt.Tooltip("value:Q", format=".4g")],
        )
    )
    starts = unit_starts(trajectories)
    starts = starts[starts["unit"].isin(set(rows["unit"]))]
    rules = alt.Chart(starts).mark_rule(color="gray", strokeDash=[3, 3]).encode(x="batch_time_h:Q")
    labels = (
        alt.Chart(starts)
        .mark_text(align="left", dx=4, dy=8, color="gray", baseline="top")
        .encode(x="batch_time_h:Q", y=alt.value(0), text="unit:N")
    )
    return alt.layer(lines, rules, labels).properties(height=280)


def unit_starts(trajectories: pd.DataFrame) -> pd.DataFrame:
    """Where each unit starts on the batch clock (of the first operating point): ``unit, batch_time_h``."""
    first = trajectories[trajectories["method"] == ordered_methods(trajectories["method"])[0]]
    starts = first.groupby("unit", sort=False)["batch_time_h"].min().reset_index()
    return starts.sort_values("batch_time_h", ignore_index=True)


def trajectory_variables(trajectories: pd.DataFrame) -> list[str]:
    """The variables of the trajectory table other than the temperature, in table order."""
    return [v for v in dict.fromkeys(trajectories["variable"]) if v != "temperature"]


def yield_bars(comparison: pd.DataFrame, target: float) -> alt.Chart:
    """Expected yield of each operating point, coloured by whether its compliance reaches the target.

    Args:
        comparison: index ``method`` with ``mean_yield`` and ``compliance``.
        target: the compliance target.

    Returns:
        A horizontal bar chart.
    """
    frame = comparison_view(comparison)
    frame["meets target"] = np.where(frame["compliance"] >= target, f"compliance ≥ {target:.0%}", "below target")
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("method:N", sort=list(frame["method"]), title=None),
            x=alt.X("mean_yield:Q", title="expected yield on fresh draws, %"),
            color=alt.Color(
                "meets target:N",
                title=None,
                scale=alt.Scale(domain=[f"compliance ≥ {target:.0%}", "below target"], range=["#4c78a8", "#e45756"]),
                legend=alt.Legend(orient="top"),
            ),
            tooltip=["method:N", alt.Tooltip("mean_yield:Q", format=".2f"), alt.Tooltip("compliance:Q", format=".1%")],
        )
        .properties(height=90 + 45 * len(frame))  # the height holds the legend and the axis too
    )


def sensitivity_heatmap(sensitivity: pd.DataFrame) -> alt.LayerChart:
    """The CQA x CPP heat map: colour is each entry over its row's largest magnitude, text the raw value.

    Args:
        sensitivity: ``cqa, cpp, value, scaled, cross_unit, structural_zero``.

    Returns:
        Rectangles with the values written in them.
    """
    rows = list(dict.fromkeys(sensitivity["cqa"]))
    cols = list(dict.fromkeys(sensitivity["cpp"]))
    frame = sensitivity.assign(label=[f"{v:.3g}" for v in sensitivity["value"]])
    base = alt.Chart(frame).encode(
        x=alt.X("cpp:N", sort=cols, title="CPP", axis=alt.Axis(labelAngle=-30, labelLimit=220, labelOverlap=False)),
        y=alt.Y("cqa:N", sort=rows, title="CQA"),
    )
    cells = base.mark_rect().encode(
        color=alt.Color(
            "scaled:Q",
            title="d CQA / d CPP (row-scaled)",
            scale=alt.Scale(scheme="redblue", domain=[-1, 1], reverse=True),
        ),
        tooltip=[
            "cqa:N", "cpp:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("scaled:Q", format=".2f"),
            "cross_unit:N", "structural_zero:N",
        ],
    )
    text = base.mark_text(fontSize=11).encode(
        text="label:N",
        color=alt.condition("abs(datum.scaled) > 0.6", alt.value("white"), alt.value("black")),
    )
    return alt.layer(cells, text).properties(height=40 * len(rows) + 120)  # room for the slanted labels


def design_space_chart(design_space: pd.DataFrame, comparison: pd.DataFrame, target: float) -> alt.LayerChart:
    """The probability of meeting every specification over two CPPs, with the operating points.

    Args:
        design_space: columns ``<cpp_x>, <cpp_y>, probability``.
        comparison: index ``method`` with the CPP columns (the points marked).
        target: the compliance target; cells reaching it are outlined.

    Returns:
        A heat map with outlined cells and a marker per operating point.
    """
    x_name, y_name = design_space_axes(design_space)
    frame = design_space.rename(columns={x_name: "x", y_name: "y"})
    frame = frame.assign(**_cell_edges(frame["x"], "x"), **_cell_edges(frame["y"], "y"))
    frame["meets"] = frame["probability"] >= target
    x_title, y_title = x_name.replace("_", " "), y_name.replace("_", " ")
    base = alt.Chart(frame).encode(
        x=alt.X("x_lo:Q", title=x_title, scale=alt.Scale(zero=False, nice=False)),
        x2="x_hi:Q",
        y=alt.Y("y_lo:Q", title=y_title, scale=alt.Scale(zero=False, nice=False)),
        y2="y_hi:Q",
    )
    cells = base.mark_rect().encode(
        color=alt.Color("probability:Q", title="P(all specs met)", scale=alt.Scale(scheme="viridis", domain=[0, 1])),
        tooltip=[
            alt.Tooltip("x:Q", title=x_title, format=".4g"),
            alt.Tooltip("y:Q", title=y_title, format=".4g"),
            alt.Tooltip("probability:Q", format=".1%"),
        ],
    )
    outline = (
        alt.Chart(frame[frame["meets"]])
        .mark_rect(fillOpacity=0, stroke="white", strokeWidth=1)
        .encode(x="x_lo:Q", x2="x_hi:Q", y="y_lo:Q", y2="y_hi:Q")
    )
    points = comparison_view(comparison)[["method", x_name, y_name]].rename(columns={x_name: "x", y_name: "y"})
    markers = (
        alt.Chart(points)
        .mark_point(filled=True, size=140, color="red")
        .encode(
            x="x:Q",
            y="y:Q",
            shape=alt.Shape("method:N", title="operating point", legend=alt.Legend(orient="top")),
            tooltip=["method:N", alt.Tooltip("x:Q", title=x_title), alt.Tooltip("y:Q", title=y_title)],
        )
    )
    return alt.layer(cells, outline, markers).properties(height=380)


def _cell_edges(values: pd.Series, axis: str) -> dict[str, Any]:
    """Lower and upper edges of the grid cell of each value (half a grid step either side)."""
    grid = np.unique(values.to_numpy(float))
    half = 0.5 * (float(np.min(np.diff(grid))) if len(grid) > 1 else max(abs(float(grid[0])) * 0.05, 0.5))
    return {f"{axis}_lo": values - half, f"{axis}_hi": values + half}


def headline(report: PharmaReport) -> list[tuple[str, str, str | None]]:
    """The headline figures as ``(label, value, delta)`` for ``st.metric``, those the run has."""
    metrics, out = report.metrics, []
    for method in ordered_methods(report.comparison.index):
        row = report.comparison.loc[method]
        delta = None
        if method == "snapo" and "yield_gain" in metrics:
            delta = f"{metrics['yield_gain']:+.2f} pts"
        out.append((f"{method_label(method)} yield", f"{row['mean_yield']:.2f} %", delta))
        out.append((f"{method_label(method)} compliance", f"{row['compliance']:.1%}", None))
    if "sens_ms" in metrics:
        count = int(metrics.get("n_sensitivities", 0))
        out.append((f"{count} sensitivities in", f"{metrics['sens_ms']:.1f} ms", None))
    return out
