"""Views of the Utility weights page: table shaping and Altair charts of a recorded run's report.

Pure functions of report tables (no Streamlit calls), so they are testable without running the
page. Tables are those of ``decisions.recsys.utility.UtilityReport`` (a recorded run is reopened
with ``app_common.load_report``):

- ``frontier_chart``: engagement against revenue of every method's lambda sweep, production as a
  star, a tooltip on every point (weights, and the learnt points' DR estimates with intervals);
- ``learnt_points``: the learnt operating points with their off-policy (DR) estimates;
- ``operating_points`` / ``deployment``: what the operator can deploy, and what is recorded;
- ``segment_view`` / ``segment_chart`` / ``segment_weights_chart``: what the policy changes per segment;
- ``estimator_view`` / ``estimator_chart``: each estimator against the exact value;
- ``drift_chart``: the drifting-preferences scenario per day;
- ``obd_chart``: the real click-versus-item-value front on the Open Bandit sample.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import altair as alt
import app_common
import numpy as np
import pandas as pd

from decisions.recsys.utility.report import METHOD_LABELS, UtilityReport, is_estimated

OBJECTIVES = ("engagement", "revenue")
"""The two objectives the front trades (the ``objective`` column of the off-policy tables)."""
OUTCOMES = ("engagement", "revenue", "success", "hides")
"""The exact outcomes the front and the segments report."""
WEIGHTS = ("w_save", "w_hide", "w_revenue")
"""The heads of a utility-weight vector: save, hide (a cost), revenue."""
ESTIMATOR_LABELS = {"ips": "IPS", "snips": "SNIPS", "dm": "DM", "dr": "DR", "switch_dr": "switch-DR"}
DRIFT_LABELS = {
    "day0_policy": "Q-network trained on day 0",
    "retrained_policy": "Q-network retrained on the day before",
    "day0_global": "best global weights of day 0",
    "retrained_global": "best global weights of the day before",
}
PRODUCTION = "production weights"
STAR = ("M0,-1L0.2245,-0.309L0.9511,-0.309L0.3633,0.118L0.5878,0.809L0,0.382L-0.5878,0.809L-0.3633,0.118"
        "L-0.9511,-0.309L-0.2245,-0.309Z")
"""A five-pointed star as an SVG path (Vega has no built-in star symbol)."""


def method_label(method: str, scalarisation: str) -> str:
    """Readable name of a front's series: ``"learnt (Q-network)"``, ``"best global weights, Chebyshev"``."""
    label = METHOD_LABELS.get(str(method), str(method).replace("_", " "))
    return f"{label}, Chebyshev" if scalarisation == "chebyshev" else label


def _lambda_key(values: pd.Series) -> pd.Series:
    """Lambda values rounded for joins (the front and the off-policy table share the sweep's grid)."""
    return values.astype(float).round(9)


def _interval_text(estimate: float, low: float, high: float) -> str:
    if any(v is None or not math.isfinite(float(v)) for v in (estimate, low, high)):
        return ""
    return f"{estimate:.4g} [{low:.4g}, {high:.4g}]"


def dr_estimates(off_policy: pd.DataFrame, estimator: str = "dr") -> pd.DataFrame:
    """One row per lambda: an estimator's estimate, 95% interval and relative error of each objective.

    Args:
        off_policy: the report's ``off_policy`` table (``lambda, estimator, objective, estimate,
            ci_low, ci_high, truth, rel_error``).
        estimator: whose estimates (default DR).

    Returns:
        ``lambda`` and, per objective, ``dr_<objective>``, ``dr_<objective>_low``,
        ``dr_<objective>_high``, ``dr_<objective>_rel_error`` and the text ``dr_<objective>_ci``
        (``"estimate [low, high]"``); empty when the run has no such estimates.
    """
    columns = ["lambda"] + [f"dr_{o}{s}" for o in OBJECTIVES for s in ("", "_low", "_high", "_rel_error", "_ci")]
    if off_policy.empty or "estimator" not in off_policy:
        return pd.DataFrame(columns=columns)
    rows = off_policy[off_policy["estimator"] == estimator]
    out: pd.DataFrame | None = None
    for objective in OBJECTIVES:
        part = rows[rows["objective"] == objective]
        frame = pd.DataFrame({
            "lambda": part["lambda"].to_numpy(float),
            f"dr_{objective}": part["estimate"].to_numpy(float),
            f"dr_{objective}_low": part["ci_low"].to_numpy(float),
            f"dr_{objective}_high": part["ci_high"].to_numpy(float),
            f"dr_{objective}_rel_error": part["rel_error"].to_numpy(float),
        })
        frame[f"dr_{objective}_ci"] = [
            _interval_text(e, lo, hi) for e, lo, hi in zip(
                frame[f"dr_{objective}"], frame[f"dr_{objective}_low"], frame[f"dr_{objective}_high"], strict=True)
        ]
        out = frame if out is None else out.merge(frame, on="lambda", how="outer")
    assert out is not None
    return out[columns].sort_values("lambda", ignore_index=True)


