"""Views of the Split learning page on devices: chosen splits beside battery and CPU, dropouts, fates, energy.

Pure functions of report tables (no Streamlit calls), like :mod:`splitfl_views`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd
from splitfl_views import (
    MEAN_OF_SEEDS,
    TIER_ORDER,
    colour_encoding,
    fedavg,
    labels,
    of_seed,
    strategy_label,
    tiers,
)

FATES = ("trained", "timed_out", "refused", "battery_out", "missed", "offline")
"""What became of a client in a round (``clients.csv``'s ``fate``), best first."""
FATE_LABELS = {
    "trained": "trained",
    "timed_out": "timed out (straggler)",
    "refused": "refused (memory)",
    "battery_out": "battery ran out",
    "missed": "missed (not chosen)",
    "offline": "offline (battery reserve)",
}
FATE_COLOURS = ("#54a24b", "#f58518", "#e45756", "#b279a2", "#9d9d9d", "#4c78a8")
DEVICE_PANELS = (
    ("split", "split (client-side layers)"),
    ("battery", "battery share"),
    ("cpu", "CPU share available"),
)
"""``(column, axis title)`` of the device chart's panels."""


def device_by_tier(rounds: pd.DataFrame, strategy: str, *, seed: int | None = MEAN_OF_SEEDS) -> pd.DataFrame:
    """A strategy's mean split, battery share, CPU share and energy of each tier's clients, per round.

    Args:
        rounds: the report's ``rounds`` table (``split_<tier>``, ``battery_<tier>``, ``cpu_<tier>``,
            ``energy_j_<tier>``).
        strategy: the strategy.
        seed: one seed, or ``MEAN_OF_SEEDS``.

    Returns:
        ``round, tier, split, battery, cpu, energy_j``: one row per round and tier.
    """
    columns = ["round", "tier", "split", "battery", "cpu", "energy_j"]
    rows = of_seed(rounds, seed)
    rows = rows[rows["strategy"] == strategy]
    parts = []
    for tier in tiers(rounds):
        cols = {f"{q}_{tier}": q for q in ("split", "battery", "cpu", "energy_j") if f"{q}_{tier}" in rows}
        part = rows[["round", *cols]].rename(columns=cols).groupby("round").mean().reset_index()
        parts.append(part.assign(tier=tier))
    if not parts:
        return pd.DataFrame(columns=columns)
    out = pd.concat(parts, ignore_index=True).reindex(columns=columns)
    return out.sort_values(["round"], kind="stable", ignore_index=True)


def device_by_client(clients: pd.DataFrame, strategy: str) -> pd.DataFrame:
    """A strategy's per-client rows (first seed): round, client, tier, split, fate, battery, CPU, energy.

    Args:
        clients: the report's ``clients`` table.
        strategy: the strategy.

    Returns:
        The rows with a ``device`` label (``"weak #0"``), rounds ascending.
    """
    columns = ["round", "client", "device", "tier", "split", "fate", "battery", "cpu", "energy_j"]
    if clients.empty or "strategy" not in clients:
        return pd.DataFrame(columns=columns)
    rows = clients[clients["strategy"] == strategy].copy()
    rows["device"] = [f"{t} #{c}" for t, c in zip(rows["tier"], rows["client"], strict=True)]
    return rows.reindex(columns=columns).sort_values(["round", "client"], ignore_index=True)


def device_chart(frame: pd.DataFrame, *, per_client: bool = False, height: int = 150) -> alt.VConcatChart:
    """The chosen split above the devices' battery and CPU share, per round, one line per tier (or client).

    Args:
        frame: ``device_by_tier``'s table, or ``device_by_client``'s with ``per_client``.
        per_client: one line per client (coloured by its tier), points shaped by the client's fate.
        height: each panel's height in pixels.

    Returns:
        Three panels (``DEVICE_PANELS``) sharing the round axis.
    """
    order = [t for t in TIER_ORDER if t in set(frame["tier"])] + [
        t for t in dict.fromkeys(frame["tier"]) if t not in TIER_ORDER]
    colour = alt.Color("tier:N", title="tier", sort=order, legend=alt.Legend(orient="top"))
    tooltip = ["round:Q", "tier:N", alt.Tooltip("split:Q", format=".2f"), alt.Tooltip("battery:Q", format=".1%"),
               alt.Tooltip("cpu:Q", title="CPU share", format=".1%"), alt.Tooltip("energy_j:Q", format=",.2f")]
    if per_client:
        tooltip = ["device:N", "fate:N", *tooltip]
    panels = []
    for column, title in DEVICE_PANELS:
        y_scale = alt.Scale(domain=[0, 1]) if column in ("battery", "cpu") else alt.Scale(zero=False)
        y_axis = alt.Axis(format="%") if column in ("battery", "cpu") else alt.Axis(tickMinStep=1)
        base = alt.Chart(frame).encode(
            x=alt.X("round:Q", title="round", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y(f"{column}:Q", title=title, scale=y_scale, axis=y_axis),
            color=colour, tooltip=tooltip,
            detail="device:N" if per_client else "tier:N",
        )
        if per_client and column == "split":
            layer = alt.layer(
                base.mark_line(opacity=0.5, interpolate="step-after"),
                base.mark_point(filled=True, size=40).encode(
                    shape=alt.Shape("fate:N", sort=list(FATES), title="fate", legend=alt.Legend(orient="top"))),
            )
            panels.append(layer.properties(height=height))
        else:
            mark = base.mark_line(interpolate="step-after" if column == "split" else "linear",
                                  opacity=0.6 if per_client else 1.0, point=not per_client)
            panels.append(mark.properties(height=height))
    return alt.vconcat(*panels).resolve_scale(color="shared")


def dropout_chart(curve: pd.DataFrame, *, palette: Mapping[str, str] | None = None,
                  height: int = 260) -> alt.Chart:
    """Clients that did not train in each round (any cause), one line per strategy.

    Args:
        curve: ``curves``' table.
        palette: label -> colour (``colours``).
        height: the chart's height in pixels.
    """
    return alt.Chart(curve).mark_line(point=True).encode(
        x=alt.X("round:Q", title="round", axis=alt.Axis(tickMinStep=1)),
        y=alt.Y("dropouts:Q", title="clients not trained"),
        color=colour_encoding(curve, palette),
        strokeDash=alt.StrokeDash("kind:N", legend=None,
                                  scale=alt.Scale(domain=["agent", "baseline"], range=[[1, 0], [5, 3]])),
        detail="strategy:N",
        tooltip=[alt.Tooltip("label:N", title="strategy"), "round:Q", alt.Tooltip("dropouts:Q", format=".1f"),
                 alt.Tooltip("participants:Q", format=".1f")],
    ).properties(height=height)


def fate_counts(clients: pd.DataFrame, strategies: Sequence[str],
                names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """How many client-rounds of each strategy ended in each fate (first seed), with their share.

    Args:
        clients: the report's ``clients`` table.
        strategies: which strategies, in display order.
        names: strategy -> label (default ``strategy_label``).

    Returns:
        ``strategy, label, fate, count, share``: every fate of ``FATES`` for every strategy present
        (zero counts kept), in that order.
    """
    columns = ["strategy", "label", "fate", "count", "share"]
    if clients.empty or "strategy" not in clients:
        return pd.DataFrame(columns=columns)
    rows = clients[clients["strategy"].isin(list(strategies))]
    present = [s for s in strategies if s in set(rows["strategy"])]
    fates = [*FATES, *sorted(set(rows["fate"]) - set(FATES))]
    counts = rows.groupby(["strategy", "fate"]).size()
    top = fedavg([str(s) for s in clients["strategy"].unique()])
    out = []
    for strategy in present:
        total = int(counts.loc[strategy].sum())
        for fate in fates:
            n = int(counts.get((strategy, fate), 0))
            out.append({"strategy": strategy, "label": (names or {}).get(strategy) or strategy_label(strategy, top),
                        "fate": fate, "count": n, "share": n / total if total else 0.0})
    return pd.DataFrame(out, columns=columns)


def fate_chart(counts: pd.DataFrame) -> alt.Chart:
    """Each strategy's client-rounds by fate as one bar stacked to 100%."""
    order = list(dict.fromkeys(counts["label"]))
    fates = list(dict.fromkeys(counts["fate"]))
    colours_ = [FATE_COLOURS[FATES.index(f)] if f in FATES else "#7f7f7f" for f in fates]
    return alt.Chart(counts).mark_bar().encode(
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=200)),
        x=alt.X("share:Q", title="share of client-rounds (first seed)", axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("fate:N", sort=fates, title=None, scale=alt.Scale(domain=fates, range=colours_),
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=0, labelExpr=_fate_label_expr())),
        order=alt.Order("fate_order:Q"),
        tooltip=[alt.Tooltip("label:N", title="strategy"), "fate:N", "count:Q", alt.Tooltip("share:Q", format=".1%")],
    ).transform_calculate(fate_order=f"indexof({fates!r}, datum.fate)").properties(height=alt.Step(30))


def _fate_label_expr() -> str:
    """A Vega expression naming each fate in words in the legend."""
    cases = " : ".join(f"datum.label == '{k}' ? '{v}'" for k, v in FATE_LABELS.items())
    return f"{cases} : datum.label"


def energy_frame(summary: pd.DataFrame, strategies: Sequence[str],
                 names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Mean energy per client and round of each tier, per strategy (``energy_j_per_round_<tier>``).

    Args:
        summary: the report's ``summary`` table.
        strategies: which strategies, in display order.
        names: strategy -> label (default ``labels(summary)``).

    Returns:
        ``strategy, label, tier, energy_j``.
    """
    names = dict(names or labels(summary))
    prefix = "energy_j_per_round_"
    by = summary.set_index("strategy")
    rows = [{"strategy": s, "label": names.get(s, s), "tier": tier, "energy_j": float(by.loc[s, prefix + tier])}
            for s in strategies if s in by.index for tier in tiers(summary, prefix)]
    return pd.DataFrame(rows, columns=["strategy", "label", "tier", "energy_j"])


def energy_chart(energy: pd.DataFrame, *, height: int = 300) -> alt.Chart:
    """Grouped bars: each strategy's mean energy per client-round, one bar per tier."""
    order = list(dict.fromkeys(energy["label"]))
    tier_order = [t for t in TIER_ORDER if t in set(energy["tier"])] + [
        t for t in dict.fromkeys(energy["tier"]) if t not in TIER_ORDER]
    return alt.Chart(energy).mark_bar().encode(
        x=alt.X("label:N", sort=order, title=None, axis=alt.Axis(labelAngle=-30, labelLimit=200)),
        xOffset=alt.XOffset("tier:N", sort=tier_order),
        y=alt.Y("energy_j:Q", title="energy per client and round (J)"),
        color=alt.Color("tier:N", sort=tier_order, title="tier", legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("label:N", title="strategy"), "tier:N", alt.Tooltip("energy_j:Q", format=",.3f")],
    ).properties(height=height)
