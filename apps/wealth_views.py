"""Views of the wealth-planning page: a recorded run read back and its Altair charts (the form: ``wealth_form``).

Pure functions of report tables (no Streamlit calls), so they are testable without running the
page or JAX. Tables are those of ``decisions.finance.wealth.WealthReport.tables()`` (a recorded
run is reopened with ``app_common.load_report``):

- ``comparison``: ``policy, expected_utility, stderr`` (and ``vs_dp`` when the DP was solved);
- ``goals``: ``goal, year, option, cost, utility`` then one probability column per policy;
- ``plan``: ``year, wealth, planner_option, planner_portfolio`` (and ``dp_option, dp_portfolio``);
  -1 means no decision (bankrupt, or the horizon's year for portfolios); portfolio 0 is the
  safest, 14 the riskiest;
- ``wealth_fan``: ``policy, year, mean, p5, p25, p50, p75, p95``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import altair as alt
import app_common
import numpy as np
import pandas as pd

from decisions.finance.wealth import DOMAIN, WealthReport

POLICY_LABELS = {"planner": "MetaRL planner", "dp": "exact DP", "funding_rule": "funding-ratio rule"}
"""Readable policy names, in the order the page lists them."""

POLICY_COLORS = {"MetaRL planner": "#54a24b", "exact DP": "#4c78a8", "funding-ratio rule": "#f58518"}

N_PORTFOLIOS = 15
"""Portfolios on the efficient frontier: 0 safest .. 14 riskiest."""


@dataclass
class RecordedWealthRun:
    """A recorded wealth run as the page shows it: its id and its report's tables and metrics.

    Attributes:
        run_id: the run.
        tables: table name -> table (``WealthReport.tables()``: comparison, goals, plan, wealth_fan).
        metrics: the report's headline figures.
    """

    run_id: int
    tables: dict[str, pd.DataFrame]
    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_report(cls, run_id: int, report: WealthReport) -> RecordedWealthRun:
        """The page's view of a run's reloaded report (no file is read here)."""
        return cls(run_id=run_id, tables=report.tables(), metrics=dict(report.metrics))

    def table(self, name: str) -> pd.DataFrame:
        """One table, empty when the run did not record it."""
        return self.tables.get(name, pd.DataFrame())


def load_run(run_id: int, url: str | None) -> RecordedWealthRun:
    """Reopen a wealth run's report (``app_common.load_report``) for the page.

    Raises:
        RunNotFoundError: no such run.
        InputError: on ``run``: the run is not a wealth run or its saved report is gone.
    """
    report, _ = app_common.load_report(DOMAIN, run_id, url)
    return RecordedWealthRun.from_report(run_id, report)


def policy_label(name: str) -> str:
    """Readable name of a policy (``"funding_rule"`` -> ``"funding-ratio rule"``)."""
    return POLICY_LABELS.get(name, name.replace("_", " "))


# --- headline and comparison --------------------------------------------------------------------


_SHORT_LABELS = {"planner": "planner", "dp": "DP", "funding_rule": "rule"}


def _duration(ms: float) -> str:
    """Milliseconds as ``4.2 ms`` or, from a second up, ``10.3 s``."""
    return f"{ms:,.1f} ms" if ms < 1000.0 else f"{ms / 1000.0:,.1f} s"


def headline(metrics: Mapping[str, float], comparison: pd.DataFrame | None = None) -> list[tuple[str, str, str | None]]:
    """The figures above the report: ``(label, value, delta)`` for ``st.metric``.

    Expected utilities come from the metrics (else from the comparison table); the planner's
    and the rule's deltas are their share of the DP's expected utility when it was solved.
    """
    utilities = {name: metrics[f"expected_utility_{name}"] for name in POLICY_LABELS
                 if f"expected_utility_{name}" in metrics}
    if not utilities and comparison is not None and not comparison.empty:
        utilities = dict(zip(comparison["policy"], comparison["expected_utility"], strict=True))
    ratios = {"planner": metrics.get("planner_vs_dp"), "funding_rule": metrics.get("rule_vs_dp")}
    out: list[tuple[str, str, str | None]] = []
    for name in POLICY_LABELS:
        if name in utilities:
            ratio = ratios.get(name)
            delta = f"{ratio:.1%} of the DP" if ratio is not None else None
            out.append((f"{_SHORT_LABELS[name]} utility", f"{float(utilities[name]):,.2f}", delta))
    if "planner_vs_dp" in metrics:
        out.append(("planner / DP", f"{metrics['planner_vs_dp']:.1%}", None))
    if "plan_ms" in metrics:
        out.append(("planner time", _duration(metrics["plan_ms"]), None))
    if "dp_ms" in metrics:
        out.append(("DP time", _duration(metrics["dp_ms"]), None))
    return out


def _policy_order(names: Sequence[str]) -> list[str]:
    order = {name: i for i, name in enumerate(POLICY_LABELS)}
    return sorted(names, key=lambda n: (order.get(n, len(order)), n))


def comparison_view(comparison: pd.DataFrame) -> pd.DataFrame:
    """The comparison with readable policy names (planner, DP, rule) and a 95% interval.

    Returns:
        ``policy, expected_utility, stderr, ci95_low, ci95_high`` (and ``vs_dp``).
    """
    frame = comparison.copy()
    frame = frame.set_index("policy").loc[_policy_order(list(frame["policy"]))].reset_index()
    frame["ci95_low"] = frame["expected_utility"] - 1.96 * frame["stderr"]
    frame["ci95_high"] = frame["expected_utility"] + 1.96 * frame["stderr"]
    frame["policy"] = frame["policy"].map(policy_label)
    columns = ["policy", "expected_utility", "stderr", "ci95_low", "ci95_high"]
    return frame[columns + (["vs_dp"] if "vs_dp" in frame else [])]


def comparison_chart(comparison: pd.DataFrame) -> alt.LayerChart:
    """Expected utility of each policy as a point with its 95% interval (axis not from zero, to show the gaps).

    Args:
        comparison: ``policy, expected_utility, stderr`` (and ``vs_dp``).

    Returns:
        The layered point + error-bar chart.
    """
    view = comparison_view(comparison)
    labels = list(view["policy"])
    base = alt.Chart(view).encode(y=alt.Y("policy:N", sort=labels, title=None))
    tips = [alt.Tooltip("policy:N"), alt.Tooltip("expected_utility:Q", format=",.3f"),
            alt.Tooltip("stderr:Q", format=",.3f")] + ([alt.Tooltip("vs_dp:Q", format=".2%")] if "vs_dp" in view else [])
    points = base.mark_point(filled=True, size=90).encode(
        x=alt.X("expected_utility:Q", title="expected utility (95% interval)", scale=alt.Scale(zero=False)),
        color=alt.Color("policy:N", sort=labels, legend=None,
                        scale=alt.Scale(domain=labels, range=[POLICY_COLORS.get(lb, "#999999") for lb in labels])),
        tooltip=tips,
    )
    errors = base.mark_errorbar(ticks=True, color="black").encode(x=alt.X("ci95_low:Q", title=None), x2="ci95_high:Q")
    return (errors + points).properties(height=45 * len(view) + 40)


# --- goals ---------------------------------------------------------------------------------------


def policy_columns(goals: pd.DataFrame) -> list[str]:
    """The policy probability columns of a goals table, planner first."""
    fixed = {"goal", "year", "option", "cost", "utility"}
    return _policy_order([c for c in goals.columns if c not in fixed])


def _option_names(goals: pd.DataFrame) -> dict[tuple[int, str], str]:
    """(goal, option label) -> readable name: the dearest option is ``full``, one cheaper one ``partial``."""
    names: dict[tuple[int, str], str] = {}
    for goal, rows in goals[goals["option"] != "not funded"].groupby("goal", sort=False):
        rows = rows.sort_values(["cost", "utility"])
        labels = list(rows["option"])
        for i, label in enumerate(labels):
            if i == len(labels) - 1:
                names[(goal, label)] = "full"
            elif len(labels) == 2:
                names[(goal, label)] = "partial"
            else:
                names[(goal, label)] = f"partial {i + 1}"
    return names


def goal_long(goals: pd.DataFrame) -> pd.DataFrame:
    """Funded options in long form: ``goal, goal_label, policy, option, cost, utility, probability``.

    ``not funded`` rows are dropped, so the options of a goal and policy stack up to the
    probability of funding the goal at all.
    """
    policies = policy_columns(goals)
    names = _option_names(goals)
    funded = goals[goals["option"] != "not funded"].copy()
    funded["goal_label"] = [f"goal {g} (year {y})" for g, y in zip(funded["goal"], funded["year"], strict=True)]
    funded["option"] = [names[(g, o)] for g, o in zip(funded["goal"], funded["option"], strict=True)]
    long = funded.melt(id_vars=["goal", "goal_label", "option", "cost", "utility"], value_vars=policies,
                       var_name="policy", value_name="probability")
    long["policy"] = long["policy"].map(policy_label)
    return long[["goal", "goal_label", "policy", "option", "cost", "utility", "probability"]]


def goal_summary(goals: pd.DataFrame) -> pd.DataFrame:
    """One row per goal: ``goal, year`` and, per policy, the probability of funding it at all.

    That is ``1 - P(not funded)``; bankrupt paths count as not funded.
    """
    policies = policy_columns(goals)
    unfunded = goals[goals["option"] == "not funded"].set_index(["goal", "year"])[policies]
    funded = (1.0 - unfunded).reset_index()
    return funded.rename(columns={p: policy_label(p) for p in policies})


def goal_chart(goals: pd.DataFrame) -> alt.FacetChart:
    """Per goal (one panel each), one bar per policy: probability of funding it at all, stacked by option.

    Args:
        goals: ``goal, year, option, cost, utility, <policy>...``.

    Returns:
        The faceted, stacked bar chart (partial options orange, full funding blue).
    """
    long = goal_long(goals)
    policies = [policy_label(p) for p in policy_columns(goals)]
    goal_order = list(dict.fromkeys(long.sort_values("goal")["goal_label"]))
    options = sorted(long["option"].unique(), key=lambda o: (o == "full", o))
    palette = ["#f58518", "#ffbf79", "#e45756", "#ff9d98"]
    colors = [("#4c78a8" if o == "full" else palette[i % len(palette)]) for i, o in enumerate(options)]
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("policy:N", sort=policies, title=None, axis=alt.Axis(labelAngle=-90, labelOverlap=False)),
            y=alt.Y("sum(probability):Q", title="probability funded", scale=alt.Scale(domain=[0, 1]),
                    axis=alt.Axis(format="%")),
            color=alt.Color("option:N", sort=options, title="option", scale=alt.Scale(domain=options, range=colors),
                            legend=alt.Legend(orient="top")),
            order=alt.Order("option:N", sort="descending"),
            tooltip=["goal_label:N", "policy:N", "option:N", alt.Tooltip("cost:Q", format=",.0f"),
                     alt.Tooltip("utility:Q", format=",.4g"), alt.Tooltip("probability:Q", format=".1%")],
        )
        .properties(width=110, height=240)
        .facet(column=alt.Column("goal_label:N", sort=goal_order, title=None))
    )


# --- wealth fan ----------------------------------------------------------------------------------


def fan_policies(fan: pd.DataFrame) -> list[str]:
    """The policies of a wealth-fan table, planner first."""
    return _policy_order(list(dict.fromkeys(fan["policy"])))


def _goal_rules(goal_years: Sequence[int] | None) -> list[alt.Chart]:
    if not goal_years:
        return []
    years = pd.DataFrame({"year": sorted(set(int(y) for y in goal_years))})
    return [alt.Chart(years).mark_rule(color="gray", strokeDash=[2, 3], opacity=0.6).encode(
        x="year:Q", tooltip=[alt.Tooltip("year:Q", title="goal year")])]


def fan_chart(fan: pd.DataFrame, policy: str = "planner", goal_years: Sequence[int] | None = None) -> alt.LayerChart:
    """Wealth percentile bands of one policy over the years: p5-p95, p25-p75, the median and the mean.

    Args:
        fan: ``policy, year, mean, p5, p25, p50, p75, p95``.
        policy: which policy (``planner``, ``dp``, ``funding_rule``).
        goal_years: years with goals, drawn as dotted rules.

    Returns:
        The layered band chart.
    """
    frame = fan[fan["policy"] == policy]
    color = POLICY_COLORS.get(policy_label(policy), "#4c78a8")
    base = alt.Chart(frame).encode(x=alt.X("year:Q", title="year", axis=alt.Axis(tickMinStep=1)))
    title = "wealth (start of year)"
    outer = base.mark_area(opacity=0.18, color=color).encode(
        y=alt.Y("p5:Q", title=title, axis=alt.Axis(format="~s")), y2="p95:Q"
    )
    inner = base.mark_area(opacity=0.35, color=color).encode(y="p25:Q", y2="p75:Q")
    median = base.mark_line(color=color, point=alt.OverlayMarkDef(color=color)).encode(
        y="p50:Q",
        tooltip=["year:Q"] + [alt.Tooltip(f"{c}:Q", format=",.0f") for c in ("p5", "p25", "p50", "p75", "p95", "mean")],
    )
    mean = base.mark_line(color=color, strokeDash=[4, 3]).encode(y="mean:Q")
    return alt.layer(outer, inner, median, mean, *_goal_rules(goal_years)).properties(
        height=320, title=f"Wealth under the {policy_label(policy)}"
    )


def median_chart(fan: pd.DataFrame, goal_years: Sequence[int] | None = None) -> alt.LayerChart:
    """The median wealth of every policy over the years, one line each.

    Args:
        fan: ``policy, year, mean, p5, p25, p50, p75, p95``.
        goal_years: years with goals, drawn as dotted rules.

    Returns:
        The line chart.
    """
    frame = fan.assign(label=fan["policy"].map(policy_label))
    labels = [policy_label(p) for p in fan_policies(fan)]
    lines = (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("year:Q", title="year", axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("p50:Q", title="median wealth", axis=alt.Axis(format="~s")),
            color=alt.Color("label:N", sort=labels, title=None, legend=alt.Legend(orient="top"),
                            scale=alt.Scale(domain=labels, range=[POLICY_COLORS.get(lb, "#999999") for lb in labels])),
            tooltip=[alt.Tooltip("label:N", title="policy"), "year:Q", alt.Tooltip("p50:Q", format=",.0f"),
                     alt.Tooltip("mean:Q", format=",.0f")],
        )
    )
    return alt.layer(lines, *_goal_rules(goal_years)).properties(height=260)


def wealth_range(fan: pd.DataFrame, margin: float = 2.0) -> tuple[float, float] | None:
    """The wealth span the paths visit (lowest positive p5 / margin .. highest p95 x margin), for the plan maps."""
    low = fan["p5"][fan["p5"] > 0]
    high = fan["p95"][fan["p95"] > 0]
    if low.empty or high.empty:
        return None
    return float(low.min()) / margin, float(high.max()) * margin


# --- the plan ------------------------------------------------------------------------------------


def plan_policies(plan: pd.DataFrame) -> list[str]:
    """Policies whose decisions the plan table holds: ``planner`` and ``dp`` when the DP was solved."""
    return [p for p in ("planner", "dp") if f"{p}_portfolio" in plan and f"{p}_option" in plan]


def _edges(wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper edge of each (sorted, positive) wealth node: geometric midpoints between nodes."""
    if len(wealth) == 1:
        return wealth / 1.1, wealth * 1.1
    mid = np.sqrt(wealth[1:] * wealth[:-1])
    low = np.concatenate([[wealth[0] ** 2 / mid[0]], mid])
    high = np.concatenate([mid, [wealth[-1] ** 2 / mid[-1]]])
    return low, high


