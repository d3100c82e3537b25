"""Chronic care's report: the study's tables, with a chart of the TTC curves per method."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure, trained_file

CHART_METHODS = ("optimal", "mb_kappa_aware", "mb_uniform_aware", "cql_kappa_aware", "bc_kappa_aware", "behaviour",
                 "usual_care")
"""The methods drawn in the TTC chart."""


@dataclass(kw_only=True)
class ChronicTables:
    """The tables of a chronic-care study, which its report holds and saves.

    Attributes:
        per_seed: one row per disease, method, regime and data seed (``-1``: exact, no data).
        comparison: one row per disease, method and regime: TTC share within the horizon and exact
            value (``ttc_share``, ``ttc_share_std``, ``value``, ``value_std``, ``seeds``).
        ttc_curves: ``disease``, ``method``, ``regime``, ``visit``, ``share`` (controlled by that visit).
        sweep: the kappa sweep: ``disease``, ``execution_gap``, ``low_share``, ``patients``, ``method``,
            ``ttc_share``, ``ttc_share_std``.
        unlearning: ``disease``, ``patients`` (log size), ``forgotten``, ``equal``, ``unlearn_seconds``,
            ``retrain_seconds``, ``ratio``.
        q_values: the first visit's Q-values of the optimum and the kappa-weighted learner (train regime).
        train_regime: the regime the offline data comes from.
    """

    per_seed: pd.DataFrame
    comparison: pd.DataFrame
    ttc_curves: pd.DataFrame
    sweep: pd.DataFrame
    unlearning: pd.DataFrame
    q_values: pd.DataFrame
    train_regime: str


@dataclass(kw_only=True)
class ChronicReport(TablesReport, ChronicTables):
    """Everything a chronic-care run produced: the study's tables (``ChronicTables``), its figures and
    ``policies``, what deploying its policies needs (``deployable``; saved as ``policies.msgpack``, not
    reloaded by ``load``)."""

    policies: Any = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """The TTC curves of each disease in the train regime, one line per method, as a PNG chart, and
        the deployable policies."""
        from decisions.health.chronic.deployable import FILE_STEM, save_policies

        plt = pyplot()
        curves = self.ttc_curves[self.ttc_curves["regime"] == self.train_regime]
        diseases = list(dict.fromkeys(curves["disease"]))
        fig, axes = plt.subplots(1, len(diseases), figsize=(5 * len(diseases), 3.5), squeeze=False)
        for ax, disease in zip(axes[0], diseases, strict=True):
            for method in CHART_METHODS:
                line = curves[(curves["disease"] == disease) & (curves["method"] == method)]
                if len(line):
                    ax.plot(line["visit"], line["share"], label=method)
            ax.set_title(f"{disease.upper()}: controlled by visit ({self.train_regime})")
            ax.set_xlabel("visit (month)")
            ax.set_ylabel("share controlled")
        axes[0][-1].legend(fontsize=7)
        fig.tight_layout()
        return {"ttc_chart": save_figure(fig, directory / "ttc_curves.png"),
                **trained_file(directory, FILE_STEM, self.policies, save_policies)}
