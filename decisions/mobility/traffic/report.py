"""The result of a traffic-signal job: per-run figures for both groups, training curves, phase replays, a chart."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure, trained_file


@dataclass(kw_only=True)
class TrafficReport(TablesReport):
    """Everything a traffic-signal study produced.

    Attributes:
        summary: one row per scenario, pedestrians (bool) and controller: the means over the held-out
            demand seeds of ``runs``' figures, with ``seeds``.
        runs: one row per scenario, pedestrians, controller and held-out seed: vehicles' delay (time
            loss + departure delay + the wait of vehicles never inserted: RESCO's convention) and
            pedestrians' wait (mean, p95, max over individuals), pedestrians' time loss over finished
            walks and the count of unfinished ones, throughput, Jain's index over individual delays
            and over the two group means, the pedestrian/vehicle ratio, simulated seconds per wall second.
        training: one row per agent and log row: the episode return against decisions trained.
        replays: the phase of the first signal of each scenario over the first simulated minutes of
            the first held-out seed, per controller (time_s, phase).
        frontier: the fair agents of the fairness-weight sweep (with the vehicle-only agent at weight
            0): vehicle mean delay against pedestrian p95 and mean wait.
        agents: the trained agents by ``<scenario>/<agent>`` (saved as msgpack policy files).
        selection: with a pedestrian-weight grid, the validation figures the weight was chosen on
            per scenario (controller, ped_weight, veh_delay_mean, ped_wait_p95, chosen); else None.
    """

    summary: pd.DataFrame
    runs: pd.DataFrame
    training: pd.DataFrame
    replays: pd.DataFrame
    frontier: pd.DataFrame
    selection: pd.DataFrame | None = None
    agents: Any = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the trade-off chart (``chart``, PNG) and each agent (``agent_<scenario>_<agent>``, msgpack)."""
        files = {"chart": tradeoff_chart(self.summary, directory / "tradeoff.png")}
        for key, agent in (self.agents or {}).items():
            stem = "agent_" + key.replace("/", "_").replace("-", "_")
            files.update(trained_file(directory, stem, agent, lambda path, a: a.save(path)))
        return files


def tradeoff_chart(summary: pd.DataFrame, path: Path) -> Path:
    """Per scenario with pedestrians: each controller's mean vehicle delay against its pedestrians' p95 wait."""
    plt = pyplot()
    peds = summary[summary["pedestrians"].astype(bool)]
    scenarios = list(dict.fromkeys(peds["scenario"]))
    fig, axes = plt.subplots(1, max(len(scenarios), 1), figsize=(4.2 * max(len(scenarios), 1), 4), squeeze=False)
    for ax, scenario in zip(axes[0], scenarios, strict=False):
        rows = peds[peds["scenario"] == scenario]
        for _, row in rows.iterrows():
            agent = str(row["controller"]).startswith("dqn")
            ax.scatter(row["veh_delay_mean"], row["ped_wait_p95"], marker="o" if agent else "s",
                       color="tab:blue" if agent else "tab:gray")
            ax.annotate(str(row["controller"]), (row["veh_delay_mean"], row["ped_wait_p95"]), fontsize=7)
        ax.set_title(scenario)
        ax.set_xlabel("vehicle mean delay (s)")
        ax.set_ylabel("pedestrian p95 wait (s)")
        ax.set_yscale("symlog", linthresh=10)
    return save_figure(fig, path)