def plan_long(plan: pd.DataFrame, decision: str, span: tuple[float, float] | None = None) -> pd.DataFrame:
    """The plan's ``decision`` (``portfolio`` or ``option``) per policy in long form, for heat maps.

    Nodes at wealth 0 are dropped (log axis), as are cells without a decision (-1: bankrupt, or
    no portfolio at the horizon). ``span`` keeps the nodes inside a wealth range.

    Returns:
        ``policy, year, wealth, wealth_low, wealth_high, value``.
    """
    columns = ["policy", "year", "wealth", "wealth_low", "wealth_high", "value"]
    nodes = np.sort(plan.loc[plan["wealth"] > 0, "wealth"].unique())
    if len(nodes) == 0:
        return pd.DataFrame(columns=columns)
    low, high = _edges(nodes)
    edges = pd.DataFrame({"wealth": nodes, "wealth_low": low, "wealth_high": high})
    frames = []
    for policy in plan_policies(plan):
        part = plan.loc[plan["wealth"] > 0, ["year", "wealth", f"{policy}_{decision}"]].rename(
            columns={f"{policy}_{decision}": "value"})
        part = part[part["value"] >= 0].merge(edges, on="wealth", how="left")
        frames.append(part.assign(policy=policy_label(policy)))
    long = pd.concat(frames, ignore_index=True)[columns]
    if span is not None:
        long = long[(long["wealth_high"] >= span[0]) & (long["wealth_low"] <= span[1])]
    return long.reset_index(drop=True)


