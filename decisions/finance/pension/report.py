"""The result of a pension ALM run: tidy tables the app charts, headline metrics, files."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from decisions.finance.pension.simulator import Trajectory
from decisions.kit.report import TablesReport, pyplot, save_figure
from decisions.kit.run_files import policy_files

FAN_PERCENTILES: tuple[int, ...] = (5, 25, 50, 75, 95)


def funding_fan(trajectory: Trajectory, percentiles: Sequence[int] = FAN_PERCENTILES) -> pd.DataFrame:
    """Funding-ratio percentiles per month.

    Returns:
        One row per month ``0 .. N`` with ``month``, ``year``, ``mean`` and ``p5`` ... ``p95``.
    """
    ratio = np.asarray(trajectory.funding_ratio, dtype=float)  # (P, N + 1)
    months = np.arange(ratio.shape[1])
    table = {"month": months, "year": months / 12.0, "mean": ratio.mean(axis=0)}
    for q, row in zip(percentiles, np.percentile(ratio, percentiles, axis=0), strict=True):
        table[f"p{q}"] = row
    return pd.DataFrame(table)


def allocation(trajectory: Trajectory, asset_names: Sequence[str]) -> pd.DataFrame:
    """Mean portfolio weights and contribution rate per month (wide: one column per asset).

    Returns:
        One row per month ``0 .. N - 1`` with ``month``, ``year``, one column per asset
        (mean weight over paths) and ``contribution_rate`` (mean).
    """
    weights = np.asarray(trajectory.weights, dtype=float).mean(axis=0)  # (N, A)
    months = np.arange(weights.shape[0])
    table: dict[str, Any] = {"month": months, "year": months / 12.0}
    for i, name in enumerate(asset_names):
        table[name] = weights[:, i]
    table["contribution_rate"] = np.asarray(trajectory.contribution_rate, dtype=float).mean(axis=0)
    return pd.DataFrame(table)


def allocation_long(frame: pd.DataFrame, asset_names: Sequence[str]) -> pd.DataFrame:
    """``allocation`` in long form (``month, year, asset, weight``) for stacked-area charts."""
    return frame.melt(id_vars=["month", "year"], value_vars=list(asset_names), var_name="asset", value_name="weight")


@dataclass(kw_only=True)
class PensionReport(TablesReport):
    """Everything a pension run produced.

    Attributes:
        comparison: one row per method (index ``method``): ``n, mean, stderr, ci95_low,
            ci95_high`` and, against the fixed mix, ``diff_mean, diff_stderr`` (paired).
        funding_fan: funding-ratio percentiles per month (SNAPO policy).
        allocation: mean weights and contribution rate per month (SNAPO policy).
        fixed_mix_allocation: the same for the fixed-mix baseline.
        key_rate_sensitivity: ``tenor, rate, dV_dr, dV_per_bp`` (one reverse pass).
        asset_sensitivity: ``asset, parameter, value, dV_dinput``.
        correlation_sensitivity: ``first, second, value, dV_dinput``.
        input_sensitivity: ``input, value, dV_dinput`` (scalars).
        liability_risk: ``tenor, key_rate_duration, dv01`` of today's liability.
        training_curve: SNAPO training log.
        metrics: headline figures recorded in the run store.
        policy: the trained SNAPO policy (``TrainedPensionPolicy``) when one was trained.
        scenario: the run's validated scenario, what deciding on its policies needs (saved as
            ``scenario.json``, not reloaded by ``load``).
    """

    comparison: pd.DataFrame
    funding_fan: pd.DataFrame
    allocation: pd.DataFrame
    fixed_mix_allocation: pd.DataFrame
    key_rate_sensitivity: pd.DataFrame
    asset_sensitivity: pd.DataFrame
    correlation_sensitivity: pd.DataFrame
    input_sensitivity: pd.DataFrame
    liability_risk: pd.DataFrame
    training_curve: pd.DataFrame | None = None
    policy: Any = None
    scenario: Any = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the chart (PNG), the scenario (JSON) and, when SNAPO ran, the trained policy (msgpack)."""
        from decisions.finance.pension.snapo_policy import save_policy

        return {"chart": save_chart(self, directory / "pension.png"),
                **policy_files(directory, "snapo_policy", self.policy, save_policy, self.scenario)}


def save_chart(report: PensionReport, path: Path) -> Path:
    """Draw the funding-ratio fan and the mean allocation over time to a PNG."""
    plt = pyplot()

    fan, alloc = report.funding_fan, report.allocation
    assets = [c for c in alloc.columns if c not in {"month", "year", "contribution_rate"}]
    fig, (ax_fan, ax_mix) = plt.subplots(2, 1, figsize=(10, 7), sharex=True, constrained_layout=True)
    ax_fan.fill_between(fan["year"], fan["p5"], fan["p95"], color="tab:blue", alpha=0.15, label="p5-p95")
    ax_fan.fill_between(fan["year"], fan["p25"], fan["p75"], color="tab:blue", alpha=0.3, label="p25-p75")
    ax_fan.plot(fan["year"], fan["p50"], color="tab:blue", label="median")
    ax_fan.set_ylabel("funding ratio")
    ax_fan.set_title("Funding ratio under the SNAPO policy")
    ax_fan.legend(loc="upper left", fontsize=8)
    ax_mix.stackplot(alloc["year"], *[alloc[a] for a in assets], labels=assets)
    ax_mix.set_ylabel("mean weight")
    ax_mix.set_xlabel("year")
    ax_mix.set_title("Mean allocation over time")
    ax_mix.legend(loc="upper left", fontsize=7, ncol=4)
    return save_figure(fig, path)