def front_points(front: pd.DataFrame, off_policy: pd.DataFrame) -> pd.DataFrame:
    """The front with a readable ``series`` per (method, scalarisation) and, on the learnt linear
    points, the DR off-policy estimates (``dr_estimates``'s columns; empty text elsewhere).

    Args:
        front: the report's ``front`` table.
        off_policy: the report's ``off_policy`` table (the learnt linear policy per lambda).

    Returns:
        One row per front row, in the front's order.
    """
    frame = front.reset_index(drop=True).copy()
    frame["series"] = [method_label(m, s) for m, s in zip(frame["method"], frame["scalarisation"], strict=True)]
    estimates = dr_estimates(off_policy)
    learnt = ((frame["method"] == "learnt") & (frame["scalarisation"] == "linear")).to_numpy()
    frame["_key"] = _lambda_key(frame["lambda"]).where(learnt, np.nan)
    estimates = estimates.assign(_key=_lambda_key(estimates["lambda"])).drop(columns="lambda")
    merged = frame.merge(estimates, on="_key", how="left").drop(columns="_key")
    estimated = is_estimated(front)
    merged["values"] = "DR estimates on the held-out log" if estimated else "exact on the simulator"
    for objective in OBJECTIVES:
        if estimated:  # a run on a log file: the front's own values are the DR estimates, with intervals
            merged[f"dr_{objective}"] = merged[objective]
            merged[f"dr_{objective}_low"] = merged[f"{objective}_ci_low"]
            merged[f"dr_{objective}_high"] = merged[f"{objective}_ci_high"]
            merged[f"dr_{objective}_ci"] = [
                _interval_text(e, lo, hi) for e, lo, hi in zip(
                    merged[objective], merged[f"{objective}_ci_low"], merged[f"{objective}_ci_high"], strict=True)
            ]
        merged[f"dr_{objective}_ci"] = merged[f"dr_{objective}_ci"].fillna("")
    return merged


FRONT_TOOLTIP = [
    alt.Tooltip("series:N", title="method"),
    alt.Tooltip("lambda:Q", title="lambda", format=".2f"),
    alt.Tooltip("values:N", title="values"),
    alt.Tooltip("engagement:Q", format=".4f"),
    alt.Tooltip("revenue:Q", format=".4f"),
    alt.Tooltip("success:Q", format=".4f"),
    alt.Tooltip("hides:Q", format=".4f"),
    alt.Tooltip("w_save:Q", title="mean w_save", format=".3f"),
    alt.Tooltip("w_hide:Q", title="mean w_hide", format=".3f"),
    alt.Tooltip("w_revenue:Q", title="mean w_revenue", format=".3f"),
    alt.Tooltip("distinct_weights:Q", title="distinct weight vectors"),
    alt.Tooltip("dr_engagement_ci:N", title="DR engagement [95% CI]"),
    alt.Tooltip("dr_revenue_ci:N", title="DR revenue [95% CI]"),
]
"""The tooltip of every point of the frontier chart."""


