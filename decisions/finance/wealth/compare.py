"""The planner against the exact DP and the tuned funding-ratio rule on held-out problem families.

``family_table`` reports each family separately (never only the pooled mean); ``headline``
gives the figures of ``decisions bench wealth``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from decisions.core.progress import Progress
from decisions.finance.wealth.dp import solve
from decisions.finance.wealth.planner import Planner, plan
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.rule import FundingRule, rule_policy
from decisions.finance.wealth.simulate import dp_policy, draw_normals, evaluate


@dataclass(frozen=True)
class ProblemScore:
    """One held-out problem: expected utilities (Monte Carlo on common paths) and times."""

    family: str
    index: int
    horizon: int
    goals: int
    dp_states: int
    dp_value: float
    dp_mc: float
    planner_mc: float
    rule_mc: float
    dp_ms: float
    plan_ms: float

    @property
    def planner_ratio(self) -> float:
        """Planner over DP (Monte Carlo, same paths)."""
        return self.planner_mc / self.dp_mc

    @property
    def rule_ratio(self) -> float:
        """Rule over DP (Monte Carlo, same paths)."""
        return self.rule_mc / self.dp_mc


def score_problem(
    problem: WealthProblem,
    planner: Planner,
    rule: FundingRule,
    *,
    family: str,
    index: int,
    paths: int,
    seed: int,
) -> ProblemScore:
    """Solve by DP, plan with the planner and score DP, planner and rule on ``paths`` common paths."""
    start = time.perf_counter()
    result = solve(problem)
    dp_ms = (time.perf_counter() - start) * 1e3
    answer = plan(planner, problem)
    normals = draw_normals(seed, paths, problem.horizon)
    return ProblemScore(
        family=family,
        index=index,
        horizon=problem.horizon,
        goals=len(problem.goals),
        dp_states=len(result.wealth),
        dp_value=float(result.value),
        dp_mc=float(evaluate(problem, dp_policy(result), normals=normals).mean()),
        planner_mc=float(evaluate(problem, answer.policy, normals=normals).mean()),
        rule_mc=float(evaluate(problem, rule_policy(problem, rule), normals=normals).mean()),
        dp_ms=dp_ms,
        plan_ms=answer.seconds * 1e3,
    )


def score_families(
    families: Mapping[str, Sequence[WealthProblem]],
    planner: Planner,
    rule: FundingRule,
    *,
    paths: int = 4_000,
    seed: int = 0,
    progress: Progress | None = None,
) -> list[ProblemScore]:
    """``score_problem`` on every problem of every family (problem ``i`` of a family uses seed ``seed + i``)."""
    report = progress or (lambda task, done, total: None)
    total = sum(len(p) for p in families.values())
    plan(planner, next(iter(families.values()))[0])  # compile the planner's shapes before timing
    scores: list[ProblemScore] = []
    for name, problems in families.items():
        for i, problem in enumerate(problems):
            scores.append(score_problem(problem, planner, rule, family=name, index=i, paths=paths, seed=seed + i))
            report("held-out problems", len(scores), total)
    return scores


def family_table(scores: Sequence[ProblemScore]) -> pd.DataFrame:
    """One row per family: planner/DP and rule/DP (mean and min), planner over rule, times."""
    frame = pd.DataFrame([{**asdict(s), "planner_ratio": s.planner_ratio, "rule_ratio": s.rule_ratio} for s in scores])
    table = frame.groupby("family", sort=False).agg(
        problems=("index", "size"),
        planner_vs_dp_mean=("planner_ratio", "mean"),
        planner_vs_dp_min=("planner_ratio", "min"),
        rule_vs_dp_mean=("rule_ratio", "mean"),
        rule_vs_dp_min=("rule_ratio", "min"),
        dp_ms=("dp_ms", "median"),
        plan_ms=("plan_ms", "median"),
        dp_states=("dp_states", "median"),
    )
    table["planner_vs_rule"] = table["planner_vs_dp_mean"] / table["rule_vs_dp_mean"]
    return table.reset_index()


def headline(scores: Sequence[ProblemScore]) -> dict[str, float]:
    """``metarl_mean_ratio``, ``metarl_min_ratio``, ``metarl_vs_rule_min``, times and counts."""
    table = family_table(scores)
    ratios = np.array([s.planner_ratio for s in scores])
    return {
        "metarl_mean_ratio": float(ratios.mean()),
        "metarl_min_ratio": float(ratios.min()),
        "metarl_vs_rule_min": float(table["planner_vs_rule"].min()),
        "rule_mean_ratio": float(np.mean([s.rule_ratio for s in scores])),
        "metarl_plan_ms": float(np.median([s.plan_ms for s in scores])),
        "metarl_plan_ms_max": float(np.max([s.plan_ms for s in scores])),
        "dp_ms_same_problems": float(np.median([s.dp_ms for s in scores])),
        "held_out_problems": len(scores),
        "held_out_families": len(table),
    }
