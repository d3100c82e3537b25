"""A traffic study's summary and headline figures, from its per-seed runs and its validation choices.

The headline, per pedestrian scenario ``s``: ``veh_delay_vs_best_heuristic_s`` and
``ped_p95_wait_vs_best_heuristic_s`` (``dqn_fair`` over the heuristic with the lowest mean
vehicle delay), ``fair_beats_fixed_both_s``, ``vehicle_only_ped_p95_vs_fair_s``, with PPO
``ppo_veh_delay_vs_best_heuristic_s`` and ``ppo_ped_p95_wait_vs_best_heuristic_s``, with a grid
``fair_ped_weight_s``; per plain scenario ``nopeds_dqn_vs_max_pressure_s``,
``nopeds_dqn_vs_fixed_s`` and with candidates ``nopeds_dqn_train_seed_s``. Ratios of figures
that were not run are NaN.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from decisions.mobility.traffic.spec import HEURISTICS

if TYPE_CHECKING:
    from decisions.mobility.traffic.spec import StudySettings

__all__ = ["headline_figures", "summarise", "value"]


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """The means of ``runs`` over seeds per scenario, pedestrians and controller, with ``seeds``."""
    keys = ["scenario", "pedestrians", "controller"]
    values = [c for c in runs.columns if c not in (*keys, "seed")]
    grouped = runs.groupby(keys, sort=False)
    summary = grouped[values].mean().reset_index()
    summary.insert(3, "seeds", grouped.size().to_numpy())
    return summary


def value(summary: pd.DataFrame, scenario: str, pedestrians: bool, controller: str, metric: str) -> float:
    """One controller's summary figure on a scenario, or NaN when it was not run."""
    rows = summary[(summary["scenario"] == scenario) & (summary["pedestrians"] == pedestrians)
                   & (summary["controller"] == controller)]  # fmt: skip
    return float(rows[metric].iloc[0]) if len(rows) else math.nan


def _ratio(a: float, b: float) -> float:
    return a / b if math.isfinite(a) and math.isfinite(b) and b > 0 else math.nan


def _chosen(selection: pd.DataFrame, scenario: str, pedestrians: bool, column: str) -> float:
    """``column`` (ped_weight or train_seed) of the candidate chosen for the scenario, or NaN."""
    if selection.empty:
        return math.nan
    rows = selection[(selection["scenario"] == scenario) & (selection["pedestrians"] == pedestrians)
                     & selection["chosen"]]  # fmt: skip
    return float(rows[column].iloc[0]) if len(rows) else math.nan


def _scenario_figures(
    summary: pd.DataFrame, selection: pd.DataFrame, s: str, peds: bool, study: StudySettings
) -> tuple[dict[str, float], str | None]:
    """The headline figures of one scenario of ``scenarios.names`` and its best heuristic."""
    headline: dict[str, float] = {}
    heuristics = [h for h in HEURISTICS if h in study.controllers]
    delays = {h: value(summary, s, peds, h, "veh_delay_mean") for h in heuristics}
    delays = {h: v for h, v in delays.items() if math.isfinite(v)}
    fair_veh = value(summary, s, peds, "dqn_fair", "veh_delay_mean")
    fair_p95 = value(summary, s, peds, "dqn_fair", "ped_wait_p95")
    best = min(delays, key=delays.__getitem__) if delays else None
    if best is not None:
        headline[f"veh_delay_vs_best_heuristic_{s}"] = _ratio(fair_veh, delays[best])
        headline[f"ped_p95_wait_vs_best_heuristic_{s}"] = _ratio(
            fair_p95, value(summary, s, peds, best, "ped_wait_p95")
        )
    fixed_veh = value(summary, s, peds, "fixed", "veh_delay_mean")
    fixed_p95 = value(summary, s, peds, "fixed", "ped_wait_p95")
    if all(math.isfinite(v) for v in (fair_veh, fair_p95, fixed_veh, fixed_p95)):
        headline[f"fair_beats_fixed_both_{s}"] = float(fair_veh < fixed_veh and fair_p95 < fixed_p95)
    else:
        headline[f"fair_beats_fixed_both_{s}"] = math.nan
    if study.vehicle_only:
        headline[f"vehicle_only_ped_p95_vs_fair_{s}"] = _ratio(
            value(summary, s, peds, "dqn_vehicle", "ped_wait_p95"), fair_p95
        )
    chosen = _chosen(selection, s, True, "ped_weight")
    if math.isfinite(chosen):
        headline[f"fair_ped_weight_{s}"] = chosen
    if study.ppo and best is not None:
        for metric, tag in (("veh_delay_mean", "veh_delay"), ("ped_wait_p95", "ped_p95_wait")):
            headline[f"ppo_{tag}_vs_best_heuristic_{s}"] = _ratio(
                value(summary, s, peds, "ppo_fair", metric), value(summary, s, peds, best, metric)
            )
    return headline, best


def headline_figures(
    summary: pd.DataFrame, selection: pd.DataFrame, names: Sequence[str], pedestrians: bool, study: StudySettings
) -> tuple[dict[str, float], dict[str, str]]:
    """The headline (module docstring) and the best heuristic per scenario.

    Args:
        summary: :func:`summarise` of the runs.
        selection: the validation choices (empty without any).
        names: the scenarios' names (``scenarios.names``, the custom one resolved).
        pedestrians: whether those scenarios ran with pedestrians.
        study: the study settings (controllers, vehicle-only, PPO, plain networks).
    """
    headline: dict[str, float] = {}
    best: dict[str, str] = {}
    for s in names:
        figures, heuristic = _scenario_figures(summary, selection, s, pedestrians, study)
        headline.update(figures)
        if heuristic is not None:
            best[s] = heuristic
    for s in study.without_pedestrians:
        dqn = value(summary, s, False, "dqn", "veh_delay_mean")
        for baseline in ("max_pressure", "fixed"):
            other = value(summary, s, False, baseline, "veh_delay_mean")
            headline[f"nopeds_dqn_vs_{baseline}_{s}"] = _ratio(dqn, other)
        seed = _chosen(selection, s, False, "train_seed")
        if math.isfinite(seed):
            headline[f"nopeds_dqn_train_seed_{s}"] = seed
    return headline, best