def frontier_chart(front: pd.DataFrame, off_policy: pd.DataFrame, *, height: int = 420) -> alt.LayerChart:
    """Engagement (y) against revenue (x) of every method's lambda sweep, exact on the test requests.

    One line per (method, scalarisation), ordered by lambda (Chebyshev dashed); production weights
    as a single star. Every point has ``FRONT_TOOLTIP`` (the learnt linear points with their DR
    estimates and 95% intervals).

    Args:
        front: the report's ``front`` table.
        off_policy: the report's ``off_policy`` table.
        height: the chart's height in pixels.

    Returns:
        Lines with points, and the star.
    """
    points = front_points(front, off_policy)
    sweeps = points[points["method"] != "production"]
    production = points[points["method"] == "production"]
    order = list(dict.fromkeys(sweeps["series"]))
    x = alt.X("revenue:Q", title="revenue per request", scale=alt.Scale(zero=False))
    y = alt.Y("engagement:Q", title="engagement (success − hide cost × hides)", scale=alt.Scale(zero=False))
    color = alt.Color("series:N", title=None, sort=order, legend=alt.Legend(orient="bottom", columns=3, labelLimit=320))
    dash = alt.StrokeDash(
        "scalarisation:N", title=None, legend=None,
        scale=alt.Scale(domain=["linear", "chebyshev"], range=[[1, 0], [5, 3]]),
    )
    lines = alt.Chart(sweeps).mark_line(point=alt.OverlayMarkDef(size=40, filled=True)).encode(
        x=x, y=y, color=color, strokeDash=dash, order="lambda:Q", detail="series:N", tooltip=FRONT_TOOLTIP,
    )
    star = alt.Chart(production).mark_point(shape=STAR, size=320, filled=True, color="black").encode(
        x=x, y=y, tooltip=FRONT_TOOLTIP,
    )
    label = alt.Chart(production).mark_text(align="left", dx=10, dy=-8, color="black").encode(
        x=x, y=y, text=alt.value(PRODUCTION),
    )
    return alt.layer(lines, star, label).properties(height=height)


def learnt_points(front: pd.DataFrame, off_policy: pd.DataFrame, scalarisation: str = "linear") -> pd.DataFrame:
    """The learnt policy's operating points: lambda, exact values, mean weights and DR estimates.

    Args:
        front: the report's ``front`` table.
        off_policy: the report's ``off_policy`` table (the DR estimates join on lambda; they exist
            for the linear scalarisation, the other columns stay empty).
        scalarisation: ``"linear"`` or ``"chebyshev"``.

    Returns:
        One row per lambda, ascending.
    """
    points = front_points(front, off_policy)
    rows = points[(points["method"] == "learnt") & (points["scalarisation"] == scalarisation)]
    columns = ["lambda", *OUTCOMES, *WEIGHTS, "distinct_weights"] + [
        f"dr_{o}{s}" for o in OBJECTIVES for s in ("", "_low", "_high", "_rel_error")
    ]
    return rows[columns].sort_values("lambda", ignore_index=True)


def operating_points(front: pd.DataFrame) -> list[tuple[str, float]]:
    """The learnt policy's deployable operating points: ``(scalarisation, lambda)``, linear first."""
    rows = front[front["method"] == "learnt"]
    found = {(str(s), float(lam)) for s, lam in zip(rows["scalarisation"], rows["lambda"], strict=True)}
    rank = {"linear": 0, "chebyshev": 1}
    return sorted(found, key=lambda p: (rank.get(p[0], 2), p[0], p[1]))


def point_label(point: tuple[str, float]) -> str:
    """``("linear", 0.3)`` -> ``"learnt, linear, lambda 0.3"`` (the deployment's label)."""
    scalarisation, lam = point
    return f"learnt, {scalarisation}, lambda {lam:g}"


