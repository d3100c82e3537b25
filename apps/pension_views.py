"""Views of the pension ALM page: the form's job spec, a recorded run's tables read back, Altair charts.

Pure functions of report tables (no Streamlit calls except through ``app_common``'s CSV
reader), so they are testable without running the page. Tables are those of
``decisions.finance.pension.report.PensionReport.tables()``; reading them back does not
import JAX (only ``job_spec`` with a non-default key-rate count does). The bump-versus-adjoint
timing the page charts with ``speedup_chart`` is measured by the domain
(``decisions.finance.pension.measure_speedups``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import altair as alt
import app_common
import numpy as np
import pandas as pd

import decisions.finance.pension as pension

METHOD_LABELS = {"snapo": "SNAPO", "fixed_mix": "best fixed mix"}

TABLES: tuple[str, ...] = (
    "comparison",
    "funding_fan",
    "allocation",
    "fixed_mix_allocation",
    "key_rate_sensitivity",
    "asset_sensitivity",
    "correlation_sensitivity",
    "input_sensitivity",
    "liability_risk",
    "training_curve",
)
"""The CSV tables a pension run records (``PensionReport.tables()``)."""

_REQUIRED = ("comparison", "funding_fan", "allocation")
_NOT_ASSETS = {"month", "year", "contribution_rate"}

DEFAULT_KEY_RATES = 11
"""Key-rate count of the default curve (``scenario.STANDARD_TENORS``)."""


@dataclass
class RecordedPensionRun:
    """A pension run's tables and metrics as read back from the store.

    Attributes:
        run_id: the run.
        tables: artifact name -> table (those of ``TABLES`` still on disk).
        metrics: the run's latest metrics.
        floor: the scenario's funding-ratio floor (from the recorded configuration), if known.
    """

    run_id: int
    tables: dict[str, pd.DataFrame]
    metrics: dict[str, float] = field(default_factory=dict)
    floor: float | None = None

    def table(self, name: str) -> pd.DataFrame:
        """One table, empty when the run did not record it."""
        return self.tables.get(name, pd.DataFrame())


def load_run(run_id: int, url: str) -> RecordedPensionRun:
    """Read a pension run's recorded tables, metrics and floor back from the store.

    Raises:
        RunNotFoundError: no such run.
        InputError: the run is not a pension run or its main tables are gone.
    """
    report, record = app_common.load_report(pension.DOMAIN, run_id, url)
    config = record.config if isinstance(record.config, dict) else {}
    floor = config.get("scenario", {}).get("funding", {}).get("floor")
    return RecordedPensionRun(
        run_id=run_id,
        tables={name: frame.reset_index() if frame.index.name else frame for name, frame in report.tables().items()},
        metrics=dict(report.metrics),
        floor=float(floor) if floor is not None else None,
    )


def method_label(name: str) -> str:
    """Readable name of a policy (``"fixed_mix"`` -> ``"best fixed mix"``)."""
    return METHOD_LABELS.get(name, name.replace("_", " "))


def job_spec(form: dict[str, Any], output_dir: str | None = None) -> dict[str, Any]:
    """The job spec (``[job]``, ``[scenario]``, ``[snapo]``, ``[evaluation]``) of the page's form.

    Args:
        form: ``name, seed, horizon_years, key_rates, contribution_min, contribution_max,
            floor, steps, paths_per_step, eval_paths, selection_paths``.
        output_dir: where the run's files go (None: next to the store).

    Returns:
        The spec for ``decisions.finance.pension.job.prepare``. With a key-rate count other
        than ``DEFAULT_KEY_RATES`` the curve is the benchmark's Nelson-Siegel curve on that
        many geometrically spaced tenors (``bench.with_key_rates``; imports JAX).
    """
    scenario: dict[str, Any] = {
        "horizon_years": int(form["horizon_years"]),
        "funding": {
            "contribution_min": float(form["contribution_min"]),
            "contribution_max": float(form["contribution_max"]),
            "floor": float(form["floor"]),
        },
    }
    k = int(form["key_rates"])
    if k != DEFAULT_KEY_RATES:
        scenario["curve"] = pension.with_key_rates(pension.Scenario(), k).curve.model_dump(mode="json")
    steps = int(form["steps"])
    return {
        "job": app_common.job_table(pension.DOMAIN, form, output_dir),
        "scenario": scenario,
        "snapo": {
            "steps": steps,
            "paths_per_step": int(form["paths_per_step"]),
            "log_every": max(1, min(25, steps)),
        },
        "evaluation": {"paths": int(form["eval_paths"]), "selection_paths": int(form["selection_paths"])},
    }


def comparison_view(comparison: pd.DataFrame) -> pd.DataFrame:
    """The comparison table (``method`` column or index) with readable policy names, SNAPO first."""
    frame = comparison.reset_index() if "method" not in comparison else comparison.copy()
    order = {name: i for i, name in enumerate(METHOD_LABELS)}
    frame = frame.sort_values("method", key=lambda s: s.map(lambda m: order.get(m, len(order))), ignore_index=True)
    frame["method"] = frame["method"].map(method_label)
    return frame


def headline(run: RecordedPensionRun) -> list[tuple[str, str, str | None]]:
    """The figures above the report: ``(label, value, delta)`` for ``st.metric``."""
    metrics = run.metrics
    out: list[tuple[str, str, str | None]] = []
    if "value_snapo" in metrics:
        delta = None
        if "snapo_minus_fixed_mix" in metrics:
            stderr = metrics.get("snapo_minus_fixed_mix_stderr")
            delta = f"{metrics['snapo_minus_fixed_mix']:,.1f} vs fixed mix"
            delta += f" (± {stderr:,.1f})" if stderr is not None else ""
        out.append(("SNAPO objective", f"{metrics['value_snapo']:,.1f}", delta))
    if "value_fixed_mix" in metrics:
        out.append(("best fixed mix objective", f"{metrics['value_fixed_mix']:,.1f}", None))
    if "terminal_funding_ratio_median" in metrics:
        out.append(("median final funding ratio", f"{metrics['terminal_funding_ratio_median']:.1%}", None))
    if "liability_present_value" in metrics:
        out.append(("liability today", f"{metrics['liability_present_value']:,.0f}", None))
    if "n_sensitivities" in metrics:
        out.append(("sensitivities in one pass", f"{int(metrics['n_sensitivities']):,}", None))
    return out


def fan_chart(fan: pd.DataFrame, floor: float | None = None) -> alt.LayerChart:
    """Funding-ratio percentile bands over the years: p5-p95, p25-p75, the median and the mean.

    Args:
        fan: ``month, year, mean, p5, p25, p50, p75, p95``.
        floor: the funding-ratio floor, drawn as a dashed rule when given.

    Returns:
        The layered band chart.
    """
    base = alt.Chart(fan).encode(x=alt.X("year:Q", title="year"))
    y_title = "funding ratio (assets / liability)"
    outer = base.mark_area(opacity=0.18, color="#4c78a8").encode(
        y=alt.Y("p5:Q", title=y_title, scale=alt.Scale(zero=False)), y2="p95:Q"
    )
    inner = base.mark_area(opacity=0.35, color="#4c78a8").encode(y="p25:Q", y2="p75:Q")
    median = base.mark_line(color="#1f4e79").encode(
        y="p50:Q",
        tooltip=[alt.Tooltip("year:Q", format=".2f")]
        + [alt.Tooltip(f"{c}:Q", format=".3f") for c in ("p5", "p25", "p50", "p75", "p95", "mean")],
    )
    mean = base.mark_line(color="#1f4e79", strokeDash=[4, 3]).encode(y="mean:Q")
    layers: list[alt.Chart] = [outer, inner, median, mean]
    if floor is not None:
        rule = alt.Chart(pd.DataFrame({"floor": [floor]})).mark_rule(color="#e45756", strokeDash=[6, 3])
        layers.append(rule.encode(y="floor:Q"))
    return alt.layer(*layers).properties(height=320)


def asset_columns(allocation: pd.DataFrame) -> list[str]:
    """The asset weight columns of an allocation table, in portfolio order."""
    return [c for c in allocation.columns if c not in _NOT_ASSETS]


def allocation_long(allocation: pd.DataFrame) -> pd.DataFrame:
    """An allocation table in long form: ``month, year, asset, weight`` (assets in portfolio order)."""
    return allocation.melt(
        id_vars=["month", "year"], value_vars=asset_columns(allocation), var_name="asset", value_name="weight"
    )


ALLOCATION_LEGEND_COLUMNS = 4
"""Assets per legend row under the allocation chart (the default scheme has seven)."""


def allocation_chart(allocation: pd.DataFrame, title: str) -> alt.Chart:
    """Mean portfolio weights over the years as a stacked area (one band per asset).

    The page draws two of these side by side, each half the page wide: a one-row legend of
    every asset would run past that width and be cut off, so the legend sits below the chart
    in rows of ``ALLOCATION_LEGEND_COLUMNS`` assets, with labels never truncated.

    Args:
        allocation: ``month, year, <asset>..., contribution_rate``.
        title: chart title.

    Returns:
        The stacked-area chart.
    """
    assets = asset_columns(allocation)
    frame = allocation_long(allocation)
    frame["order"] = frame["asset"].map({a: i for i, a in enumerate(assets)})
    return (
        alt.Chart(frame, title=title)
        .mark_area()
        .encode(
            x=alt.X("year:Q", title="year"),
            y=alt.Y("weight:Q", stack="zero", title="mean weight", scale=alt.Scale(domain=[0, 1])),
            color=alt.Color(
                "asset:N", sort=assets, title=None,
                legend=alt.Legend(orient="bottom", columns=max(1, min(len(assets), ALLOCATION_LEGEND_COLUMNS)), labelLimit=0),
            ),
            order=alt.Order("order:Q"),
            tooltip=["asset:N", alt.Tooltip("year:Q", format=".2f"), alt.Tooltip("weight:Q", format=".1%")],
        )
        .properties(height=280)
    )


def contribution_chart(allocations: dict[str, pd.DataFrame]) -> alt.Chart:
    """The sponsor's mean contribution rate over the years, one line per policy.

    Args:
        allocations: policy name (``snapo``, ``fixed_mix``) -> its allocation table.

    Returns:
        The line chart.
    """
    frames = [
        frame[["year", "contribution_rate"]].assign(policy=method_label(name))
        for name, frame in allocations.items()
        if not frame.empty and "contribution_rate" in frame
    ]
    rows = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["year", "contribution_rate", "policy"])
    return (
        alt.Chart(rows)
        .mark_line()
        .encode(
            x=alt.X("year:Q", title="year"),
            y=alt.Y("contribution_rate:Q", title="contribution rate (x payroll)", axis=alt.Axis(format="%")),
            color=alt.Color("policy:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["policy:N", alt.Tooltip("year:Q", format=".2f"), alt.Tooltip("contribution_rate:Q", format=".2%")],
        )
        .properties(height=200)
    )


def tenor_label(tenor: float) -> str:
    """A key tenor as text: ``3m`` under a year, else ``10y`` (``2.5y``)."""
    if tenor < 1.0:
        return f"{round(tenor * 12):d}m"
    return f"{tenor:g}y"


def key_rate_chart(key_rates: pd.DataFrame) -> alt.Chart:
    """Sensitivity of the SNAPO objective to each key rate (currency per +1 bp), one bar per tenor.

    Args:
        key_rates: ``tenor, rate, dV_dr, dV_per_bp``.

    Returns:
        The bar chart (positive bars blue, negative red).
    """
    frame = key_rates.assign(label=[tenor_label(float(t)) for t in key_rates["tenor"]])
    frame["sign"] = np.where(frame["dV_per_bp"] >= 0, "gain", "loss")
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("label:N", sort=list(frame["label"]), title="key tenor", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("dV_per_bp:Q", title="dV per +1 bp"),
            color=alt.Color(
                "sign:N", scale=alt.Scale(domain=["gain", "loss"], range=["#4c78a8", "#e45756"]), legend=None
            ),
            tooltip=[
                alt.Tooltip("tenor:Q", format="g"),
                alt.Tooltip("rate:Q", format=".3%"),
                alt.Tooltip("dV_per_bp:Q", format=",.4g"),
            ],
        )
        .properties(height=260)
    )


def speedup_chart(timings: pd.DataFrame) -> alt.LayerChart:
    """Speed-up of one adjoint pass over K + 1 revaluations against K, on log-log axes.

    Args:
        timings: ``key_rates, speedup`` (and the seconds, shown as tooltips).

    Returns:
        Points joined by a line, with a dashed rule at a speed-up of 1.
    """
    tips = [c for c in ("key_rates", "speedup", "bump_seconds", "adjoint_seconds") if c in timings]
    line = (
        alt.Chart(timings)
        .mark_line(point=True)
        .encode(
            x=alt.X("key_rates:Q", title="key rates K", scale=alt.Scale(type="log")),
            y=alt.Y("speedup:Q", title="speed-up (bump and revalue / adjoint)", scale=alt.Scale(type="log")),
            tooltip=tips,
        )
    )
    parity = alt.Chart(pd.DataFrame({"speedup": [1.0]})).mark_rule(color="gray", strokeDash=[4, 3]).encode(y="speedup:Q")
    return alt.layer(line, parity).properties(height=260)
