"""The Monitor page's pieces: the assets' overview (what is deployed, the latest decision and outcome,
alarms) and one asset's residuals and CUSUM statistics against their thresholds."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd


def overview_frame(assets: list[Any], url: str | None) -> pd.DataFrame:
    """One row per asset: its domain, deployed policy and since when, the latest decision and outcome,
    and the monitor's verdict."""
    from decisions.platform.monitoring import monitor_asset
    from decisions.store import current, decisions_of, outcomes_of

    rows = []
    for asset in assets:
        deployed = current(asset.name, url=url)
        latest = decisions_of(asset.name, 1, url=url)
        realised = outcomes_of(asset.name, url=url)
        verdict = monitor_asset(asset.name, url=url)
        rows.append({
            "asset": asset.name, "domain": asset.kind,
            "deployed": deployed.label if deployed else "nothing",
            "since": deployed.chosen_at if deployed else None,
            "latest decision": str(dict(latest[0].action)) if latest else "",
            "decided at": latest[0].decided_at if latest else None,
            "latest outcome": realised[-1].realised_value if realised else None,
            "alarm": "ALARM" if verdict.open_alarm else "",
            "outcomes monitored": verdict.outcomes,
        })
    return pd.DataFrame(rows)


def statistics_frame(monitor: Any) -> pd.DataFrame:
    """The monitor's series, long: decision number, series (z, the three statistics) and value."""
    n = monitor.outcomes
    frame = pd.DataFrame({"decision": range(1, n + 1), "standardised residual": monitor.z,
                          "mean CUSUM up": monitor.statistics["s_plus"],
                          "mean CUSUM down": monitor.statistics["s_minus"],
                          "spread CUSUM": monitor.statistics["s_scale"]})
    return frame.melt("decision", var_name="series", value_name="value")


def statistics_chart(monitor: Any) -> alt.LayerChart:
    """The CUSUM statistics over the decisions, with each channel's threshold as a dashed rule."""
    frame = statistics_frame(monitor)
    frame = frame[frame["series"] != "standardised residual"]
    lines = alt.Chart(frame).mark_line().encode(
        x=alt.X("decision:Q", title="outcome since the deployment"),
        y=alt.Y("value:Q", title="CUSUM statistic"), color=alt.Color("series:N", title=None))
    rules = pd.DataFrame({"threshold": ["mean threshold", "spread threshold"],
                          "value": [monitor.thresholds["mean"], monitor.thresholds["scale"]]})
    rule = alt.Chart(rules).mark_rule(strokeDash=[4, 4]).encode(y="value:Q", color=alt.Color("threshold:N", title=None))
    return alt.layer(lines, rule).properties(height=260)


def residuals_chart(monitor: Any) -> alt.Chart:
    """The standardised residuals (realised minus expected, in the model's spreads) per decision."""
    frame = statistics_frame(monitor)
    frame = frame[frame["series"] == "standardised residual"]
    return alt.Chart(frame).mark_point(filled=True, size=25).encode(
        x=alt.X("decision:Q", title="outcome since the deployment"),
        y=alt.Y("value:Q", title="residual (spreads)")).properties(height=200)
