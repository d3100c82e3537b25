"""Exact dynamic programming for goals-based wealth management (Das, Ostrov, Radhakrishnan, Srivastav 2020).

Timing: goals of year ``T`` are paid from ``W(T)`` and scored at ``T`` with no further growth
(the value after year ``T`` is 0). The single-goal problem scores ``1[W(T) >= target]`` at ``T``.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from decisions.errors import InputError
from decisions.finance.wealth.problem import WealthProblem

MAX_GRID_NODES = 6_000
"""Largest grid ``solve`` accepts (its transition arrays grow with the square of the nodes)."""


@dataclass(frozen=True)
class OptionSet:
    """The goal options of one year after combining that year's goals and dropping dominated ones.

    ``choices[g]`` gives, per goal of the year (in ``goals`` order), the option taken: 0 not funded,
    ``i >= 1`` the goal's ``options[i - 1]``.
    """

    costs: np.ndarray
    utilities: np.ndarray
    choices: tuple[tuple[int, ...], ...]
    goals: tuple[int, ...]


@dataclass(frozen=True)
class WealthResult:
    """Solution of a goals-based wealth problem.

    Attributes:
        value: optimal ``P[W(T) >= target]`` (single goal) or expected total utility (goals).
        wealth: wealth of each state, shape ``(S,)``; state 0 is bankrupt (wealth 0).
        initial_state: the state of ``W0``.
        mu: frontier portfolio means, shape ``(K,)``.
        sigma: frontier portfolio volatilities, shape ``(K,)``.
        portfolio: optimal portfolio index per year ``0 .. T-1`` and state, shape ``(T, S)``;
            -1 where nothing is invested (bankrupt).
        goal_option: optimal option (index into ``options[t]``) per year ``0 .. T`` and state,
            shape ``(T + 1, S)``; -1 where bankrupt.
        options: the option set of each year ``0 .. T``.
        option_probability: per year, the probability of taking each option of ``options[t]``.
        goal_probability: per goal (in input order), the probability of each of its options,
            index 0 being "not funded" (from the forward pass; sums to ``1 - P[bankrupt]``).
        distribution: probability of each state at the start of each year ``0 .. T``, shape ``(T + 1, S)``.
        q: per year ``0 .. T``, every choice's optimal value, as ``ActionValues.q``.
    """

    value: float
    wealth: np.ndarray
    initial_state: int
    mu: np.ndarray
    sigma: np.ndarray
    portfolio: np.ndarray
    goal_option: np.ndarray
    options: tuple[OptionSet, ...]
    option_probability: tuple[np.ndarray, ...]
    goal_probability: tuple[np.ndarray, ...]
    distribution: np.ndarray
    q: tuple[np.ndarray, ...] = ()


def wealth_grid(problem: WealthProblem) -> np.ndarray:
    """Grid nodes (wealth, increasing), equally spaced in log wealth with step ``sigma_min / rho``."""
    mu, sigma = problem.market.frontier()
    flows = problem.flows()
    paid = [0.0] * problem.horizon
    for goal in problem.goals:
        if goal.year < problem.horizon:
            paid[goal.year] += max(o.cost for o in goal.options)
    step = float(sigma.min()) / problem.rho
    w0 = problem.initial_wealth
    lo, hi = w0, w0
    for k in {0, len(mu) - 1}:
        drift, vol = float(mu[k] - sigma[k] ** 2 / 2), float(sigma[k])
        for t in range(1, problem.horizon + 1):
            low, high = 0.0, 0.0
            for s, (amount, net) in enumerate(zip([w0] + flows[:t], [w0] + [f - c for f, c in zip(flows[:t], paid[:t], strict=True)], strict=True)):
                age = t - s + 1 if s else t  # W0 and flow s - 1 (paid at the start of year s - 1)
                down = math.exp(drift * age - problem.n_sd * vol * math.sqrt(age))
                up = math.exp(drift * age + problem.n_sd * vol * math.sqrt(age))
                low += net * (down if net >= 0 else up)
                high += amount * (up if amount >= 0 else down)
            lo, hi = min(lo, low), max(hi, high)
    lo = max(lo, w0 * 1e-3)  # withdrawals can take the bound below zero; wealth below lands on node 0
    ln_w0 = math.log(w0)
    k_lo = math.floor((math.log(lo) - ln_w0) / step)
    k_hi = math.ceil((math.log(hi) - ln_w0) / step)
    return np.exp(ln_w0 + step * np.arange(k_lo, k_hi + 1))


def transitions(post: np.ndarray, log_grid: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """Transition probabilities from paid-down wealth to the states, for every portfolio.

    Args:
        post: wealth invested, shape ``(R,)``; ``<= 0`` means bankrupt.
        log_grid: log wealth of the grid nodes, shape ``(n,)``.
        mu: portfolio means, shape ``(K,)``.
        sigma: portfolio volatilities, shape ``(K,)``.

    Returns:
        Shape ``(K, R, n + 1)``; column 0 is the bankrupt state; each row sums to 1.
    """
    alive = post > 0
    ln_post = np.log(np.where(alive, post, 1.0))
    drift = mu - sigma**2 / 2
    # one (K, R, n + 1) array, the densities computed in place in its columns 1..n (the
    # arrays are tens of MB: temporaries would cost more than the arithmetic)
    out = np.empty((len(mu), len(post), len(log_grid) + 1))
    z = out[:, :, 1:]
    np.subtract((log_grid[None, :] - ln_post[:, None])[None], drift[:, None, None], out=z)
    z /= sigma[:, None, None]
    np.multiply(z, z, out=z)
    z *= -0.5  # the log density up to a constant
    z -= z.max(axis=2, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=2, keepdims=True)
    z[:, ~alive, :] = 0.0
    out[:, :, 0] = np.where(alive, 0.0, 1.0)[None, :]
    return out


def option_sets(problem: WealthProblem) -> tuple[OptionSet, ...]:
    """Per year ``0 .. T``, the combined options of that year's goals with dominated ones dropped.

    Combinations of the goals' options (each goal: not funded or one of its options) are ranked by
    cost; one is kept only if it gives more utility than every cheaper (or equally cheap) one.
    """
    sets = []
    for t in range(problem.horizon + 1):
        idx = tuple(i for i, g in enumerate(problem.goals) if g.year == t)
        menus = [[(0.0, 0.0)] + [(o.cost, o.utility) for o in problem.goals[i].options] for i in idx]
        combos = []
        for choice in itertools.product(*[range(len(m)) for m in menus]):
            cost = sum(menus[j][c][0] for j, c in enumerate(choice))
            util = sum(menus[j][c][1] for j, c in enumerate(choice))
            combos.append((cost, -util, choice))
        combos.sort()
        kept: list[tuple[float, float, tuple[int, ...]]] = []
        best = -math.inf
        for cost, neg_util, choice in combos:
            if -neg_util > best:
                kept.append((cost, -neg_util, choice))
                best = -neg_util
        sets.append(
            OptionSet(
                costs=np.array([c for c, _, _ in kept]),
                utilities=np.array([u for _, u, _ in kept]),
                choices=tuple(ch for _, _, ch in kept),
                goals=idx,
            )
        )
    return tuple(sets)


@dataclass(frozen=True)
class _Year:
    """One year of the backward recursion."""

    t: int
    options: OptionSet
    cont: np.ndarray
    feasible: np.ndarray
    rows: np.ndarray | None


def _grid(problem: WealthProblem) -> np.ndarray:
    """The states' wealth (0 for the bankrupt state, then the grid); refuses a grid above ``MAX_GRID_NODES``."""
    grid = wealth_grid(problem)
    if len(grid) > MAX_GRID_NODES:
        raise InputError(
            "problem.rho",
            f"the DP grid would have {len(grid)} nodes (limit {MAX_GRID_NODES}); lower rho or n_sd, or shorten the horizon",
        )
    return np.concatenate([[0.0], grid])


