"""``decisions bench wealth``: the exact DP, the funding-ratio rule and the MetaRL planner.

Printed as one JSON object by ``decisions bench wealth --json``:

- ``dp_single_goal_value``: P[W(10) >= 200] from W0 = 100 on the default market (15 frontier
  portfolios, rho = 3, +-3 s.d. grid), with ``dp_single_goal_states`` and
  ``dp_single_goal_ms`` (best of 5 solves);
- ``dp_multi_goal_value``: expected utility of ``EXAMPLE_MULTI_GOAL`` (3 goals, partial options,
  infusions), with its states and solve time;
- ``dp_policy_mc_*``: the DP tables played on continuous wealth (nearest node), 20k common paths;
- ``rule_*``: the funding-ratio rule tuned on ``RULE_TRAIN_PROBLEMS`` training problems of every
  family (its parameters ``rule_margin``, ``rule_r1``, ``rule_r2``);
- ``metarl_*``: the shipped planner (``planner.DEFAULT_PLANNER_PATH``; its training in
  ``planner_*``) on ``HELD_OUT_PER_FAMILY`` held-out problems of each family, against the DP
  and the rule on common paths (``compare.headline``), and per family
  ``family_<name>_{planner_vs_dp,rule_vs_dp,planner_vs_rule}``;
- ``regime_shift_*``: the same planner under ``SHIFTED_MARKET`` against the DP solved for that market;
- ``beyond_*``: goal costs under persistent stochastic inflation (``beyond.py``): the planner
  against a glide path with greedy funding and the rule.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from decisions.core.bench_row import Row
from decisions.core.progress import Progress
from decisions.finance.wealth.beyond import Inflation, score_beyond
from decisions.finance.wealth.compare import family_table, headline, score_families
from decisions.finance.wealth.dp import solve
from decisions.finance.wealth.families import (
    FAMILIES,
    client_keys,
    held_out_problems,
    problem_key,
    sample_problems,
)
from decisions.finance.wealth.market import DEFAULT_COVARIANCE, DEFAULT_MEANS, Market
from decisions.finance.wealth.planner import DEFAULT_PLANNER_PATH, default_planner, planner_training
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.rule import FundingRule, rule_policy, tune_rule
from decisions.finance.wealth.simulate import dp_policy, draw_normals
from decisions.finance.wealth.study import comparison_figures, score_policies

EXAMPLE_MULTI_GOAL: dict[str, Any] = {
    "horizon": 8,
    "cash_flows": [10.0] * 4 + [0.0] * 4,
    "goals": [
        {"year": 2, "options": [{"cost": 20.0, "utility": 10.0}, {"cost": 40.0, "utility": 15.0}]},
        {"year": 5, "options": [{"cost": 60.0, "utility": 30.0}]},
        {"year": 8, "options": [{"cost": 50.0, "utility": 15.0}, {"cost": 100.0, "utility": 35.0}]},
    ],
}
"""A three-goal client (partial options at years 2 and 8, infusions of 10 in years 0-3)."""


RULE_TRAIN_PROBLEMS = 48
"""Training problems (family ``mixed``, training seeds) the rule is tuned on."""
HELD_OUT_PER_FAMILY = 8
"""Held-out problems per family (8 families: 64 problems)."""
REGIME_PER_FAMILY = 2
"""Held-out problems per family under the shifted market."""
SHIFTED_MARKET = Market(
    means=[m - 0.01 for m in DEFAULT_MEANS],
    covariance=[[1.3 * c for c in row] for row in DEFAULT_COVARIANCE],
)
"""Another regime: every fund's mean 1 point lower, every variance and covariance 30 % higher."""


def tuned_rule(paths: int = 1_000) -> tuple[FundingRule, float]:
    """The funding-ratio rule tuned on ``RULE_TRAIN_PROBLEMS`` training problems of every family."""
    train = sample_problems(RULE_TRAIN_PROBLEMS, "mixed")
    return tune_rule(train, [draw_normals(20 + i, paths, p.horizon) for i, p in enumerate(train)])


def multi_goal_problem(initial_wealth: float = 100.0) -> WealthProblem:
    """``EXAMPLE_MULTI_GOAL`` starting from ``initial_wealth``."""
    return WealthProblem.parse({**EXAMPLE_MULTI_GOAL, "initial_wealth": initial_wealth})


