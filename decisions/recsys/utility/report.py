"""The result of a utility-weight job: the front, the off-policy check, segments, drift, a chart."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure, trained_file

METHOD_LABELS = {
    "learnt": "learnt (Q-network)",
    "learnt_lambda_input": "learnt (lambda as an input)",
    "global": "best global weights",
    "linucb": "LinUCB",
    "context_oracle": "per-context oracle",
    "request_oracle": "per-request oracle",
    "production": "production weights",
}
"""Display names of the front's methods."""


@dataclass(kw_only=True)
class UtilityReport(TablesReport):
    """Everything a utility-weight run produced.

    Attributes:
        front: one row per (``method``, ``scalarisation``, ``lambda``) with the exact
            ``engagement``, ``revenue``, ``success``, ``hides`` and lambda-``utility`` on the test
            requests, the chosen weight vectors' mean (``w_save``, ``w_hide``, ``w_revenue``) and how
            many distinct vectors were chosen (production: one row, lambda NaN); every row is a
            deployable operating policy.
        off_policy: the learnt policy per lambda: each estimator's estimate and bootstrap interval
            of engagement and revenue on held-out logs, with the exact value (``truth``) and
            ``rel_error``.
        estimator_errors: the same at the reference lambda (0.5).
        segments: per user segment at lambda 0.5: the learnt policy's mean weights and outcomes
            beside production's.
        drift: per day: the lambda utility of the day-0 policy, the policy retrained on the day
            before, and the best global weights of day 0 and of the day before (empty without drift).
        obd_front: the real click-versus-item-value front on the Open Bandit sample, one row per
            lambda (``obd_study.real_front``: click estimates by IPS and DR with intervals, the exact
            item value, domination flags).
        model: the trained ``QModel`` (saved as ``qnet.msgpack``).
        metrics: headline figures.

    A run on a user's log has no off-policy check, segments or drift: those tables are empty, and an
    empty table is neither written nor recorded (it reads back empty).
    """

    front: pd.DataFrame
    off_policy: pd.DataFrame = field(default_factory=pd.DataFrame)
    estimator_errors: pd.DataFrame = field(default_factory=pd.DataFrame)
    segments: pd.DataFrame = field(default_factory=pd.DataFrame)
    drift: pd.DataFrame = field(default_factory=pd.DataFrame)
    obd_front: pd.DataFrame = field(default_factory=pd.DataFrame)
    model: Any = None

    def tables(self) -> dict[str, pd.DataFrame]:
        """The report's tables by file stem, the empty ones left out."""
        return {name: table for name, table in super().tables().items() if not table.empty}

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the front chart (``chart``, PNG) and the trained Q-network (``qnet``, msgpack)."""
        from decisions.recsys.utility.qnet import save_model

        return {"chart": front_chart(self.front, directory / "front.png"),
                **trained_file(directory, "qnet", self.model, save_model)}


def is_estimated(front: pd.DataFrame) -> bool:
    """Whether a front's values are DR estimates (a run on a user's log) rather than exact (the simulator)."""
    return "source" in front and len(front) > 0 and bool((front["source"] == "dr").all())


def front_title(front: pd.DataFrame) -> str:
    """The front chart's title: exact values on the simulator, DR estimates on a user's log."""
    values = "DR estimates on the held-out part of the log" if is_estimated(front) else "exact values on held-out requests"
    return f"Pareto sweep over lambda, {values}"


def front_chart(front: pd.DataFrame, path: Path) -> Path:
    """Engagement against revenue of every method's sweep, production as a star; the title says whether the
    values are exact (the simulator) or DR estimates (a run on a user's log: ``source`` is ``dr``)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (method, scalarisation), rows in front.groupby(["method", "scalarisation"], sort=False):
        label = METHOD_LABELS.get(str(method), str(method))
        if method == "production":
            ax.scatter(rows["revenue"], rows["engagement"], marker="*", s=160, color="black", label=label, zorder=5)
            continue
        style = "--" if scalarisation == "chebyshev" else "-"
        ordered = rows.sort_values("lambda")
        ax.plot(ordered["revenue"], ordered["engagement"], style, marker="o", markersize=3,
                label=f"{label}{' (Chebyshev)' if scalarisation == 'chebyshev' else ''}")
    ax.set_xlabel("revenue per request")
    ax.set_ylabel("engagement (success - hide cost x hides)")
    ax.set_title(front_title(front))
    ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path)
