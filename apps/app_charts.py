"""Altair chart builders for the operator app: pure functions of report tables, no Streamlit calls.

Each builder takes a tidy table from a report (see
``decisions.energy.gas_storage.GasStorageReport``) and returns an
Altair chart; pages pass it to ``st.altair_chart``. Optional columns (the
SNAPO ones) are drawn when present.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

_METHOD_LABELS = {
    "snapo": "SNAPO",
    "intrinsic_lp": "intrinsic (LP)",
    "rolling_intrinsic": "rolling intrinsic",
    "lsmc": "LSMC",
    "do_nothing": "do nothing",
}


def method_label(name: str) -> str:
    """Readable name of a method (``"rolling_intrinsic"`` -> ``"rolling intrinsic"``)."""
    return _METHOD_LABELS.get(name, name.replace("_", " "))


def _long(frame: pd.DataFrame, x: str, series: dict[str, str]) -> pd.DataFrame:
    """Melt the columns of ``series`` (column -> label) that ``frame`` has into (x, series, value) rows."""
    present = {column: label for column, label in series.items() if column in frame}
    long = frame[[x, *present]].melt(id_vars=x, var_name="series", value_name="value")
    long["series"] = long["series"].map(present)
    return long


def value_bars(comparison: pd.DataFrame) -> alt.LayerChart:
    """Mean value of each method as a bar, with its 95% confidence interval as an error bar.

    Args:
        comparison: One row per method with ``mean``, ``ci95_low``, ``ci95_high``;
            the method is the index or a ``method`` column.

    Returns:
        The layered bar + error-bar chart.
    """
    frame = comparison.reset_index() if "method" not in comparison else comparison.copy()
    frame["label"] = frame["method"].map(method_label)
    order = frame.sort_values("mean", ascending=False)["label"].tolist()
    base = alt.Chart(frame).encode(y=alt.Y("label:N", sort=order, title=None))
    bars = base.mark_bar(color="#4c78a8").encode(
        x=alt.X("mean:Q", title="value (mean over evaluation paths)"),
        tooltip=[
            alt.Tooltip("label:N", title="method"),
            alt.Tooltip("mean:Q", format=",.4~f"),
            alt.Tooltip("ci95_low:Q", format=",.4~f"),
            alt.Tooltip("ci95_high:Q", format=",.4~f"),
        ],
    )
    errors = base.mark_errorbar(color="black", ticks=True).encode(
        x=alt.X("ci95_low:Q", title="value (mean over evaluation paths)"), x2="ci95_high:Q"
    )
    return (bars + errors).properties(height=max(120, 40 * len(frame)))


def schedule_chart(schedule: pd.DataFrame) -> alt.LayerChart:
    """Inventory (LP intrinsic, SNAPO mean with its p10-p90 band) against the forward price over time.

    Args:
        schedule: One row per day with ``date``, ``forward``, ``lp_inventory`` and
            optionally ``snapo_inventory``, ``snapo_inventory_p10``/``p90``, ``spot_mean``.

    Returns:
        Inventory on the left axis, prices on the right axis.
    """
    inventory = _long(
        schedule, "date", {"lp_inventory": "LP intrinsic inventory", "snapo_inventory": "SNAPO inventory (mean)"}
    )
    layers = []
    if {"snapo_inventory_p10", "snapo_inventory_p90"} <= set(schedule):
        layers.append(
            alt.Chart(schedule)
            .mark_area(opacity=0.2, color="#4c78a8")
            .encode(
                x="date:T",
                y=alt.Y("snapo_inventory_p10:Q", title="inventory"),
                y2="snapo_inventory_p90:Q",
            )
        )
    layers.append(
        alt.Chart(inventory)
        .mark_line()
        .encode(
            x=alt.X("date:T", title=None),
            y=alt.Y("value:Q", title="inventory"),
            color=alt.Color("series:N", title="inventory", legend=alt.Legend(orient="top")),
        )
    )
    prices = _long(schedule, "date", {"forward": "forward", "spot_mean": "spot (mean of paths)"})
    price_chart = (
        alt.Chart(prices)
        .mark_line(strokeDash=[4, 2], strokeWidth=1)
        .encode(
            x="date:T",
            y=alt.Y("value:Q", title="price", scale=alt.Scale(zero=False)),
            color=alt.Color(
                "series:N", title="price", scale=alt.Scale(scheme="oranges"), legend=alt.Legend(orient="top")
            ),
        )
    )
    return alt.layer(alt.layer(*layers), price_chart).resolve_scale(y="independent", color="independent")


def moves_chart(schedule: pd.DataFrame) -> alt.Chart:
    """Daily net injection (positive) or withdrawal (negative): LP intrinsic and SNAPO mean.

    Args:
        schedule: One row per day with ``date``, ``lp_net_injection`` and optionally
            ``snapo_net_injection``.

    Returns:
        A line chart of the moves.
    """
    moves = _long(
        schedule, "date", {"lp_net_injection": "LP intrinsic", "snapo_net_injection": "SNAPO (mean)"}
    )
    return (
        alt.Chart(moves)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("date:T", title=None),
            y=alt.Y("value:Q", title="net injection per day"),
            color=alt.Color("series:N", title=None, legend=alt.Legend(orient="top")),
        )
        .properties(height=220)
    )


def sensitivity_chart(curve_sensitivity: pd.DataFrame) -> alt.Chart:
    """Sensitivity of the value to each day's forward price, dV/dF_t: SNAPO against the LP envelope.

    Args:
        curve_sensitivity: One row per day with ``date``, ``lp_dV_dF`` and optionally
            ``snapo_dV_dF`` (decisions held) and ``snapo_dV_dF_full`` (policy reacts).

    Returns:
        A line chart, one line per estimate.
    """
    long = _long(
        curve_sensitivity,
        "date",
        {
            "lp_dV_dF": "LP intrinsic (envelope theorem)",
            "snapo_dV_dF": "SNAPO (decisions held)",
            "snapo_dV_dF_full": "SNAPO (policy reacts)",
        },
    )
    return (
        alt.Chart(long)
        .mark_line(strokeWidth=1.2)
        .encode(
            x=alt.X("date:T", title=None),
            y=alt.Y("value:Q", title="dV / dF_t"),
            color=alt.Color("series:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["date:T", "series:N", alt.Tooltip("value:Q", format=",.4~f")],
        )
        .properties(height=260)
    )


def training_chart(training_curve: pd.DataFrame) -> alt.Chart:
    """SNAPO training objective per logged step.

    Args:
        training_curve: ``step`` and ``value`` columns (``grad_norm``, ``temperature`` shown as tooltips).

    Returns:
        A line chart of the objective.
    """
    tooltips = [column for column in ("step", "value", "grad_norm", "temperature") if column in training_curve]
    return (
        alt.Chart(training_curve)
        .mark_line(point=len(training_curve) <= 60)
        .encode(
            x=alt.X("step:Q", title="training step"),
            y=alt.Y("value:Q", title="smoothed objective", scale=alt.Scale(zero=False)),
            tooltip=tooltips,
        )
        .properties(height=220)
    )
