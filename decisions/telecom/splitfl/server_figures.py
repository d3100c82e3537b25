"""Figures of a study decided with what a server can know: the agent and the oracle against the best
fastest-split rule on the server's forecasts (``study.DEPLOYABLE_RULES``).

The best deployable rule is the one with the shortest mean time to the target over the seeds (then the
higher mean final accuracy), chosen on the scored seeds themselves: in hindsight, in the rule's favour.
A ratio is the mean over seeds of the per-seed ratio of times to the target (``study.time_ratio_of``:
NaN where the rule never reached it, inf where the strategy did not).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from decisions.telecom.splitfl.study import DEPLOYABLE_RULES, time_ratio_of

ORACLE = "fastest"
"""The fastest-split rule on the round's draws: the bound no one can deploy."""

RULES = tuple(f"fastest_{kind}" for kind in DEPLOYABLE_RULES)
"""The deployable rules' strategy names."""


def best_deployable_rule(runs: pd.DataFrame) -> str:
    """The deployable rule of ``runs`` (one row per strategy and seed) with the shortest mean time to the
    target, then the higher mean final accuracy.

    Raises:
        ValueError: ``runs`` holds no deployable rule.
    """
    rules = runs[runs["strategy"].isin(RULES)]
    if rules.empty:
        raise ValueError(f"no deployable rule ({', '.join(RULES)}) among the runs")
    means = rules.groupby("strategy")[["time_to_target_s", "final_test_acc"]].mean()
    return str(means.sort_values(["time_to_target_s", "final_test_acc"], ascending=[True, False]).index[0])


def ratio_vs(runs: pd.DataFrame, name: str, reference: str) -> np.ndarray:
    """Per seed, ``name``'s time to the target over ``reference``'s (``time_ratio_of``), seeds in order."""
    times = runs.pivot_table(index="seed", columns="strategy", values="time_to_target_s", aggfunc="first")
    return np.array([time_ratio_of(a, b) for a, b in zip(times[name], times[reference], strict=True)])


def deployable_figures(runs: pd.DataFrame, agent: str) -> dict[str, float]:
    """The study's figures against the best deployable rule (module docstring).

    ``server_time_to_target_s_<s>`` and ``server_dropout_rate_<s>`` (means over seeds) for each deployable
    rule, the oracle and ``agent``; ``best_deployable_rule_index`` (in ``RULES``);
    ``time_to_target_vs_best_deployable_rule`` (``agent``'s ratio, with ``_worst`` its largest over seeds)
    and ``oracle_time_to_target_vs_best_deployable_rule``; ``dropout_rate_best_deployable_rule`` and
    ``dropout_rate_agent_vs_best_deployable_rule`` (agent minus rule: at most 0 is no worse).
    """
    best = best_deployable_rule(runs)
    figures: dict[str, float] = {}
    means = runs.groupby("strategy")[["time_to_target_s", "dropout_rate"]].mean()
    for name in (*RULES, ORACLE, agent):
        if name in means.index:
            figures[f"server_time_to_target_s_{name}"] = float(means.loc[name, "time_to_target_s"])
            figures[f"server_dropout_rate_{name}"] = float(means.loc[name, "dropout_rate"])
    mine = ratio_vs(runs, agent, best)
    figures["best_deployable_rule_index"] = float(RULES.index(best))
    figures["time_to_target_vs_best_deployable_rule"] = float(np.mean(mine))
    figures["time_to_target_vs_best_deployable_rule_worst"] = float(np.max(mine)) if len(mine) else math.nan
    if ORACLE in means.index:
        figures["oracle_time_to_target_vs_best_deployable_rule"] = float(np.mean(ratio_vs(runs, ORACLE, best)))
    figures["dropout_rate_best_deployable_rule"] = float(means.loc[best, "dropout_rate"])
    figures["dropout_rate_agent_vs_best_deployable_rule"] = float(
        means.loc[agent, "dropout_rate"] - means.loc[best, "dropout_rate"])
    return figures
