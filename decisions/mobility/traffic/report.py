"""The result of a traffic-signal job: per-run figures for both groups, training curves, phase replays, a chart."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from decisions.kit.report import TablesReport, pyplot, save_figure, trained_file

AGENT_PREFIXES = ("dqn", "ppo")
"""A controller whose name starts with one of these is a trained agent (DQN or PPO); any other is a baseline."""


def is_agent(controller: str) -> bool:
    """Whether a controller is a trained agent (``dqn_fair``, ``ppo_fair``, ``dqn_fair_w0.5``), not a baseline."""
    return str(controller).startswith(AGENT_PREFIXES)


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
        junctions: what deciding a junction later needs (``junctions``: the signals' layouts, the
            agents' discount and reward scale; saved as ``junctions.msgpack``, not reloaded by ``load``).
        selection: with a pedestrian-weight grid, the validation figures the weight was chosen on
            per scenario (controller, ped_weight, veh_delay_mean, ped_wait_p95, chosen); else None.
    """

    summary: pd.DataFrame
    runs: pd.DataFrame
    training: pd.DataFrame
    replays: pd.DataFrame
    frontier: pd.DataFrame
    selection: pd.DataFrame | None = None
    agents: dict[str, Any] | None = None
    junctions: dict[str, Any] | None = None

    def save_files(self, directory: Path) -> dict[str, Path]:
        """Write the trade-off chart (``chart``, PNG), each agent (``agent_<scenario>_<agent>``, msgpack)
        and the junctions (``junctions``, msgpack)."""
        from decisions.mobility.traffic.junctions import JUNCTIONS_STEM, save_junctions

        files = {"chart": tradeoff_chart(self.summary, directory / "tradeoff.png")}
        for key, agent in (self.agents or {}).items():
            files.update(trained_file(directory, agent_stem(key), agent, lambda path, a: a.save(path)))
        return {**files, **trained_file(directory, JUNCTIONS_STEM, self.junctions, save_junctions)}


def agent_stem(key: str) -> str:
    """The file stem of agent ``<scenario>/<agent>`` (``<scenario>/plain/<agent>`` without pedestrians)."""
    return "agent_" + key.replace("/", "_").replace("-", "_")


WAIT_TICKS = (0, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
"""The labelled ticks of the trade-off chart's (symlog) pedestrian-wait axis, those in range."""


def tradeoff_chart(summary: pd.DataFrame, path: Path) -> Path:
    """Per scenario with pedestrians: each controller's mean vehicle delay against its pedestrians' p95 wait.

    One colour per controller, named in a shared legend (agents as circles, baselines as squares); the
    wait axis is symlog (linear below 10 s) with labelled ticks.
    """
    plt = pyplot()
    peds = summary[summary["pedestrians"].astype(bool)]
    scenarios = list(dict.fromkeys(peds["scenario"]))
    controllers = sorted(dict.fromkeys(peds["controller"].astype(str)), key=lambda c: (not is_agent(c), c))
    colours = plt.get_cmap("tab20" if len(controllers) > 10 else "tab10")
    columns = max(len(scenarios), 1)
    fig, axes = plt.subplots(1, columns, figsize=(4.6 * columns + 0.4, 4.8), squeeze=False, constrained_layout=True)
    handles = {}
    for ax, scenario in zip(axes[0], scenarios, strict=False):
        rows = peds[peds["scenario"] == scenario]
        for _, row in rows.iterrows():
            name = str(row["controller"])
            handles[name] = ax.scatter(row["veh_delay_mean"], row["ped_wait_p95"], s=46, zorder=3,
                                       marker="o" if is_agent(name) else "s", edgecolor="black", linewidth=0.5,
                                       color=colours(controllers.index(name) % colours.N))
        ax.set_title(scenario)
        ax.set_xlabel("vehicle mean delay (s)")
        ax.set_ylabel("pedestrian p95 wait (s)")
        _wait_axis(ax, rows["ped_wait_p95"])
        ax.grid(alpha=0.3)
    named = [c for c in controllers if c in handles]
    fig.legend([handles[c] for c in named], named, loc="outside lower center", ncol=min(len(named), 4),
               fontsize=8, title="agents: circles, baselines: squares", title_fontsize=8, frameon=False)
    return save_figure(fig, path)


def _wait_axis(ax: Any, waits: pd.Series) -> None:
    """A symlog wait axis (linear below 10 s) with the ``WAIT_TICKS`` in its range labelled plainly."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    ax.set_yscale("symlog", linthresh=10)
    values = pd.to_numeric(waits, errors="coerce").dropna()
    top = float(values.max()) if not values.empty else 10.0
    ax.set_ylim(0, top * 1.25 + 1)
    ax.yaxis.set_major_locator(FixedLocator([t for t in WAIT_TICKS if t <= top * 1.25 + 1]))
    ax.yaxis.set_minor_locator(NullLocator())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