def _backward(problem: WealthProblem, wealth: np.ndarray) -> Iterator[_Year]:
    """The Bellman recursion from year ``T`` down to 0, one ``_Year`` at a time (value at ``T + 1`` is 0)."""
    mu, sigma = problem.market.frontier()
    log_grid = np.log(wealth[1:])
    n_states = len(wealth)
    horizon = problem.horizon
    flows = problem.flows() + [0.0]
    sets = option_sets(problem)
    value_next = np.zeros(n_states)
    for t in range(horizon, -1, -1):
        opts = sets[t]
        cash = wealth + flows[t]
        n_opts = len(opts.costs)
        cont = np.zeros((n_opts, 1 if t == horizon else len(mu), n_states))
        feasible = np.zeros((n_opts, n_states), dtype=bool)
        rows = np.zeros((n_opts, n_states, n_states)) if t < horizon else None
        for g, cost in enumerate(opts.costs):
            post = cash - cost
            feasible[g] = post >= 0
            feasible[g, 0] = False  # bankrupt is absorbing
            if t == horizon:
                if problem.target is not None:
                    cont[g, 0] = (post >= problem.target).astype(float)
            else:
                p = transitions(post, log_grid, mu, sigma)
                cont[g] = p @ value_next  # (K, S)
                rows[g] = p[np.argmax(cont[g], axis=0), np.arange(n_states)]  # type: ignore[index]
        yield _Year(t, opts, cont, feasible, rows)
        best = np.where(feasible, opts.utilities[:, None] + cont.max(axis=1), -np.inf)
        value_next = np.where(feasible.any(axis=0), best.max(axis=0), 0.0)


def _forward(moves: np.ndarray, start: int) -> np.ndarray:
    """State distribution per year ``0 .. T`` from ``start`` under the yearly transition matrices ``moves``."""
    dist = np.zeros((len(moves) + 1, moves.shape[-1]))
    dist[0, start] = 1.0
    for t in range(len(moves)):
        dist[t + 1] = dist[t] @ moves[t]
    return dist


