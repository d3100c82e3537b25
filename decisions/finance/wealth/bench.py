"""``decisions bench wealth``: the exact DP's figures and the funding-ratio rule against it.

Printed as one JSON object by ``decisions bench wealth --json``:

- ``dp_single_goal_value``: P[W(10) >= 200] from W0 = 100 on the default market (15 frontier
  portfolios, rho = 3, +-3 s.d. grid), with ``dp_single_goal_states`` and
  ``dp_single_goal_ms`` (best of 5 solves);
- ``dp_multi_goal_value``: expected utility of ``EXAMPLE_MULTI_GOAL`` (3 goals, partial options,
  infusions), with its states and solve time;
- ``dp_policy_mc_*``: the DP tables played on continuous wealth (nearest node), 20k common paths;
- ``rule_mc_multi_goal`` and ``rule_vs_dp_multi_goal``: the funding-ratio rule tuned on two
  variants of the example (W0 80 and 130), scored on the same 20k paths.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from decisions.finance.wealth.dp import solve
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.rule import rule_policy, tune_rule
from decisions.finance.wealth.simulate import dp_policy, draw_normals, evaluate, mean_and_se

ProgressFn = Callable[[str, int, int], None]

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


def run_bench(progress: ProgressFn | None = None, *, paths: int = 20_000) -> dict[str, Any]:
    """Measure the wealth figures (see the module docstring).

    Args:
        progress: optional ``(task, done, total)`` callback.
        paths: common Monte Carlo paths of the policy comparisons.

    Returns:
        A flat dict of figures.
    """
    report = progress or (lambda task, done, total: None)
    figures: dict[str, Any] = {}
    report("DP", 0, 2)
    single = WealthProblem.parse({"horizon": 10, "initial_wealth": 100.0, "target": 200.0})
    result, ms = _solve_timed(single)
    figures.update(
        dp_single_goal_value=float(result.value),
        dp_single_goal_states=int(len(result.wealth)),
        dp_single_goal_ms=ms,
        dp_rho=float(single.rho),
        dp_portfolios=int(single.market.n_portfolios),
    )
    mc, se = mean_and_se(evaluate(single, dp_policy(result), normals=draw_normals(0, paths, single.horizon)))
    figures.update(dp_policy_mc_single_goal=mc, dp_policy_mc_single_goal_stderr=se)
    report("DP", 1, 2)
    multi = multi_goal_problem()
    multi_result, multi_ms = _solve_timed(multi)
    figures.update(
        dp_multi_goal_value=float(multi_result.value),
        dp_multi_goal_states=int(len(multi_result.wealth)),
        dp_multi_goal_ms=multi_ms,
    )
    report("DP", 2, 2)
    report("funding-ratio rule", 0, 1)
    train = [multi_goal_problem(80.0), multi_goal_problem(130.0)]
    rule, _ = tune_rule(train, [draw_normals(10 + i, 4_000, multi.horizon) for i in range(len(train))])
    normals = draw_normals(1, paths, multi.horizon)
    dp_mc, dp_se = mean_and_se(evaluate(multi, dp_policy(multi_result), normals=normals))
    rule_mc, rule_se = mean_and_se(evaluate(multi, rule_policy(multi, rule), normals=normals))
    figures.update(
        dp_policy_mc_multi_goal=dp_mc,
        dp_policy_mc_multi_goal_stderr=dp_se,
        rule_mc_multi_goal=rule_mc,
        rule_mc_multi_goal_stderr=rule_se,
        rule_vs_dp_multi_goal=rule_mc / float(multi_result.value),
        rule_margin=float(rule.margin),
        rule_r1=float(rule.r1),
        rule_r2=float(rule.r2),
    )
    report("funding-ratio rule", 1, 1)
    return figures