def _plain(value: Any) -> Any:
    """A JSON-plain number (NaN -> None, numpy -> Python)."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(float(value)) else None
    return value


def deployment(front: pd.DataFrame, off_policy: pd.DataFrame, point: tuple[str, float]) -> tuple[str, dict[str, Any]]:
    """The label and settings recorded when an operator deploys a learnt operating point.

    Args:
        front: the report's ``front`` table.
        off_policy: the report's ``off_policy`` table.
        point: ``(scalarisation, lambda)`` from ``operating_points``.

    Returns:
        ``(label, settings)``: settings hold ``method``, ``scalarisation``, ``lambda``, the exact
        outcomes, the mean weights, the distinct weight vectors and (linear) the DR estimates with
        their intervals, as plain JSON.

    Raises:
        KeyError: the run's front has no such point.
    """
    scalarisation, lam = point
    table = learnt_points(front, off_policy, scalarisation)
    match = table[np.isclose(table["lambda"].to_numpy(float), lam)]
    if match.empty:
        raise KeyError(f"no learnt {scalarisation} point at lambda {lam:g}")
    row = match.iloc[0]
    settings: dict[str, Any] = {"method": "learnt", "scalarisation": scalarisation, "lambda": float(lam)}
    settings.update({name: _plain(row[name]) for name in table.columns if name != "lambda"})
    return point_label(point), settings


def history_frame(records: Iterable[Any]) -> pd.DataFrame:
    """The history of deployment choices, newest first: when, run, label, lambda, note, by whom.

    Args:
        records: ``DeploymentRecord``s from ``decisions.store.deployments.history``.
    """
    rows = []
    for record in records:
        when = record.chosen_at
        rows.append({
            "when": (when.astimezone().replace(tzinfo=None) if when.tzinfo else when).replace(microsecond=0),
            "run": record.run_id,
            "label": record.label,
            "lambda": record.settings.get("lambda"),
            "scalarisation": record.settings.get("scalarisation"),
            "note": record.note or "",
            "by": record.chosen_by or "",
        })
    return pd.DataFrame(rows, columns=["when", "run", "label", "lambda", "scalarisation", "note", "by"])


def deployed_text(record: Any | None) -> str:
    """One line on the policy deployed now (a ``DeploymentRecord``, or None)."""
    if record is None:
        return "No utility-weight policy is deployed yet."
    when = record.chosen_at.astimezone().strftime("%Y-%m-%d %H:%M") if record.chosen_at.tzinfo else (
        record.chosen_at.strftime("%Y-%m-%d %H:%M"))
    who = f" by {record.chosen_by}" if record.chosen_by else ""
    note = f" — {record.note}" if record.note else ""
    return f"Currently deployed: **{record.label}** from run #{record.run_id}, chosen {when}{who}{note}."


def segment_view(segments: pd.DataFrame) -> pd.DataFrame:
    """Per segment: share, the learnt policy's mean weights, and each outcome learnt, production and change.

    Args:
        segments: the report's ``segments`` table (one row per segment at the reference lambda).

    Returns:
        ``segment, share, lambda, w_save, w_hide, w_revenue`` then ``<outcome>_learnt``,
        ``<outcome>_production``, ``<outcome>_change`` (learnt − production) per outcome.
    """
    columns = ["segment", "share", "lambda", *WEIGHTS]
    view = segments[[c for c in columns if c in segments]].copy()
    for outcome in OUTCOMES:
        view[f"{outcome}_learnt"] = segments[f"{outcome}_learnt"].to_numpy(float)
        view[f"{outcome}_production"] = segments[f"{outcome}_production"].to_numpy(float)
        view[f"{outcome}_change"] = view[f"{outcome}_learnt"] - view[f"{outcome}_production"]
    return view


def _segment_long(segments: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for row in segments.itertuples(index=False):
        for outcome in OUTCOMES:
            for policy in ("learnt", "production"):
                rows.append({"segment": row.segment, "outcome": outcome,
                             "policy": "learnt (Q-network)" if policy == "learnt" else PRODUCTION,
                             "value": float(getattr(row, f"{outcome}_{policy}"))})
    return pd.DataFrame(rows, columns=["segment", "outcome", "policy", "value"])


def segment_chart(segments: pd.DataFrame) -> alt.FacetChart:
    """Each outcome of the learnt policy beside production's per segment: horizontal bars (every segment named
    on its own line), one panel per outcome, two panels a row, each panel its own scale."""
    data = _segment_long(segments)
    order = list(dict.fromkeys(segments["segment"]))
    policies = ["learnt (Q-network)", PRODUCTION]
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("segment:N", sort=order, title=None, axis=alt.Axis(labelLimit=180)),
        yOffset=alt.YOffset("policy:N", sort=policies),
        x=alt.X("value:Q", title=None),
        color=alt.Color("policy:N", title=None, sort=policies,
                        scale=alt.Scale(range=["#4c78a8", "#9d9d9d"]), legend=alt.Legend(orient="top")),
        tooltip=["segment:N", "outcome:N", "policy:N", alt.Tooltip("value:Q", format=".4f")],
    ).properties(width=260, height=max(90, 30 * len(order))).facet(
        facet=alt.Facet("outcome:N", sort=list(OUTCOMES), title=None, header=alt.Header(labelFontWeight="bold")),
        columns=2,
    ).resolve_scale(x="independent")


def segment_weights_chart(segments: pd.DataFrame, production: Mapping[str, float] | None = None) -> alt.Chart:
    """The learnt policy's mean weight vector per segment (stacked to 1), production's as a last bar.

    Args:
        segments: the report's ``segments`` table.
        production: production's ``w_save, w_hide, w_revenue`` (the front's production row), if known.
    """
    rows = [{"segment": s, "head": w, "weight": float(v)}
            for s, *values in segments[["segment", *WEIGHTS]].itertuples(index=False)
            for w, v in zip(WEIGHTS, values, strict=True)]
    order = list(dict.fromkeys(segments["segment"]))
    if production is not None:
        rows += [{"segment": PRODUCTION, "head": w, "weight": float(production[w])} for w in WEIGHTS]
        order.append(PRODUCTION)
    data = pd.DataFrame(rows, columns=["segment", "head", "weight"])
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("segment:N", sort=order, title=None),
        x=alt.X("weight:Q", title="mean weight (the heads sum to 1)", scale=alt.Scale(domain=[0, 1]),
                  axis=alt.Axis(format=".1f", tickCount=5)),
        color=alt.Color("head:N", sort=list(WEIGHTS), title=None, legend=alt.Legend(orient="top")),
        order=alt.Order("head_order:Q"),
        tooltip=["segment:N", "head:N", alt.Tooltip("weight:Q", format=".3f")],
    ).transform_calculate(
        head_order=f"indexof({list(WEIGHTS)!r}, datum.head)",
    ).properties(height=alt.Step(30))  # a fixed band per segment: every bar keeps its label


def production_weights(front: pd.DataFrame) -> dict[str, float] | None:
    """Production's weight vector from the front's production row, or None."""
    rows = front[front["method"] == "production"]
    if rows.empty:
        return None
    return {w: float(rows.iloc[0][w]) for w in WEIGHTS}


def estimator_view(errors: pd.DataFrame) -> pd.DataFrame:
    """The off-policy check: each estimator's estimate, 95% interval, the exact value and the relative error."""
    columns = ["estimator", "objective", "estimate", "ci_low", "ci_high", "truth", "rel_error", "covers"]
    if errors.empty:
        return pd.DataFrame(columns=columns)
    view = errors.copy()
    view["estimator"] = view["estimator"].map(lambda e: ESTIMATOR_LABELS.get(str(e), str(e)))
    view["covers"] = (view["ci_low"] <= view["truth"]) & (view["truth"] <= view["ci_high"])
    extra = [c for c in ("lambda", "logger") if c in view]
    return view[[*extra, *columns]].reset_index(drop=True)


