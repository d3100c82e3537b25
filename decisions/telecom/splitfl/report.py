"""The result of a split-federated learning job: per-run figures, round-by-round curves, a chart."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure, trained_file


@dataclass(kw_only=True)
class SplitFLReport(TablesReport):
    """Everything a split-federated learning study produced.

    Attributes:
        summary: one row per strategy: means over seeds of ``runs``' figures, with the spread of the
            final accuracy and of the time to the target.
        runs: one row per strategy and seed: final and best test accuracy, wall-clock time to the
            target accuracy (inf: never), total and mean round time, dropout (client-rounds not
            trained, any cause), straggler (timed out), refusal (memory) and offline rates, battery
            deaths, MB per round, the mean split of the participants, energy per round per tier.
        rounds: one row per seed, strategy and round: test accuracy, validation loss, round time,
            wall clock, participants, dropouts, reward, and per tier the mean split, battery share,
            CPU share and energy.
        clients: the first seed's per-client rows (strategy, round, client, tier, split, fate,
            battery share, CPU share, energy, time).
        committees: the trained agents by strategy name (saved as msgpack files).
        fleet: the run's fleet and reward (``deployable.fleet_description``), what deciding a round's
            splits later needs (saved as ``fleet.msgpack``, not reloaded by ``load``).
        target_accuracy: the first seed's target test accuracy (the run's share of its centralised
            model's), drawn on the accuracy chart; None when unknown.
    """

    summary: pd.DataFrame
    runs: pd.DataFrame
    rounds: pd.DataFrame
    clients: pd.DataFrame
    committees: Any = None
    fleet: Any = None
    target_accuracy: float | None = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the accuracy chart (``chart``, PNG), each committee (``committee_<name>``, msgpack) and
        the fleet (``fleet``, msgpack)."""
        from decisions.telecom.splitfl.agent import save_committee
        from decisions.telecom.splitfl.deployable import FLEET_STEM, save_fleet

        files = {"chart": accuracy_chart(self.rounds, directory / "accuracy.png", self.target_accuracy)}
        for name, committee in (self.committees or {}).items():
            files.update(trained_file(directory, f"committee_{name}", committee, save_committee))
        return {**files, **trained_file(directory, FLEET_STEM, self.fleet, save_fleet)}


def accuracy_chart(rounds: pd.DataFrame, path: Path, target: float | None = None) -> Path:
    """Test accuracy against wall-clock time (first seed) of the agents, the best fixed splits, FedAvg.

    Every strategy has its own colour (agents solid, baselines dashed), named in a legend beside the
    plot; ``target`` (the target accuracy), when given, is a dotted horizontal line.
    """
    plt = pyplot()
    first = rounds[rounds["seed"] == rounds["seed"].min()]
    names = list(dict.fromkeys(first["strategy"].astype(str)))
    colours = plt.get_cmap("tab10" if len(names) <= 10 else "tab20")
    fig, ax = plt.subplots(figsize=(9, 4.8), constrained_layout=True)
    for i, (name, rows) in enumerate(first.groupby("strategy", sort=False)):
        style = "-" if str(name).startswith("dqn") else "--"
        ax.plot(rows["wall_clock_s"], rows["test_acc"], style, label=str(name), linewidth=1.4,
                color=colours(i % colours.N))
    if target is not None and math.isfinite(target):
        ax.axhline(target, color="black", linestyle=":", linewidth=1.2, label=f"target {target:.3f}")
    ax.set_xscale("log")
    ax.set_xlabel("wall-clock time (s, simulated fleet)")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    return save_figure(fig, path)


def round_rows(seed: int, strategy: str, history: Any, tier_names: tuple[str, ...]) -> pd.DataFrame:
    """``rounds``' rows of one run (``federation.History``)."""
    r = len(history.round_time_s)
    frame: dict[str, Any] = {
        "seed": seed, "strategy": strategy, "round": np.arange(1, r + 1),
        "test_acc": history.test_acc, "val_loss": history.val_loss,
        "round_time_s": history.round_time_s, "wall_clock_s": history.wall_clock_s,
        "participants": history.participated.sum(axis=1),
        "dropouts": (~history.participated).sum(axis=1), "reward": history.reward,
    }
    for k, name in enumerate(tier_names):
        mask = history.tier == k
        if not mask.any():
            continue
        frame[f"split_{name}"] = history.splits[:, mask].mean(axis=1)
        frame[f"battery_{name}"] = history.battery_share[:, mask].mean(axis=1)
        frame[f"cpu_{name}"] = history.cpu_share[:, mask].mean(axis=1)
        frame[f"energy_j_{name}"] = history.energy_j[:, mask].mean(axis=1)
    return pd.DataFrame(frame)


def client_rows(strategy: str, history: Any, tier_names: tuple[str, ...]) -> pd.DataFrame:
    """``clients``' rows of one run."""
    r, n = history.splits.shape
    fate = np.full((r, n), "offline", dtype=object)
    fate[history.eligible] = "missed"
    fate[history.refused] = "refused"
    fate[history.timed_out] = "timed_out"
    fate[history.died] = "battery_out"
    fate[history.participated] = "trained"
    return pd.DataFrame({
        "strategy": strategy,
        "round": np.repeat(np.arange(1, r + 1), n),
        "client": np.tile(np.arange(n), r),
        "tier": np.tile(np.asarray(tier_names, dtype=object)[history.tier], r),
        "split": history.splits.ravel(),
        "fate": fate.ravel(),
        "battery": history.battery_share.ravel(),
        "cpu": history.cpu_share.ravel(),
        "energy_j": history.energy_j.ravel(),
    })
