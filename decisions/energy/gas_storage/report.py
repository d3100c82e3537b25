"""The result of a gas storage job: tidy tables, headline metrics, files and a chart."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure
from decisions.kit.run_files import policy_files


@dataclass(kw_only=True)
class GasStorageReport(TablesReport):
    """Everything a gas storage run produced.

    Attributes:
        comparison: one row per method (index ``method``) with columns ``mean``,
            ``stderr``, ``ci95_low``, ``ci95_high`` (value on common evaluation paths)
            and ``ratio_to_intrinsic``.
        schedule: one row per day: ``date``, ``forward``, ``lp_net_injection``,
            ``lp_inventory`` and, when SNAPO ran, ``snapo_net_injection``
            (mean over paths), ``snapo_inventory`` (mean), ``snapo_inventory_p10``/``p90``,
            ``spot_mean``.
        curve_sensitivity: one row per day: ``date``, ``forward``, ``lp_dV_dF`` and,
            when SNAPO ran, ``snapo_dV_dF`` (decisions held) and ``snapo_dV_dF_full``.
        input_sensitivity: one row per scalar input: ``input``, ``value``, ``dV_dinput``.
        training_curve: SNAPO training log (``step``, ``value``, ``grad_norm``, ``temperature``).
        metrics: headline figures (floats) recorded in the run store.
        policy: the trained SNAPO policy object, when one was trained (saved as
            ``snapo_policy.msgpack``, not reloaded by ``load``).
        scenario: the run's validated scenario, what deciding on its policies needs (saved as
            ``scenario.json``, not reloaded by ``load``).
    """

    comparison: pd.DataFrame
    schedule: pd.DataFrame
    curve_sensitivity: pd.DataFrame
    input_sensitivity: pd.DataFrame
    training_curve: pd.DataFrame | None = None
    policy: Any = None
    scenario: Any = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the chart (PNG), the scenario (JSON) and, when SNAPO ran, the trained policy (msgpack)."""
        from decisions.energy.gas_storage.snapo_policy import save_policy

        return {"chart": save_chart(self, directory / "gas_storage.png"),
                **policy_files(directory, "snapo_policy", self.policy, save_policy, self.scenario)}


def save_chart(report: GasStorageReport, path: Path) -> Path:
    """Draw the schedule (inventory and moves against price) and dV/dF over the year to a PNG."""
    plt = pyplot()

    sched, sens = report.schedule, report.curve_sensitivity
    fig, (ax_inv, ax_sens) = plt.subplots(2, 1, figsize=(11, 7), sharex=True, constrained_layout=True)
    ax_inv.plot(sched["date"], sched["lp_inventory"], label="LP intrinsic inventory", color="tab:gray")
    if "snapo_inventory" in sched:
        ax_inv.plot(sched["date"], sched["snapo_inventory"], label="SNAPO inventory (mean)", color="tab:blue")
        ax_inv.fill_between(
            sched["date"], sched["snapo_inventory_p10"], sched["snapo_inventory_p90"],
            color="tab:blue", alpha=0.15, label="SNAPO inventory p10-p90",
        )
    ax_inv.set_ylabel("inventory")
    ax_price = ax_inv.twinx()
    ax_price.plot(sched["date"], sched["forward"], color="tab:orange", lw=0.8, label="forward")
    ax_price.set_ylabel("price")
    ax_inv.legend(loc="upper left", fontsize=8)
    ax_inv.set_title("Storage schedule against the forward curve")
    ax_sens.plot(sens["date"], sens["lp_dV_dF"], color="tab:gray", label="LP (envelope)")
    if "snapo_dV_dF" in sens:
        ax_sens.plot(sens["date"], sens["snapo_dV_dF"], color="tab:blue", lw=0.9, label="SNAPO (one reverse pass)")
    ax_sens.axhline(0.0, color="black", lw=0.5)
    ax_sens.set_ylabel("dV / dF_t")
    ax_sens.set_title("Sensitivity of the storage value to each forward-curve day")
    ax_sens.legend(loc="upper left", fontsize=8)
    return save_figure(fig, path)
