"""Views of the Split learning page: table shaping and Altair charts of a recorded run's report.

Pure functions of report tables (no Streamlit calls), so they are testable without running the
page. Tables are those of ``decisions.telecom.splitfl.SplitFLReport`` (a recorded run is reopened
with ``app_common.report_loader``):

- ``best_fixed`` / ``fedavg`` / ``default_strategies`` / ``strategy_label``: which strategies the
  page shows by default and how they are named (the largest fixed split is plain FedAvg);
- ``curves`` / ``accuracy_chart``: test accuracy per round or against the simulated wall clock;
- devices, dropouts, fates and energy: :mod:`splitfl_device_views`;
- ``summary_view``: the summary table with readable names and the never-reached target as empty;
- ``headline`` / ``choice_text``: the figures and the line on top of the report.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import altair as alt
import app_common
import numpy as np
import pandas as pd

AGENTS = ("dqn_client", "dqn_round")
"""The headline agents: one split per client, one split per round."""
PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#eeca3b", "#ff9da6",
           "#9d755d", "#bab0ac", "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b", "#17becf",
           "#bcbd22", "#7f7f7f", "#e377c2", "#ff7f0e")
"""Colours of the strategies, by their position in the summary (stable whatever is selected)."""
TIER_ORDER = ("weak", "medium", "strong")
"""The default fleet's tiers, in this order when present (others follow in table order)."""
MEAN_OF_SEEDS = None
"""The ``seed`` argument meaning the mean over every seed."""

_FIXED = re.compile(r"^fixed_(\d+)$")


def fixed_split(name: str) -> int | None:
    """The split of a fixed-split strategy (``"fixed_3"`` -> 3), None for any other strategy."""
    match = _FIXED.match(str(name))
    return int(match.group(1)) if match else None


def fedavg(strategies: Sequence[str]) -> str | None:
    """The largest fixed split (the whole network on the client: plain FedAvg), or None when no fixed split ran."""
    fixed = [(fixed_split(s), s) for s in strategies if fixed_split(s) is not None]
    return max(fixed)[1] if fixed else None


def _time_key(values: pd.Series) -> pd.Series:
    """Times to the target with NaN read as never (inf), for ranking."""
    return values.astype(float).fillna(math.inf)


def best_fixed(summary: pd.DataFrame) -> str | None:
    """The fixed split in hindsight: shortest mean time to the target, then the higher final accuracy.

    Args:
        summary: the report's ``summary`` table (``strategy``, ``time_to_target_s`` (inf: never),
            ``final_test_acc``).

    Returns:
        The strategy name, or None when no fixed split ran. When no fixed split reached the target,
        the most accurate one.
    """
    fixed = summary[summary["strategy"].map(lambda s: fixed_split(s) is not None)]
    if fixed.empty:
        return None
    ranked = fixed.assign(_time=_time_key(fixed["time_to_target_s"]),
                          _acc=fixed["final_test_acc"].astype(float).fillna(-math.inf),
                          _split=fixed["strategy"].map(fixed_split))
    ranked = ranked.sort_values(["_time", "_acc", "_split"], ascending=[True, False, True], kind="stable")
    return str(ranked["strategy"].iloc[0])


def default_strategies(summary: pd.DataFrame) -> list[str]:
    """The strategies drawn by default: the agents, the greedy and fastest-split rules, the best fixed split and FedAvg.

    Args:
        summary: the report's ``summary`` table.

    Returns:
        Those present, in that order, each once (the best fixed split may be FedAvg).
    """
    names = [str(s) for s in summary["strategy"]]
    wanted = [*AGENTS, "greedy", "fastest", best_fixed(summary), fedavg(names)]
    return [s for s in dict.fromkeys(wanted) if s is not None and s in names]


