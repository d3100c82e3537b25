"""Matplotlib figures for explanations, each a fresh ``Figure`` on an Agg canvas, never registered
with pyplot.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from sklearn.tree import plot_tree

from decisions.core.explain.attributions import LocalAttribution
from decisions.core.explain.surrogate import SurrogateTree
from decisions.errors import InputError

_POS, _NEG = "#d62728", "#1f77b4"


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _require(df: pd.DataFrame, columns: set[str], name: str) -> None:
    missing = columns - set(df.columns)
    if missing:
        raise InputError(name, f"missing columns {sorted(missing)}")
    if df.empty:
        raise InputError(name, "no rows to plot")


def plot_importance(
    importance: pd.DataFrame,
    *,
    top: int | None = None,
    title: str = "Feature importance",
    xlabel: str = "importance",
) -> Figure:
    """Horizontal bars of the ``top`` rows of a global importance frame (``feature, importance[, std]``),
    largest on top, with error bars from ``std`` when present."""
    _require(importance, {"feature", "importance"}, "importance")
    df = importance.sort_values("importance", ascending=False, kind="stable").head(top)[::-1]
    fig = _figure(7.0, 0.8 + 0.3 * len(df))
    ax = fig.add_subplot()
    xerr = df["std"].to_numpy() if "std" in df.columns else None
    ax.barh(df["feature"].astype(str), df["importance"].to_numpy(), xerr=xerr, color=_NEG, capsize=2)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    return fig


def plot_attribution(local: LocalAttribution, *, top: int = 10, title: str | None = None) -> Figure:
    """Waterfall of one decision: from the baseline action, each feature's attribution, to the action.

    The ``top`` largest attributions get a bar each; the rest are summed into one
    "other" bar. Positive contributions are red, negative blue.

    Returns:
        A figure with ``min(top, rows)`` bars, plus one when there are more rows than ``top``.
    """
    if top < 1:
        raise InputError("top", f"must be >= 1, got {top}")
    _require(local.table, {"feature", "attribution"}, "local.table")
    shown = local.table.head(top)
    labels = shown["feature"].astype(str).tolist()
    contrib = shown["attribution"].to_numpy(dtype=float).tolist()
    rest = local.table.iloc[top:]
    if len(rest):
        labels.append(f"other {len(rest)} features")
        contrib.append(float(rest["attribution"].sum()))
    starts = local.baseline_action + np.concatenate([[0.0], np.cumsum(contrib)[:-1]])
    fig = _figure(7.0, 1.2 + 0.32 * len(labels))
    ax = fig.add_subplot()
    y = np.arange(len(labels))[::-1]
    ax.barh(y, contrib, left=starts, color=[_POS if c >= 0 else _NEG for c in contrib])
    ax.set_yticks(y, labels)
    ax.axvline(local.baseline_action, color="grey", linestyle=":", linewidth=1)
    ax.axvline(local.action, color="black", linestyle="--", linewidth=1)
    ax.set_xlabel("action")
    ax.set_title(
        title
        or f"baseline {local.baseline_action:.3g} -> action {local.action:.3g} (gap {local.completeness_gap:.1e})"
    )
    return fig


def plot_response_curve(curve: pd.DataFrame, *, title: str | None = None) -> Figure:
    """Lines of :func:`response_curve`: one per observation, plus a dashed mean when there are several.

    Returns:
        A figure with ``n`` lines for ``n`` observations (``n + 1`` when ``n > 1``).
    """
    _require(curve, {"obs_index", "value", "action"}, "curve")
    fig = _figure(7.0, 4.0)
    ax = fig.add_subplot()
    groups = list(curve.groupby("obs_index", sort=True))
    alpha = 1.0 if len(groups) == 1 else max(0.15, 1.0 / np.sqrt(len(groups)))
    for _, g in groups:
        ax.plot(g["value"].to_numpy(), g["action"].to_numpy(), color=_NEG, alpha=alpha, linewidth=1.2)
    if len(groups) > 1:
        mean = curve.groupby("value", sort=True)["action"].mean()
        ax.plot(
            mean.index.to_numpy(), mean.to_numpy(), color="black", linestyle="--", linewidth=2, label="mean"
        )
        ax.legend()
    feature = str(curve["feature"].iloc[0]) if "feature" in curve.columns else "feature"
    ax.set_xlabel(feature)
    ax.set_ylabel("action")
    ax.set_title(title or f"Action response to {feature}")
    return fig


def plot_surrogate_tree(
    surrogate: SurrogateTree, *, max_depth: int | None = None, fontsize: int | None = None
) -> Figure:
    """Draw the top ``max_depth`` levels of a fitted surrogate tree (``sklearn.tree.plot_tree``), one
    annotation per node."""
    model = surrogate.model
    depth = min(model.get_depth(), max_depth) if max_depth is not None else model.get_depth()
    leaves = 2 ** max(depth, 1)
    fig = _figure(min(4.0 + 1.6 * leaves, 40.0), 2.0 + 1.4 * depth)
    ax = fig.add_subplot()
    class_names = [surrogate.describe(int(c)) for c in model.classes_] if surrogate.discrete else None
    plot_tree(
        model,
        ax=ax,
        max_depth=max_depth,
        feature_names=list(surrogate.feature_names),
        class_names=class_names,
        filled=True,
        impurity=False,
        rounded=True,
        precision=2,
        fontsize=fontsize,
    )
    ax.set_title(f"Surrogate tree (held-out agreement {surrogate.fidelity.agreement:.0%})")
    return fig