def estimator_chart(errors: pd.DataFrame) -> alt.FacetChart:
    """Each estimator's estimate (point) and 95% interval (bar) against the exact value (red rule), per objective."""
    view = estimator_view(errors)
    order = [ESTIMATOR_LABELS.get(e, e) for e in dict.fromkeys(errors["estimator"])] if len(errors) else []
    base = alt.Chart().encode(y=alt.Y("estimator:N", sort=order, title=None))
    interval = base.mark_rule(strokeWidth=3, opacity=0.6).encode(
        x=alt.X("ci_low:Q", title="estimate with 95% interval", scale=alt.Scale(zero=False)), x2="ci_high:Q",
    )
    tooltip = ["estimator:N", "objective:N", alt.Tooltip("estimate:Q", format=".4g"),
               alt.Tooltip("ci_low:Q", format=".4g"), alt.Tooltip("ci_high:Q", format=".4g"),
               alt.Tooltip("truth:Q", title="exact", format=".4g"), alt.Tooltip("rel_error:Q", format=".1%")]
    point = base.mark_point(filled=True, size=80).encode(x="estimate:Q", tooltip=tooltip)
    truth = alt.Chart().mark_rule(color="#e45756", strokeDash=[4, 3]).encode(
        x="mean(truth):Q", tooltip=[alt.Tooltip("mean(truth):Q", title="exact", format=".4g")],
    )
    return alt.layer(interval, point, truth, data=view).properties(height=36 * max(len(order), 1) + 20).facet(
        row=alt.Row("objective:N", title=None, sort=list(OBJECTIVES)),
    ).resolve_scale(x="independent")


