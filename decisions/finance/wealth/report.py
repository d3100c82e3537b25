"""The result of a wealth-planning run: tidy tables the app charts, headline metrics, files.

Tables (one CSV each): the policy comparison, each goal's funding probabilities, the plan
(portfolio and goal option by year and wealth, DP beside the planner) and the wealth fan
(percentiles per year and policy). ``save_chart`` draws the fan and the planner's portfolio map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from decisions.finance.wealth.dp import OptionSet
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.simulate import Paths
from decisions.kit.report import TablesReport, pyplot, save_figure, trained_file

FAN_PERCENTILES: tuple[int, ...] = (5, 25, 50, 75, 95)


def goal_probabilities(problem: WealthProblem, sets: Sequence[OptionSet], paths: Paths) -> np.ndarray:
    """Per goal and option (0: not funded), the share of paths that took it; shape ``(G, max options + 1)``.

    Bankrupt paths count as funding nothing.
    """
    width = 1 + max((len(g.options) for g in problem.goals), default=0)
    out = np.zeros((len(problem.goals), width))
    n = paths.option.shape[0]
    for t, opts in enumerate(sets):
        taken = paths.option[:, t]
        for index, choice in enumerate(opts.choices):
            share = float(np.sum(taken == index)) / n
            for goal, option in zip(opts.goals, choice, strict=True):
                out[goal, option] += share
        for goal in opts.goals:
            out[goal, 0] += float(np.sum(taken < 0)) / n
    return out


def goal_table(problem: WealthProblem, probabilities: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Long table ``goal, year, option, cost, utility, <policy>...`` of funding probabilities."""
    rows = []
    for g, goal in enumerate(problem.goals):
        menu = [("not funded", 0.0, 0.0)] + [(f"option {i + 1}", o.cost, o.utility) for i, o in enumerate(goal.options)]
        for k, (label, cost, utility) in enumerate(menu):
            row = {"goal": g + 1, "year": goal.year, "option": label, "cost": cost, "utility": utility}
            row.update({name: float(p[g, k]) for name, p in probabilities.items()})
            rows.append(row)
    return pd.DataFrame(rows)


def wealth_fan(paths: Mapping[str, Paths], percentiles: Sequence[int] = FAN_PERCENTILES) -> pd.DataFrame:
    """Wealth percentiles per year for each policy: ``policy, year, mean, p5 .. p95``."""
    frames = []
    for name, p in paths.items():
        table: dict[str, object] = {"policy": name, "year": np.arange(p.wealth.shape[1]), "mean": p.wealth.mean(axis=0)}
        for q, row in zip(percentiles, np.percentile(p.wealth, percentiles, axis=0), strict=True):
            table[f"p{q}"] = row
        frames.append(pd.DataFrame(table))
    return pd.concat(frames, ignore_index=True)


@dataclass(kw_only=True)
class WealthReport(TablesReport):
    """Everything a wealth-planning run produced.

    Attributes:
        comparison: one row per policy: ``policy, expected_utility, stderr, vs_dp`` (many clients:
            means over the clients, and ``clients``, how many were scored).
        goals: funding probability of each goal option under each policy (many clients: with ``client``).
        plan: ``year, wealth, planner_portfolio, planner_option`` (and the DP's, when solved)
            on the planner's table nodes; one client's run only.
        wealth_fan: wealth percentiles per year and policy; one client's run only.
        clients: many clients' run only: one row per client (``batch.run_clients``).
        plans: many clients' run only: one row per client and year (``batch.run_clients``).
        metrics: headline figures recorded in the run store.
        trained: ``(planner, training metadata)`` when the run trained or refined its own planner.
        deployment: what deciding a client's year needs (``deployable.deployment``; saved as
            ``deployment.msgpack`` and ``deployed_planner.msgpack``, not reloaded), when the DP was solved.
    """

    comparison: pd.DataFrame
    goals: pd.DataFrame
    plan: pd.DataFrame | None = None
    wealth_fan: pd.DataFrame | None = None
    clients: pd.DataFrame | None = None
    plans: pd.DataFrame | None = None
    trained: Any = None
    deployment: Any = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the chart (PNG; one client's run), a planner the run trained or refined and the deployment (msgpack)."""
        from decisions.finance.wealth.deployable import save_deployment
        from decisions.finance.wealth.planner import write_planner

        deployed = {} if self.deployment is None else save_deployment(directory, self.deployment)
        chart = {} if self.wealth_fan is None else {"chart": save_chart(self, directory / "wealth.png")}
        return {**chart, **trained_file(directory, "planner", self.trained, lambda path, t: write_planner(path, *t)), **deployed}


def save_chart(report: WealthReport, path: Path) -> Path:
    """Draw the planner's wealth fan and its portfolio map (year x wealth) to a PNG."""
    plt = pyplot()

    fig, (ax_fan, ax_map) = plt.subplots(1, 2, figsize=(12, 4.5), constrained_layout=True)
    fan = report.wealth_fan[report.wealth_fan["policy"] == "planner"]
    ax_fan.fill_between(fan["year"], fan["p5"], fan["p95"], color="tab:green", alpha=0.15, label="p5-p95")
    ax_fan.fill_between(fan["year"], fan["p25"], fan["p75"], color="tab:green", alpha=0.3, label="p25-p75")
    ax_fan.plot(fan["year"], fan["p50"], color="tab:green", label="median")
    ax_fan.set_xlabel("year")
    ax_fan.set_ylabel("wealth (start of year)")
    ax_fan.set_title("Wealth under the MetaRL plan")
    ax_fan.legend(loc="upper left", fontsize=8)
    grid = report.plan[(report.plan["wealth"] > 0) & (report.plan["planner_portfolio"] >= 0)]
    if not grid.empty:
        pivot = grid.pivot_table(index="wealth", columns="year", values="planner_portfolio")
        mesh = ax_map.pcolormesh(pivot.columns, pivot.index, pivot.to_numpy(), shading="nearest", cmap="viridis")
        ax_map.set_yscale("log")
        fig.colorbar(mesh, ax=ax_map, label="portfolio (0 safest)")
    ax_map.set_xlabel("year")
    ax_map.set_ylabel("wealth")
    ax_map.set_title("Planner's portfolio by year and wealth")
    return save_figure(fig, path)
