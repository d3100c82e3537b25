"""The result of a building job: KPI tables, hourly trajectories, explanations, files and charts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from decisions.jobs.record import save_tables  # noqa: E402


@dataclass
class BuildingReport:
    """Everything a building run produced.

    Attributes:
        kpis: one row per controller (baselines, then every agent seed ``<agent>_seed<k>``), the
            CityLearn KPIs divided by no battery, ``saving_fraction_of_lp``, costs and savings.
        agents: one row per agent: mean and std over seeds of cost ratio and
            ``saving_fraction_of_lp``, train seconds, on/off-policy.
        hourly: long table of every controller's hourly trajectory on the held-out window
            (``controller``, ``date``, ``hour``, ``price``, ``load``, ``pv``, ``net_load``,
            ``battery``, ``soc``, ``cost``, ...).
        training: long table of training curves (``agent``, ``iteration``, ``seed``, metrics).
        importance: per feature group of the explained agent, IG and permutation importance.
        forecast_sensitivity: per forecast feature, mean |d action / d feature|.
        rules: the surrogate tree's rules as text.
        metrics: headline figures (floats) for the run store.
        explained: name of the explained agent seed.
        policies: agent name -> ``TrainResult`` (for saving).
    """

    kpis: pd.DataFrame
    agents: pd.DataFrame
    hourly: pd.DataFrame
    training: pd.DataFrame
    importance: pd.DataFrame
    forecast_sensitivity: pd.DataFrame
    rules: str = ""
    metrics: dict[str, float] = field(default_factory=dict)
    explained: str = ""
    policies: dict[str, Any] = field(default_factory=dict)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The report's tables by file stem."""
        return {
            "kpis": self.kpis.reset_index(),
            "agents": self.agents.reset_index(),
            "hourly": self.hourly,
            "training": self.training,
            "importance": self.importance,
            "forecast_sensitivity": self.forecast_sensitivity,
        }

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write every table as CSV, the rules as text and the chart as PNG into ``directory``.

        Returns:
            Artifact name -> path of each file written.
        """
        folder = Path(directory)
        out = save_tables(folder, self.tables())
        rules = folder / "surrogate_rules.txt"
        rules.write_text(self.rules + "\n")
        out["surrogate_rules"] = rules
        chart = folder / "building.png"
        self.chart().savefig(chart, dpi=110, bbox_inches="tight")
        out["chart"] = chart
        return out

    def chart(self) -> Figure:
        """Cost ratio per controller (left) and the first held-out week of the best agent (right)."""
        fig = Figure(figsize=(13, 4.2))
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2]})
        costs = self.kpis["cost"].sort_values()
        left.barh(costs.index.astype(str), costs.values, color="#4c72b0")
        left.axvline(1.0, color="black", lw=0.8)
        left.set_xlabel("cost / no battery")
        left.set_title("Held-out cost by controller")
        week = self.hourly[self.hourly["controller"].isin(["perfect_foresight", self.explained])]
        for name, frame in week.groupby("controller"):
            frame = frame.head(168)
            right.plot(frame["date"], frame["soc"], label=f"SoC {name}")
        first = self.hourly[self.hourly["controller"] == "no_battery"].head(168)
        twin = right.twinx()
        twin.step(first["date"], first["price"], color="grey", lw=0.8, where="post", label="price")
        twin.set_ylabel("$/kWh")
        right.set_ylabel("state of charge")
        right.set_title("First held-out week")
        right.legend(loc="upper left", fontsize=8)
        fig.autofmt_xdate()
        return fig