def _chosen_rows(year: _Year, option: np.ndarray, ok: np.ndarray) -> np.ndarray:
    """Transition matrix of the chosen options (each with its best portfolio); states with no choice go bankrupt."""
    chosen = year.rows[option, np.arange(len(option))]  # type: ignore[index]
    chosen[~ok] = 0.0
    chosen[~ok, 0] = 1.0
    return chosen


@dataclass(frozen=True)
class ActionValues:
    """The optimal value of every (goal option, portfolio) choice at every state and year.

    Attributes:
        wealth: wealth of each state, ``(S,)`` (state 0 bankrupt), as in ``WealthResult``.
        q: per year ``0 .. T``, shape ``(G_t, K, S)`` (``(G_t, 1, S)`` at the horizon): the
            utility of option ``g`` plus the optimal expected utility after it with portfolio
            ``k``; ``-inf`` where the option is unaffordable or the state bankrupt.
        options: the option set of each year.
        distribution: the optimal policy's state distribution per year, ``(T + 1, S)``.
    """

    wealth: np.ndarray
    q: tuple[np.ndarray, ...]
    options: tuple[OptionSet, ...]
    distribution: np.ndarray


def action_values(problem: WealthProblem) -> ActionValues:
    """Every choice's optimal value (the DP's Q function), by the same recursion as ``solve``.

    Raises:
        InputError: the grid is infeasibly large, as in ``solve``.
    """
    wealth = _grid(problem)
    n_states = len(wealth)
    q: list[np.ndarray] = [np.empty(0)] * (problem.horizon + 1)
    moves = np.zeros((problem.horizon, n_states, n_states))
    for year in _backward(problem, wealth):
        values = year.options.utilities[:, None, None] + year.cont
        q[year.t] = np.where(year.feasible[:, None, :], values, -np.inf)
        if year.rows is not None:
            best = np.where(year.feasible, values.max(axis=1), -np.inf)
            moves[year.t] = _chosen_rows(year, np.argmax(best, axis=0), year.feasible.any(axis=0))
    start = int(np.argmin(np.abs(wealth - problem.initial_wealth)))
    return ActionValues(wealth=wealth, q=tuple(q), options=option_sets(problem), distribution=_forward(moves, start))


def solve(problem: WealthProblem) -> WealthResult:
    """Solve by backward induction and evaluate the optimal policy by a forward pass.

    Raises:
        InputError: (a ``ValueError``) the grid is infeasibly large (more than
            ``MAX_GRID_NODES`` nodes); it names ``problem.rho``.

    With ``problem.target`` set, maximises ``P[W(T) >= target]`` plus the utility of any goals
    (with no goals, exactly the single-goal probability); otherwise maximises expected total utility.
    """
    mu, sigma = problem.market.frontier()
    wealth = _grid(problem)
    n_states = len(wealth)
    horizon = problem.horizon
    sets = option_sets(problem)
    states = np.arange(n_states)

    portfolio = np.full((horizon, n_states), -1, dtype=np.int64)
    goal_option = np.full((horizon + 1, n_states), -1, dtype=np.int64)
    moves = np.zeros((horizon, n_states, n_states))
    value_next = np.zeros(n_states)
    values: list[np.ndarray] = [np.empty(0)] * (horizon + 1)
    for year in _backward(problem, wealth):
        t = year.t
        values[t] = np.where(year.feasible[:, None, :], year.options.utilities[:, None, None] + year.cont, -np.inf)
        best_k = np.argmax(year.cont, axis=1)  # (G, S)
        cont = np.take_along_axis(year.cont, best_k[:, None, :], axis=1)[:, 0]
        q = np.where(year.feasible, year.options.utilities[:, None] + cont, -np.inf)
        any_ok = year.feasible.any(axis=0)
        g_star = np.argmax(q, axis=0)
        value_next = np.where(any_ok, q[g_star, states], 0.0)
        goal_option[t] = np.where(any_ok, g_star, -1)
        if t < horizon:
            portfolio[t] = np.where(any_ok, best_k[g_star, states], -1)
            moves[t] = _chosen_rows(year, g_star, any_ok)

    start = int(np.argmin(np.abs(wealth - problem.initial_wealth)))
    dist = _forward(moves, start)
    option_probability = []
    goal_probability = [np.zeros(len(g.options) + 1) for g in problem.goals]
    for t, opts in enumerate(sets):
        probs = np.array([dist[t][goal_option[t] == g].sum() for g in range(len(opts.costs))])
        option_probability.append(probs)
        for g, choice in enumerate(opts.choices):
            for goal, c in zip(opts.goals, choice, strict=True):
                goal_probability[goal][c] += probs[g]
    return WealthResult(
        value=float(value_next[start]), wealth=wealth, initial_state=start, mu=mu, sigma=sigma,
        portfolio=portfolio, goal_option=goal_option, options=sets, option_probability=tuple(option_probability),
        goal_probability=tuple(goal_probability), distribution=dist, q=tuple(values),
    )
