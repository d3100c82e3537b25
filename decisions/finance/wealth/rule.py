"""The funding-ratio rule: a simple, tunable baseline for goals-based wealth policies.

"Take a goal when wealth after paying it covers the present value of the remaining goals by a
margin; pick the portfolio by that same ratio."

``tune_rule`` picks ``(margin, r1, r2)`` by a small grid search on training problems.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from decisions.finance.wealth.dp import option_sets
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.simulate import Policy, evaluate

DEFAULT_GRID: Mapping[str, Sequence[float]] = {
    "margin": (0.3, 0.5, 0.7, 0.85, 1.0, 1.25, 1.5),
    "r1": (0.2, 0.4, 0.6, 0.8, 1.0, 1.2),
    "r2": (0.6, 0.8, 1.0, 1.2, 1.5, 2.0, 3.0),
}
"""The default search grid of ``tune_rule`` (pairs with ``r1 >= r2`` are skipped)."""


@dataclass(frozen=True)
class FundingRule:
    """Parameters of the funding-ratio rule.

    The defaults are the rule tuned on 48 training problems of every family
    (``bench.tuned_rule``; ``decisions bench wealth --json`` prints them as ``rule_margin``,
    ``rule_r1`` and ``rule_r2``).

    Attributes:
        margin: take a goal only if wealth after paying it is at least ``margin`` times the need.
        r1: funding ratio at or below which the riskiest portfolio is held.
        r2: funding ratio at or above which the safest portfolio is held (``r2 > r1``).
    """

    margin: float = 0.7
    r1: float = 0.8
    r2: float = 1.2

    def __post_init__(self) -> None:
        if not (self.margin >= 0 and self.r2 > self.r1):
            raise ValueError(f"need margin >= 0 and r2 > r1, got {self}")


def remaining_need(problem: WealthProblem) -> np.ndarray:
    """``need(t)`` for ``t = 0 .. T`` (see the module docstring), shape ``(T + 1,)``."""
    mu, _ = problem.market.frontier()
    mu0 = float(mu[0])
    horizon = problem.horizon
    sets = option_sets(problem)
    due = np.array([float(opts.costs[-1]) for opts in sets])
    flows = problem.flows()
    due[:horizon] -= np.array(flows)
    if problem.target is not None:
        due[horizon] += problem.target
    need = np.zeros(horizon + 1)
    need[horizon] = problem.target if problem.target is not None else 0.0
    for t in range(horizon):
        s = np.arange(t + 1, horizon + 1)
        need[t] = float(np.sum(due[s] * np.exp(-mu0 * (s - t))))
    return need


def rule_policy(problem: WealthProblem, rule: FundingRule) -> Policy:
    """The funding-ratio rule as a policy for ``simulate.evaluate``."""
    sets = option_sets(problem)
    need = remaining_need(problem)
    n_port = problem.market.n_portfolios
    horizon = problem.horizon

    def policy(t: int, cash: np.ndarray, wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        costs = sets[t].costs
        post = cash[:, None] - costs[None, :]  # (P, O)
        if t == horizon:  # nothing uncertain is left: the best affordable option, target included
            score = sets[t].utilities[None, :] + (post >= need[t]) * (problem.target is not None)
            option = np.argmax(np.where(post >= 0, score, -np.inf), axis=1)
            return option.astype(np.int64), np.zeros(len(cash), dtype=np.int64)
        ok = (post >= 0) & (post >= rule.margin * need[t])
        ok[:, 0] = True
        option = (ok.shape[1] - 1) - np.argmax(ok[:, ::-1], axis=1)  # highest eligible index
        paid = post[np.arange(len(cash)), option]
        if need[t] > 0:
            ratio = paid / need[t]
        else:
            ratio = np.full(len(cash), math.inf)
        frac = np.clip((rule.r2 - ratio) / (rule.r2 - rule.r1), 0.0, 1.0)
        port = np.rint(frac * (n_port - 1)).astype(np.int64)
        return option.astype(np.int64), port

    return policy


def attainable_utility(problem: WealthProblem) -> float:
    """The most utility a client could get: every year's best option, plus 1 for a wealth target."""
    best = sum(float(opts.utilities[-1]) for opts in option_sets(problem))
    return best + (1.0 if problem.target is not None else 0.0)


def tune_rule(
    problems: Sequence[WealthProblem],
    normals: Sequence[np.ndarray],
    grid: Mapping[str, Sequence[float]] | None = None,
) -> tuple[FundingRule, float]:
    """Grid search for the rule maximising the mean (over problems) of the MC expected utility.

    Args:
        problems: training problems.
        normals: one array of standard normals per problem, shape ``(paths, horizon)``; the same
            arrays are used for every candidate (common random numbers).
        grid: candidate values for ``margin``, ``r1`` and ``r2`` (``DEFAULT_GRID`` when omitted);
            combinations with ``r1 >= r2`` are skipped.

    Returns:
        The best rule and its score: the mean over problems of the MC expected utility as a
        share of the problem's ``attainable_utility``, so that every problem counts alike
        whatever its utility scale.
    """
    if len(problems) != len(normals) or not problems:
        raise ValueError("need one normals array per problem, and at least one problem")
    grid = DEFAULT_GRID if grid is None else grid
    scales = [max(attainable_utility(p), 1e-12) for p in problems]
    best: tuple[FundingRule, float] | None = None
    for margin, r1, r2 in itertools.product(grid["margin"], grid["r1"], grid["r2"]):
        if r1 >= r2:
            continue
        rule = FundingRule(margin=margin, r1=r1, r2=r2)
        score = float(
            np.mean(
                [
                    evaluate(p, rule_policy(p, rule), normals=z).mean() / scale
                    for p, z, scale in zip(problems, normals, scales, strict=True)
                ]
            )
        )
        if best is None or score > best[1]:
            best = (rule, score)
    if best is None:
        raise ValueError("the grid has no combination with r1 < r2")
    return best