def drift_chart(drift: pd.DataFrame) -> alt.Chart:
    """The lambda utility per day of the day-0 and retrained policies and global weights."""
    columns = [c for c in DRIFT_LABELS if c in drift]
    data = drift.melt(id_vars="day", value_vars=columns, var_name="policy", value_name="utility")
    data["policy"] = data["policy"].map(DRIFT_LABELS)
    order = [DRIFT_LABELS[c] for c in columns]
    return alt.Chart(data).mark_line(point=True).encode(
        x=alt.X("day:O", title="day", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("utility:Q", title="lambda utility (exact)", scale=alt.Scale(zero=False)),
        color=alt.Color("policy:N", sort=order, title=None,
                        legend=alt.Legend(orient="bottom", columns=2, labelLimit=320)),
        strokeDash=alt.StrokeDash("policy:N", sort=order, legend=None),
        tooltip=["day:O", "policy:N", alt.Tooltip("utility:Q", format=".4f")],
    ).properties(height=300)


def obd_view(obd_front: pd.DataFrame) -> pd.DataFrame:
    """The Open Bandit front with a ``status`` in words (non-dominated / dominated, with confidence or not)."""
    view = obd_front.copy()
    if view.empty:
        return view.assign(status=pd.Series(dtype=str))

    def status(row: Any) -> str:
        if row.non_dominated:
            return "non-dominated"
        if row.dominated_with_confidence or row.dominated_paired:
            return "dominated (with confidence)"
        return "dominated (within the intervals)"

    view["status"] = [status(r) for r in view.itertuples(index=False)]
    return view


def obd_chart(obd_front: pd.DataFrame, *, height: int = 420) -> alt.LayerChart:
    """Click rate (DR estimate with its 95% interval) against the exact item value, one point per lambda.

    Args:
        obd_front: the report's ``obd_front`` table.
        height: the chart's height in pixels.
    """
    view = obd_view(obd_front)
    x = alt.X("value:Q", title="item value per impression (exact, item_feature_0)", scale=alt.Scale(zero=False))
    y = alt.Y("click_dr:Q", title="click rate (DR off-policy estimate)", scale=alt.Scale(zero=False))
    tooltip = [
        alt.Tooltip("lambda:Q", format=".2f"),
        alt.Tooltip("value:Q", title="item value (exact)", format=".4f"),
        alt.Tooltip("click_dr:Q", title="click DR", format=".5f"),
        alt.Tooltip("click_dr_low:Q", title="click DR 95% low", format=".5f"),
        alt.Tooltip("click_dr_high:Q", title="click DR 95% high", format=".5f"),
        alt.Tooltip("click_ips:Q", title="click IPS", format=".5f"),
        alt.Tooltip("click_ips_low:Q", title="click IPS 95% low", format=".5f"),
        alt.Tooltip("click_ips_high:Q", title="click IPS 95% high", format=".5f"),
        alt.Tooltip("ess:Q", title="effective sample size", format=",.0f"),
        "status:N",
    ]
    base = alt.Chart(view)
    line = base.mark_line(color="#9d9d9d").encode(x=x, y=y, order="lambda:Q")
    bars = base.mark_errorbar(ticks=True).encode(
        x=x, y=alt.Y("click_dr_low:Q", title="click rate (DR off-policy estimate)"), y2="click_dr_high:Q",
    )
    points = base.mark_point(filled=True, size=90).encode(
        x=x, y=y, tooltip=tooltip,
        color=alt.Color("status:N", title=None, legend=alt.Legend(orient="bottom"),
                        scale=alt.Scale(domain=["non-dominated", "dominated (within the intervals)",
                                                "dominated (with confidence)"],
                                        range=["#4c78a8", "#f58518", "#e45756"])),
    )
    return alt.layer(line, bars, points).properties(height=height)


HEADLINE = (
    ("gain_share_of_oracle", "Gain share of the per-context oracle", "{:.1%}"),
    ("hypervolume_ratio_vs_global", "Hypervolume vs best global weights", "{:.3f}×"),
    ("dr_rel_error", "DR relative error (lambda 0.5)", "{:.1%}"),
    ("engagement_gain_vs_production", "Engagement gain at production revenue", "{:+.1%}"),
)
"""``(metric, label, format)`` of the headline figures, in display order."""


def headline(report: UtilityReport) -> list[tuple[str, str, str | None]]:
    """The four headline figures as ``(label, value, delta)`` for ``st.metric``; ``"n/a"`` when missing."""
    return app_common.format_figures(report.metrics, HEADLINE, missing="n/a")