def strategy_label(name: str, fedavg_name: str | None = None) -> str:
    """Readable name of a strategy.

    Args:
        name: ``fixed_<k>``, ``random``, ``greedy``, ``fastest``, ``dqn_round``, ``dqn_client``, ``dqn_client_m<M>``,
            ``dqn_client_decay<d>`` (or another name, returned as it is).
        fedavg_name: the run's largest fixed split, labelled FedAvg.

    Returns:
        E.g. ``"split 3"``, ``"FedAvg (split 9)"``, ``"DQN per client, committee of 5"``.
    """
    name = str(name)
    split = fixed_split(name)
    if split is not None:
        return f"FedAvg (split {split})" if name == fedavg_name else f"split {split}"
    fixed_names = {"random": "random split", "greedy": "greedy rule", "fastest": "fastest split per client",
                   "dqn_round": "DQN per round", "dqn_client": "DQN per client"}
    if name in fixed_names:
        return fixed_names[name]
    for agent in AGENTS:
        rest = name.removeprefix(agent + "_")
        if rest == name:
            continue
        base = fixed_names[agent]
        if re.fullmatch(r"m\d+", rest):
            return f"{base}, committee of {rest[1:]}"
        if rest.startswith("decay"):
            return f"{base}, decay {rest.removeprefix('decay')}"
    return name


def labels(summary: pd.DataFrame) -> dict[str, str]:
    """Every strategy of the summary -> its label (``strategy_label``), in the summary's order."""
    names = [str(s) for s in summary["strategy"]]
    top = fedavg(names)
    return {s: strategy_label(s, top) for s in names}


def colours(summary: pd.DataFrame) -> dict[str, str]:
    """Label -> colour of every strategy of the summary, by its position (the same whatever is selected)."""
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(labels(summary).values())}


def colour_encoding(frame: pd.DataFrame, palette: Mapping[str, str] | None, *, title: str | None = None) -> alt.Color:
    """The colour encoding of the ``label`` column: the palette's colours in the frame's order."""
    present = list(dict.fromkeys(frame["label"])) if "label" in frame else []
    scale = (alt.Scale(domain=present, range=[palette.get(s, "#7f7f7f") for s in present])
             if palette is not None and present else alt.Scale(domain=present))
    return alt.Color("label:N", title=title, sort=present, scale=scale,
                     legend=alt.Legend(orient="bottom", columns=3, labelLimit=0))


def _kind(name: str) -> str:
    return "agent" if str(name).startswith("dqn") else "baseline"


def seeds(rounds: pd.DataFrame) -> list[int]:
    """The seeds of a run's ``rounds`` table, ascending."""
    return sorted(int(s) for s in rounds["seed"].unique()) if "seed" in rounds else []


def of_seed(frame: pd.DataFrame, seed: int | None) -> pd.DataFrame:
    return frame if seed is None or "seed" not in frame else frame[frame["seed"] == seed]