def _solve_timed(problem: WealthProblem, repeats: int = 5) -> tuple[Any, float]:
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = solve(problem)
        best = min(best, time.perf_counter() - start)
    return result, best * 1e3


def run_bench(
    progress: Progress | None = None,
    *,
    paths: int = 20_000,
    eval_paths: int = 4_000,
    per_family: int = HELD_OUT_PER_FAMILY,
    families: Sequence[str] = FAMILIES,
    tune: bool = True,
    timing_repeats: int = 5,
) -> dict[str, Any]:
    """Measure the wealth figures (see the module docstring).

    Args:
        progress: optional ``(task, done, total)`` callback.
        paths: common Monte Carlo paths of the DP and rule figures on the example problems.
        eval_paths: common paths per held-out problem.
        per_family: held-out problems per family.
        families: which families (all by default).
        tune: tune the funding-ratio rule on its training problems (several minutes); False
            takes ``FundingRule``'s defaults, which are the tuned values.
        timing_repeats: the DP solve times are the best of this many solves.

    Returns:
        A flat dict of figures.
    """
    report = progress or (lambda task, done, total: None)
    figures: dict[str, Any] = {}
    report("DP", 0, 2)
    single = WealthProblem.parse({"horizon": 10, "initial_wealth": 100.0, "target": 200.0})
    result, ms = _solve_timed(single, timing_repeats)
    figures.update(
        dp_single_goal_value=float(result.value),
        dp_single_goal_states=int(len(result.wealth)),
        dp_single_goal_ms=ms,
        dp_rho=float(single.rho),
        dp_portfolios=int(single.market.n_portfolios),
    )
    single_scores = comparison_figures(
        score_policies(single, {"dp": dp_policy(result)}, draw_normals(0, paths, single.horizon))[1]
    )
    figures.update(
        dp_policy_mc_single_goal=single_scores["expected_utility_dp"],
        dp_policy_mc_single_goal_stderr=single_scores["stderr_dp"],
    )
    report("DP", 1, 2)
    multi = multi_goal_problem()
    multi_result, multi_ms = _solve_timed(multi, timing_repeats)
    figures.update(
        dp_multi_goal_value=float(multi_result.value),
        dp_multi_goal_states=int(len(multi_result.wealth)),
        dp_multi_goal_ms=multi_ms,
    )
    report("DP", 2, 2)
    report("funding-ratio rule", 0, 1)
    rule = tuned_rule()[0] if tune else FundingRule()
    policies = {"dp": dp_policy(multi_result), "funding_rule": rule_policy(multi, rule)}
    scores = comparison_figures(score_policies(multi, policies, draw_normals(1, paths, multi.horizon))[1])
    figures.update(
        dp_policy_mc_multi_goal=scores["expected_utility_dp"],
        dp_policy_mc_multi_goal_stderr=scores["stderr_dp"],
        rule_mc_multi_goal=scores["expected_utility_funding_rule"],
        rule_mc_multi_goal_stderr=scores["stderr_funding_rule"],
        rule_vs_dp_multi_goal=scores["expected_utility_funding_rule"] / scores["expected_utility_dp"],
        rule_margin=float(rule.margin),
        rule_r1=float(rule.r1),
        rule_r2=float(rule.r2),
    )
    report("funding-ratio rule", 1, 1)
    figures.update(planner_figures(rule, progress=report, eval_paths=eval_paths, per_family=per_family, families=families))
    return figures