def plan_heatmaps(
    plan: pd.DataFrame, decision: str = "portfolio", span: tuple[float, float] | None = None,
    years: Sequence[int] | None = None,
) -> alt.HConcatChart:
    """Heat maps year x wealth (log axis) of the planner's decision, beside the DP's when it was solved.

    Args:
        plan: ``year, wealth, planner_option, planner_portfolio`` (and ``dp_option, dp_portfolio``).
        decision: ``portfolio`` (0 safest .. 14 riskiest) or ``option`` (index into the year's
            goal options, ranked by cost; 0 funds nothing).
        span: wealth range to show (e.g. ``wealth_range(fan)``); None shows every node.
        years: only these years (e.g. the goal years for the option map); None shows all.

    Returns:
        One heat map per policy, side by side, sharing the colour scale.
    """
    if decision not in ("portfolio", "option"):
        raise ValueError(f"decision must be 'portfolio' or 'option', got {decision!r}")
    long = plan_long(plan, decision, span)
    if years is not None:
        long = long[long["year"].isin(list(years))]
    if decision == "portfolio":
        color = alt.Color("value:Q", title="portfolio (0 safest, 14 riskiest)", legend=alt.Legend(orient="top"),
                          scale=alt.Scale(scheme="viridis", domain=[0, N_PORTFOLIOS - 1]))
    else:
        color = alt.Color("value:O", title="goal option (0 funds nothing)", legend=alt.Legend(orient="top"),
                          scale=alt.Scale(scheme="tealblues"))
    shown = sorted(long["year"].unique()) if not long.empty else [0]
    x_scale = alt.Scale(domain=[float(shown[0]) - 0.5, float(shown[-1]) + 0.5], nice=False, zero=False)
    charts = []
    for label in [policy_label(p) for p in plan_policies(plan)]:
        charts.append(
            alt.Chart(long[long["policy"] == label], title=label)
            .transform_calculate(year_low="datum.year - 0.5", year_high="datum.year + 0.5")
            .mark_rect()
            .encode(
                x=alt.X("year_low:Q", title="year", scale=x_scale, axis=alt.Axis(tickMinStep=1)),
                x2="year_high:Q",
                y=alt.Y("wealth_low:Q", title="wealth", scale=alt.Scale(type="log", nice=False),
                        axis=alt.Axis(format="~s")),
                y2="wealth_high:Q",
                color=color,
                tooltip=["year:Q", alt.Tooltip("wealth:Q", format=",.0f"), alt.Tooltip("value:Q", title=decision)],
            )
            .properties(width=380, height=320)
        )
    return alt.hconcat(*charts)
