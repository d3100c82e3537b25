"""Beyond the DP: goal costs that inflate with a persistent (AR(1)) inflation rate.

- a fixed glide path (riskiest portfolio in year 0 down to the safest at the horizon) that
  funds goals greedily (the dearest affordable option every year);
- the funding-ratio rule (``rule.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from decisions.finance.wealth.dp import option_sets
from decisions.finance.wealth.planner import Planner, plan, target_options
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.rule import FundingRule, rule_policy
from decisions.finance.wealth.simulate import Policy, draw_normals, evaluate


@dataclass(frozen=True)
class Inflation:
    """AR(1) yearly inflation: long-run ``mean``, ``persistence`` in [0, 1), shock ``vol``, start ``initial``."""

    mean: float = 0.025
    persistence: float = 0.8
    vol: float = 0.012
    initial: float = 0.04

    def paths(self, seed: int, paths: int, horizon: int) -> np.ndarray:
        """Inflation of each year ``0 .. horizon - 1`` per path, shape ``(paths, horizon)``."""
        eps = np.random.default_rng(seed).standard_normal((paths, horizon))
        out = np.empty((paths, horizon))
        rate = np.full(paths, self.initial)
        for t in range(horizon):
            out[:, t] = rate
            rate = self.mean + self.persistence * (rate - self.mean) + self.vol * eps[:, t]
        return out


def glide_path_greedy(problem: WealthProblem) -> Policy:
    """Riskiest portfolio at year 0 down linearly to the safest at the horizon; fund the dearest affordable option.

    A wealth ``target`` counts as one more goal of the horizon (``WealthProblem.target_as_goal``):
    there the policy takes the dearest option of that combined menu that ``cash`` affords.
    """
    n_port = problem.market.n_portfolios
    horizon = problem.horizon
    dearest = [len(opts.costs) - 1 for opts in option_sets(problem)]
    with_target = option_sets(problem.target_as_goal())[-1]
    at_horizon = target_options(problem)

    def policy(t: int, cash: np.ndarray, wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        port = int(round((1.0 - t / horizon) * (n_port - 1)))
        option = np.full(len(cash), dearest[t], dtype=np.int64)
        if t == horizon and problem.target is not None:
            option = at_horizon[np.maximum(np.searchsorted(with_target.costs, cash, side="right") - 1, 0)]
        # simulate replaces an unaffordable option by the dearest affordable one
        return option, np.full(len(cash), port, dtype=np.int64)

    return policy


@dataclass(frozen=True)
class BeyondScore:
    """Real expected utility of each policy on one problem (common paths)."""

    planner: float
    glide_greedy: float
    rule: float


def score_beyond(
    problems: Sequence[WealthProblem],
    planner: Planner,
    rule: FundingRule,
    inflation: Inflation,
    *,
    paths: int = 4_000,
    seed: int = 0,
) -> list[BeyondScore]:
    """Score the planner, the glide path with greedy funding and the rule under stochastic inflation."""
    scores = []
    for i, problem in enumerate(problems):
        normals = draw_normals(seed + i, paths, problem.horizon)
        drag = inflation.paths(seed + 10_000 + i, paths, problem.horizon)
        policies = (plan(planner, problem).policy, glide_path_greedy(problem), rule_policy(problem, rule))
        planner_u, glide_u, rule_u = (float(evaluate(problem, p, normals=normals, drag=drag).mean()) for p in policies)
        scores.append(BeyondScore(planner=planner_u, glide_greedy=glide_u, rule=rule_u))
    return scores