def planner_figures(
    rule: FundingRule,
    *,
    progress: Progress,
    eval_paths: int,
    per_family: int,
    families: Sequence[str],
) -> dict[str, Any]:
    """The MetaRL planner on held-out families, under a shifted market and beyond the DP."""
    planner = default_planner()
    training = planner_training(DEFAULT_PLANNER_PATH)
    figures: dict[str, Any] = {  # the scalar facts of its training (not the list of stages)
        f"planner_{k}": v for k, v in training.items() if isinstance(v, bool | int | float | str)
    }
    held_out = held_out_problems(per_family, families)
    train_keys = set(client_keys(int(training.get("problems", 0)), "mixed"))
    figures["held_out_in_training"] = sum(problem_key(p) in train_keys for ps in held_out.values() for p in ps)
    scores = score_families(held_out, planner, rule, paths=eval_paths, progress=progress)
    figures.update(headline(scores))
    for row in family_table(scores).itertuples():
        for name in ("planner_vs_dp_mean", "planner_vs_dp_min", "rule_vs_dp_mean", "planner_vs_rule", "dp_ms", "plan_ms"):
            figures[f"family_{row.family}_{name}"] = float(getattr(row, name))
    shifted = held_out_problems(min(REGIME_PER_FAMILY, per_family), families, market=SHIFTED_MARKET)
    regime = score_families(shifted, planner, rule, paths=eval_paths, seed=500, progress=progress)
    ratios = np.array([s.planner_ratio for s in regime])
    figures.update(
        regime_shift_mean_ratio=float(ratios.mean()),
        regime_shift_min_ratio=float(ratios.min()),
        regime_shift_problems=len(regime),
        regime_shift_rule_mean_ratio=float(np.mean([s.rule_ratio for s in regime])),
    )
    beyond_problems = held_out_problems(min(4, per_family), ("many_spread", "long_horizon"))
    problems = [p for ps in beyond_problems.values() for p in ps]
    beyond = score_beyond(problems, planner, rule, Inflation(), paths=eval_paths, seed=900)
    planner_u = np.array([b.planner for b in beyond])
    figures.update(
        beyond_problems=len(beyond),
        beyond_planner_vs_glide_greedy=float(np.mean(planner_u / np.array([b.glide_greedy for b in beyond]))),
        beyond_planner_vs_rule=float(np.mean(planner_u / np.array([b.rule for b in beyond]))),
        beyond_planner_wins=int(sum(b.planner >= max(b.glide_greedy, b.rule) for b in beyond)),
    )
    return figures


SMOKE_BUDGET: dict[str, Any] = {
    "paths": 500, "eval_paths": 200, "per_family": 1, "families": ("single_goal",), "tune": False,
    "timing_repeats": 1,
}
"""A benchmark that runs in seconds (the platform's conformance test): one held-out problem."""


README_ROWS: tuple[Row, ...] = (
    Row(
        "exact DP, single goal (W0 = 100, G = 200, T = 10): P[goal]",
        "{dp_single_goal_value:.4f} on {dp_single_goal_states} nodes in {dp_single_goal_ms:.0f} ms",
    ),
    Row(
        "exact DP, three-goal example: expected utility",
        "{dp_multi_goal_value:.2f} ({dp_multi_goal_states} nodes; its policy on paths {dp_policy_mc_multi_goal:.2f} "
        "+- {dp_policy_mc_multi_goal_stderr:.2f})",
    ),
    Row(
        "MetaRL planner / DP on held-out clients (none in training): mean, worst",
        "{metarl_mean_ratio:.3f}, {metarl_min_ratio:.3f} ({held_out_problems} clients in {held_out_families} "
        "families; clients of the held-out set found in training: {held_out_in_training})",
    ),
    Row(
        "tuned funding-ratio rule / DP, same clients; planner / rule, smallest family margin",
        "{rule_mean_ratio:.3f}; {metarl_vs_rule_min:.3f}",
    ),
    Row(
        "planning time per client, planner vs DP (median, same clients)",
        "{metarl_plan_ms:.0f} ms vs {dp_ms_same_problems:.0f} ms",
    ),
    Row(
        "shifted market (means -1 point, variances +30%): planner / DP re-solved for it",
        "{regime_shift_mean_ratio:.3f} (worst {regime_shift_min_ratio:.3f}; rule {regime_shift_rule_mean_ratio:.3f})",
    ),
    Row(
        "persistent stochastic inflation (beyond the DP): planner / glide path with greedy funding, / rule",
        "{beyond_planner_vs_glide_greedy:.2f}, {beyond_planner_vs_rule:.2f} (planner best on {beyond_planner_wins} "
        "of {beyond_problems} clients)",
    ),
)
"""The README's wealth table (``decisions bench report``). The paper's 97.8% of the DP is over its
own problem families, market and network; the figures here are on ours (``families.py``)."""