def curves(rounds: pd.DataFrame, strategies: Sequence[str], *, seed: int | None = MEAN_OF_SEEDS,
           names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """Per strategy and round: test accuracy, the simulated wall clock, participants and dropouts.

    Args:
        rounds: the report's ``rounds`` table.
        strategies: which strategies, in display order.
        seed: one seed, or ``MEAN_OF_SEEDS`` (None): the mean over the seeds at each round.
        names: strategy -> label (default ``strategy_label``).

    Returns:
        ``strategy, label, kind (agent | baseline), round, test_acc, wall_clock_s, round_time_s,
        participants, dropouts``, strategies in the order given, rounds ascending.
    """
    columns = ["strategy", "label", "kind", "round", "test_acc", "wall_clock_s", "round_time_s",
               "participants", "dropouts"]
    rows = of_seed(rounds, seed)
    rows = rows[rows["strategy"].isin(list(strategies))]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    values = ["test_acc", "wall_clock_s", "round_time_s", "participants", "dropouts"]
    mean = rows.groupby(["strategy", "round"], sort=False)[values].mean().reset_index()
    order = {s: i for i, s in enumerate(strategies)}
    mean = mean.sort_values(["strategy", "round"], key=lambda c: c.map(order) if c.name == "strategy" else c,
                            kind="stable", ignore_index=True)
    top = fedavg([str(s) for s in rounds["strategy"].unique()])
    mean["label"] = [(names or {}).get(s) or strategy_label(s, top) for s in mean["strategy"]]
    mean["kind"] = mean["strategy"].map(_kind)
    return mean[columns]


def accuracy_chart(curve: pd.DataFrame, *, x: str = "round", log_x: bool = False,
                   palette: Mapping[str, str] | None = None, target: float | None = None,
                   height: int = 340) -> alt.LayerChart:
    """Test accuracy of every strategy against the round or the simulated wall clock.

    One line per strategy (agents solid, baselines dashed), a dotted rule at the target accuracy
    when given.

    Args:
        curve: ``curves``' table.
        x: ``"round"`` or ``"wall_clock_s"``.
        log_x: a log time axis (the fixed splits' clocks differ by orders of magnitude).
        palette: label -> colour (``colours``).
        target: the target test accuracy, if known.
        height: the chart's height in pixels.

    Returns:
        The line layer (and the target rule).
    """
    if x not in ("round", "wall_clock_s"):
        raise ValueError(f"x must be 'round' or 'wall_clock_s', got {x!r}")
    axis = (alt.X("round:Q", title="round", axis=alt.Axis(tickMinStep=1)) if x == "round" else
            alt.X("wall_clock_s:Q", title="wall-clock time (s, simulated fleet)",
                  scale=alt.Scale(type="log") if log_x else alt.Scale(zero=True)))
    tooltip = [alt.Tooltip("label:N", title="strategy"), alt.Tooltip("round:Q"),
               alt.Tooltip("test_acc:Q", title="test accuracy", format=".3f"),
               alt.Tooltip("wall_clock_s:Q", title="wall clock (s)", format=",.1f"),
               alt.Tooltip("round_time_s:Q", title="round time (s)", format=",.2f"),
               alt.Tooltip("dropouts:Q", format=".1f")]
    lines = alt.Chart(curve).mark_line(point=alt.OverlayMarkDef(size=25, filled=True)).encode(
        x=axis,
        y=alt.Y("test_acc:Q", title="test accuracy", scale=alt.Scale(zero=False)),
        color=colour_encoding(curve, palette),
        strokeDash=alt.StrokeDash("kind:N", legend=None,
                                  scale=alt.Scale(domain=["agent", "baseline"], range=[[1, 0], [5, 3]])),
        detail="strategy:N", order="round:Q", tooltip=tooltip,
    )
    layers: list[alt.Chart] = [lines]
    if target is not None and math.isfinite(target):
        layers.append(alt.Chart(pd.DataFrame({"target": [float(target)]})).mark_rule(
            color="black", strokeDash=[2, 2]).encode(y="target:Q", tooltip=[alt.Tooltip("target:Q", format=".3f")]))
    return alt.layer(*layers).properties(height=height)


def tiers(frame: pd.DataFrame, prefix: str = "split_") -> list[str]:
    """The tier names of a table's ``<prefix><tier>`` columns (``weak, medium, strong`` first)."""
    found = [str(c)[len(prefix):] for c in frame.columns if str(c).startswith(prefix)]
    return [t for t in TIER_ORDER if t in found] + [t for t in found if t not in TIER_ORDER]


SUMMARY_COLUMNS = (
    "final_test_acc", "final_test_acc_std", "best_test_acc", "time_to_target_s", "time_to_target_s_std",
    "total_time_s", "mean_round_s", "dropout_rate", "straggler_rate", "refused_rate", "offline_rate",
    "battery_deaths", "deadline_rounds", "mb_per_round", "mean_split",
)
"""The summary's figures in the order the page lists them (the per-tier energies follow)."""


def summary_view(summary: pd.DataFrame) -> pd.DataFrame:
    """The summary table for display: label and role first, a never-reached target as empty.

    Args:
        summary: the report's ``summary`` table.

    Returns:
        ``strategy, label, role, reached_target`` then ``SUMMARY_COLUMNS`` present and the per-tier
        energies; ``time_to_target_s`` is NaN where the target was never reached (inf in the run),
        and so is its spread.
    """
    view = summary.copy()
    names = labels(summary)
    best, top = best_fixed(summary), fedavg(list(names))
    view["label"] = view["strategy"].map(names)

    def role(name: str) -> str:
        parts = []
        if name in AGENTS:
            parts.append("agent")
        elif name.startswith("dqn"):
            parts.append("agent ablation")
        if name == best:
            parts.append("best fixed split")
        if name == top:
            parts.append("FedAvg")
        return ", ".join(parts)

    view["role"] = view["strategy"].map(role)
    times = view["time_to_target_s"].astype(float)
    view["reached_target"] = np.isfinite(times)
    view["time_to_target_s"] = times.where(np.isfinite(times))
    if "time_to_target_s_std" in view:
        spread = view["time_to_target_s_std"].astype(float)
        view["time_to_target_s_std"] = spread.where(np.isfinite(spread))
    energy = [f"energy_j_per_round_{t}" for t in tiers(summary, "energy_j_per_round_")]
    columns = ["strategy", "label", "role", "reached_target", *[c for c in SUMMARY_COLUMNS if c in view], *energy]
    return view[columns].reset_index(drop=True)


HEADLINE = (
    ("time_to_target_ratio_vs_best_fixed", "Time to target vs best fixed split", "{:.2f}×"),
    ("final_test_acc_vs_best_fixed", "Final accuracy vs best fixed split", "{:.3f}×"),
    ("dropout_rate_agent", "Agent's dropout rate", "{:.1%}"),
    ("split_equivalence_max_err", "Split vs unsplit max error", "{:.1e}"),
    ("centralised_test_acc", "Centralised test accuracy", "{:.1%}"),
)
"""``(metric, label, format)`` of the headline figures, in display order."""


def headline(metrics: Mapping[str, float]) -> list[tuple[str, str, str | None]]:
    """The headline figures as ``(label, value, delta)`` for ``st.metric``; ``"n/a"`` when missing.

    A run whose agent or best fixed split never reached the target records no time ratio (the job
    leaves undefined figures out), so that tile reads ``"n/a"``.
    """
    return app_common.format_figures(metrics, HEADLINE, missing="n/a")


def choice_text(summary: pd.DataFrame, metrics: Mapping[str, float]) -> str:
    """One line naming the best fixed split and FedAvg, and whether the target was reached.

    Args:
        summary: the report's ``summary`` table.
        metrics: the run's metrics (``time_to_target_ratio_vs_best_fixed`` absent: undefined).
    """
    names = labels(summary)
    best, top = best_fixed(summary), fedavg(list(names))
    parts = []
    if best is not None:
        times = summary.set_index("strategy")["time_to_target_s"].astype(float)
        reached = math.isfinite(float(times.loc[best]))
        how = (f"reaches the target in {float(times.loc[best]):,.1f} s" if reached else
               "no fixed split reaches the target; chosen on final accuracy")
        also = "; it is plain FedAvg, the whole network on the client" if best == top else ""
        parts.append(f"Best fixed split in hindsight: **{names[best]}** ({how}{also}).")
    if top is not None and top != best:
        parts.append(f"FedAvg is **{names[top]}** (the whole network on the client).")
    if "time_to_target_ratio_vs_best_fixed" not in metrics:
        parts.append("No time ratio: the agent or the best fixed split did not reach the target accuracy.")
    return " ".join(parts)


def target_accuracy(metrics: Mapping[str, float], config: Mapping[str, Any] | None = None) -> float | None:
    """The target test accuracy: the run's ``target_share`` (default 0.95) of the centralised accuracy, if known."""
    central = metrics.get("centralised_test_acc")
    if central is None or not math.isfinite(float(central)):
        return None
    share = ((config or {}).get("training") or {}).get("target_share", 0.95)
    return float(share) * float(central)
