"""Monte Carlo evaluation of wealth policies on common random numbers.

Common random numbers: draw ``normals`` once with ``draw_normals`` and pass the same array to
every policy, so policy differences are not blurred by sampling noise.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from decisions.finance.wealth.dp import OptionSet, WealthResult, option_sets
from decisions.finance.wealth.problem import WealthProblem

Policy = Callable[[int, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
"""``policy(t, cash, wealth) -> (option_index, portfolio_index)``, all arrays of shape ``(P,)``."""


@dataclass(frozen=True)
class Paths:
    """Simulated paths of one policy.

    Attributes:
        utility: total utility per path, shape ``(P,)``.
        wealth: wealth at the start of each year ``0 .. T``, shape ``(P, T + 1)``; 0 once bankrupt.
        option: option taken per year (index into that year's ``OptionSet``), shape ``(P, T + 1)``;
            -1 where bankrupt.
        portfolio: portfolio held per year ``0 .. T-1``, shape ``(P, T)``; -1 where bankrupt.
        paid_down: wealth after the cash flow and the goals of each year, shape ``(P, T + 1)``;
            ``>= 0`` for every path alive that year, 0 where bankrupt.
    """

    utility: np.ndarray
    wealth: np.ndarray
    option: np.ndarray
    portfolio: np.ndarray
    paid_down: np.ndarray


def draw_normals(seed: int, paths: int, horizon: int) -> np.ndarray:
    """Standard normals of shape ``(paths, horizon)`` (``normals[:, t]`` drives year ``t``)."""
    return np.random.default_rng(seed).standard_normal((paths, horizon))


def affordable_choice(opts: OptionSet, cash: np.ndarray, choice: np.ndarray) -> np.ndarray:
    """``choice`` where affordable (``cost <= cash``), else the dearest affordable option.

    Paths with negative ``cash`` get option 0 (they are bankrupt and the caller ignores them).
    """
    best = np.searchsorted(opts.costs, cash, side="right") - 1  # costs are increasing
    best = np.maximum(best, 0)
    choice = np.clip(np.asarray(choice, dtype=np.int64), 0, len(opts.costs) - 1)
    return np.where(opts.costs[choice] <= cash, choice, best)


def simulate(
    problem: WealthProblem, policy: Policy, *, normals: np.ndarray, drag: np.ndarray | None = None
) -> Paths:
    """Run ``policy`` on every path of ``normals`` (shape ``(P, horizon)``); vectorised over paths.

    ``drag`` (same shape, optional) is subtracted from every log return: with ``drag[:, t]``
    the inflation of year ``t``, wealth is in real terms (today's money), as goal costs are.
    """
    horizon = problem.horizon
    normals = np.asarray(normals, dtype=float)
    if normals.ndim != 2 or normals.shape[1] != horizon:
        raise ValueError(f"normals must have shape (paths, {horizon}), got {normals.shape}")
    if drag is not None and np.shape(drag) != normals.shape:
        raise ValueError(f"drag must have the shape of normals {normals.shape}, got {np.shape(drag)}")
    n = normals.shape[0]
    mu, sigma = problem.market.frontier()
    flows = problem.flows() + [0.0]
    sets = option_sets(problem)

    w = np.full(n, problem.initial_wealth)
    total = np.zeros(n)
    wealth = np.zeros((n, horizon + 1))
    option = np.full((n, horizon + 1), -1, dtype=np.int64)
    portfolio = np.full((n, horizon), -1, dtype=np.int64)
    paid_down = np.zeros((n, horizon + 1))
    for t in range(horizon + 1):
        wealth[:, t] = w
        opts = sets[t]
        cash = w + flows[t]
        alive = (w > 0) & (cash >= 0)
        choice, port = policy(t, cash, w)
        choice = affordable_choice(opts, cash, choice)
        post = np.where(alive, cash - opts.costs[choice], 0.0)
        total += np.where(alive, opts.utilities[choice], 0.0)
        option[:, t] = np.where(alive, choice, -1)
        paid_down[:, t] = post
        if t == horizon:
            if problem.target is not None:
                total += np.where(alive & (post >= problem.target), 1.0, 0.0)
            break
        k = np.clip(np.asarray(port, dtype=np.int64), 0, len(mu) - 1)
        portfolio[:, t] = np.where(alive, k, -1)
        log_growth = mu[k] - sigma[k] ** 2 / 2 + sigma[k] * normals[:, t]
        growth = np.exp(log_growth if drag is None else log_growth - drag[:, t])
        w = np.where(alive, post * growth, 0.0)
    return Paths(utility=total, wealth=wealth, option=option, portfolio=portfolio, paid_down=paid_down)


def evaluate(
    problem: WealthProblem, policy: Policy, *, normals: np.ndarray, drag: np.ndarray | None = None
) -> np.ndarray:
    """Total utility of ``policy`` per path (shape ``(P,)``); see ``simulate``."""
    return simulate(problem, policy, normals=normals, drag=drag).utility


def mean_and_se(utility: np.ndarray) -> tuple[float, float]:
    """Monte Carlo mean and its standard error."""
    return float(utility.mean()), float(utility.std(ddof=1) / np.sqrt(len(utility)))


def nearest_state(states: np.ndarray, wealth: np.ndarray) -> np.ndarray:
    """Index of the DP state nearest to each ``wealth`` in log wealth (any shape).

    ``states`` is the DP's state wealth (``WealthResult.wealth``: 0 for the bankrupt state, then
    the grid); wealth at or below 0 maps to the bankrupt state 0, wealth beyond the grid to its
    end node.
    """
    log_grid = np.log(states[1:])
    lw = np.log(np.maximum(wealth, 1e-300))
    j = np.clip(np.searchsorted(log_grid, lw), 1, len(log_grid) - 1)
    j = np.where(lw - log_grid[j - 1] < log_grid[j] - lw, j - 1, j)
    return np.where(wealth > 0, j + 1, 0)


def dp_policy(result: WealthResult) -> Policy:
    """Play the DP tables on continuous wealth: the nearest grid node in log wealth."""

    def policy(t: int, cash: np.ndarray, wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s = nearest_state(result.wealth, wealth)
        option = np.maximum(result.goal_option[t, s], 0)
        if t < result.portfolio.shape[0]:
            port = np.maximum(result.portfolio[t, s], 0)
        else:
            port = np.zeros_like(s)
        return option, port

    return policy


def never_fund(portfolio: int = 0) -> Policy:
    """Baseline: fund nothing (option 0) and hold one fixed portfolio."""

    def policy(t: int, cash: np.ndarray, wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        zeros = np.zeros(cash.shape, dtype=np.int64)
        return zeros, zeros + portfolio

    return policy
