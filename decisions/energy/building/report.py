"""The result of a building job: KPI tables, hourly trajectories, explanations, files and charts."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from decisions.energy.building.replay import controller_name, save_policies, seed_name  # noqa: E402
from decisions.kit.report import TablesReport, trained_file  # noqa: E402


def controller_names(table: pd.DataFrame) -> list[str]:
    """``replay.controller_name`` of each row of a table with ``controller`` and ``seed`` columns."""
    return [
        controller_name(c, None if pd.isna(s) else int(s))
        for c, s in zip(table["controller"], table["seed"], strict=True)
    ]


@dataclass(kw_only=True)
class BuildingReport(TablesReport):
    """Everything a building run produced.

    Attributes:
        kpis: one row per controller (baselines, then every agent seed), identified by
            ``controller`` (baseline or agent name) and ``seed`` (the agent seed; empty for a
            baseline), then the CityLearn KPIs divided by no battery, ``saving_fraction_of_lp``,
            costs and savings.
        agents: one row per agent: mean and std over seeds of cost ratio and
            ``saving_fraction_of_lp``, train seconds, on/off-policy, ``explained_seed`` (-1 but
            on the explained agent's row).
        hourly: long table of every controller's hourly trajectory on the held-out window
            (``date``, ``hour``, ``price``, ``load``, ``pv``, ``net_load``, ``battery``, ``soc``,
            ``cost``, ..., ``controller``, ``seed``).
        training: long table of training curves (``agent``, ``iteration``, ``seed``, metrics).
        importance: per feature group of the explained agent, IG and permutation importance.
        forecast_sensitivity: per forecast feature, mean |d action / d feature|.
        rules: the surrogate tree's rules as text.
        metrics: headline figures (floats) for the run store.
        explained: ``(agent, seed)`` of the explained agent seed, or None.
        policies: agent name -> ``TrainResult`` (saved as ``<agent>_seed<k>.msgpack``, not reloaded).
        seeds: seeds per agent.
        deployment: what deciding an hour needs (``deployable.deployment``; saved as
            ``deployment.msgpack``, not reloaded).
    """

    kpis: pd.DataFrame
    agents: pd.DataFrame
    hourly: pd.DataFrame
    training: pd.DataFrame
    importance: pd.DataFrame
    forecast_sensitivity: pd.DataFrame
    rules: str = ""
    explained: tuple[str, int] | None = None
    policies: dict[str, Any] = field(default_factory=dict)
    seeds: int = 0
    deployment: Any = None

    def __post_init__(self) -> None:
        if self.explained is None and "explained_seed" in self.agents:  # a reloaded report
            chosen = self.agents[self.agents["explained_seed"] >= 0]
            if len(chosen):
                self.explained = (str(chosen.index[0]), int(chosen["explained_seed"].iloc[0]))

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the surrogate's rules (text), the chart (PNG), every trained seed and the deployment (msgpack)."""
        from decisions.energy.building.deployable import FILE_STEM, save_deployment

        rules = directory / "surrogate_rules.txt"
        rules.write_text(self.rules + "\n")
        chart = directory / "building.png"
        self.chart().savefig(chart, dpi=110, bbox_inches="tight")
        return {"surrogate_rules": rules, "chart": chart, **save_policies(directory, self.policies, self.seeds),
                **trained_file(directory, FILE_STEM, self.deployment, save_deployment)}

    def chart(self) -> Figure:
        """Cost ratio per controller (left) and the first held-out week of the best agent (right)."""
        fig = Figure(figsize=(13, 4.2))
        left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 2]})
        costs = pd.Series(self.kpis["cost"].to_numpy(), index=controller_names(self.kpis)).sort_values()
        left.barh(costs.index.astype(str), costs.values, color="#4c72b0")
        left.axvline(1.0, color="black", lw=0.8)
        left.set_xlabel("cost / no battery")
        left.set_title("Held-out cost by controller")
        names = pd.Series(controller_names(self.hourly), index=self.hourly.index)
        shown = ["perfect_foresight"] + ([] if self.explained is None else [seed_name(*self.explained)])
        week = self.hourly[names.isin(shown)]
        for name, frame in week.groupby(names[week.index]):
            frame = frame.head(168)
            right.plot(frame["date"], frame["soc"], label=f"SoC {name}")
        first = self.hourly[names == "no_battery"].head(168)
        twin = right.twinx()
        twin.step(first["date"], first["price"], color="grey", lw=0.8, where="post", label="price")
        twin.set_ylabel("$/kWh")
        right.set_ylabel("state of charge")
        right.set_title("First held-out week")
        right.legend(loc="upper left", fontsize=8)
        fig.autofmt_xdate()
        return fig
