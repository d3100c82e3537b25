"""Chronic care's report: the study's tables, with a chart of the TTC curves per method."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure

CHART_METHODS = ("optimal", "mb_kappa_aware", "mb_uniform_aware", "bc_kappa_aware", "behaviour", "usual_care")
"""The methods drawn in the TTC chart."""


@dataclass(kw_only=True)
class ChronicReport(TablesReport):
    """Everything a chronic-care run produced (see ``study.Study`` for the tables)."""

    TABLES: ClassVar[tuple[str, ...]] = ("per_seed", "comparison", "ttc_curves", "sweep", "unlearning", "q_values")

    per_seed: pd.DataFrame
    comparison: pd.DataFrame
    ttc_curves: pd.DataFrame
    sweep: pd.DataFrame
    unlearning: pd.DataFrame
    q_values: pd.DataFrame
    train_regime: str

    def save_files(self, directory: Path) -> dict[str, Path]:
        """The TTC curves of each disease in the train regime, one line per method, as a PNG chart."""
        plt = pyplot()
        curves = self.ttc_curves[self.ttc_curves["regime"] == self.train_regime]
        diseases = list(dict.fromkeys(curves["disease"]))
        fig, axes = plt.subplots(1, len(diseases), figsize=(5 * len(diseases), 3.5), squeeze=False)
        for ax, disease in zip(axes[0], diseases, strict=True):
            for method in CHART_METHODS:
                line = curves[(curves["disease"] == disease) & (curves["method"] == method)]
                ax.plot(line["visit"], line["share"], label=method)
            ax.set_title(f"{disease.upper()}: controlled by visit ({self.train_regime})")
            ax.set_xlabel("visit (month)")
            ax.set_ylabel("share controlled")
        axes[0][-1].legend(fontsize=7)
        fig.tight_layout()
        return {"ttc_chart": save_figure(fig, directory / "ttc_curves.png")}
