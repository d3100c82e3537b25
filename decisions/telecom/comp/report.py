"""The result of a CoMP run: the evaluation and conditioning tables, their charts and the metrics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure
from decisions.telecom.comp.study.folder import evaluation_table


@dataclass(kw_only=True)
class CompReport(TablesReport):
    """The result of a CoMP run: the evaluation and conditioning tables (when those stages ran)
    and the metrics.

    Attributes:
        evaluation: one row per task and policy (``scoring.evaluate``), when that stage ran.
        folder: the study folder (experts, data, models).
        conditioning: one row per task, model and target offset, when that stage ran.
        deployable: what deciding later needs (``deployable.Deployable``: the tasks, the deployable
            policies' figures and files; saved beside the report, not reloaded by ``load``).
    """

    evaluation: pd.DataFrame | None = None
    folder: Path = field(default_factory=Path)
    conditioning: pd.DataFrame | None = None
    deployable: Any = None

    def conditioning_references(self) -> dict[str, float]:
        """Mean training-task returns of the expert, multi-task PPO and max-SNR on the conditioning table's
        tasks, from this run's evaluation, else the folder's ``evaluation.csv`` (empty without either)."""
        path = evaluation_table(self.folder)
        if self.conditioning is None or (self.evaluation is None and not path.is_file()):
            return {}
        table = self.evaluation if self.evaluation is not None else pd.read_csv(path)
        rows = table[table.task.isin(set(self.conditioning.task))]
        means = rows.groupby("policy")["return_mean"].mean()
        return {name: float(means[name]) for name in ("expert", "multitask_ppo", "max_snr") if name in means.index}

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Draw the evaluation chart and the conditioning chart (PNG) of the stages that ran, and save
        the deployable policies (``deployable.save_deployable``)."""
        from decisions.telecom.comp.deployable import save_deployable

        written = save_deployable(directory, self.deployable) if self.deployable is not None else {}
        if self.evaluation is not None:
            written["chart"] = save_chart(self.evaluation, directory / "comp.png")
        if self.conditioning is not None:
            written["conditioning_chart"] = save_conditioning_chart(
                self.conditioning, directory / "conditioning.png", self.conditioning_references()
            )
        return written


def save_chart(table: pd.DataFrame, path: Path) -> Path:
    """Bars of mean normalised QoE per policy, training tasks beside unseen tasks."""
    plt = pyplot()

    pivot = table.pivot_table(index="policy", columns="split", values="normalised_qoe", aggfunc="mean")
    pivot = pivot.sort_values(pivot.columns[0])
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    pivot.plot.barh(ax=ax)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("normalised QoE (0 random, 1 best of expert and heuristics)")
    ax.set_title("CoMP cell selection: PromptDT against baselines")
    return save_figure(fig, path)


def save_conditioning_chart(table: pd.DataFrame, path: Path, references: Mapping[str, float] | None = None) -> Path:
    """Mean return over the training tasks against the target-return offset, a line per (Prompt-)DT,
    with ``references`` (policy name -> mean return, e.g. the expert's) as dashed lines for scale."""
    plt = pyplot()

    means = table.pivot_table(index="offset", columns="policy", values="return_mean", aggfunc="mean")
    fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
    means.plot(ax=ax, marker="o")
    for i, (name, value) in enumerate((references or {}).items()):
        ax.axhline(value, color=f"C{len(means.columns) + i}", ls="--", lw=1.0, label=f"{name} (evaluation)")
    ax.legend(fontsize=8)
    ax.set_xlabel("offset added to the best demonstration's return (reward units per episode)")
    ax.set_ylabel("mean episode return, training tasks")
    ax.set_title("Does asking for more return change what the (Prompt-)DTs do?")
    return save_figure(fig, path)
