"""A JAX environment over many client problems at once, with a scale-free observation.

Observation (``features``), for year ``t`` and cash ``c`` (wealth plus this year's flow):
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.spaces import Box, Discrete, MultiDiscrete
from decisions.finance.wealth.families import MAX_HORIZON, sample_problems
from decisions.finance.wealth.market import Market
from decisions.finance.wealth.planner_limits import MAX_OPTIONS, planner_option_sets
from decisions.finance.wealth.problem import WealthProblem

N_FEATURES = 4 + 4 * MAX_OPTIONS + 5 * MAX_HORIZON
"""Width of the observation."""


@struct.dataclass
class ProblemArrays:
    """One problem (or a bank of them, with a leading axis) as padded arrays.

    Money is in units of ``W0`` and utilities in units of the total attainable utility.
    """

    horizon: Array  # () int32
    flows: Array  # (MAX_HORIZON + 1,) cash flow per year (0 at and after the horizon)
    costs: Array  # (MAX_HORIZON + 1, MAX_OPTIONS) option costs, increasing; padding repeats the last
    utils: Array  # (MAX_HORIZON + 1, MAX_OPTIONS) option utilities
    n_options: Array  # (MAX_HORIZON + 1,) int32, valid options per year (>= 1)


def encode(problem: WealthProblem) -> tuple[ProblemArrays, float, float]:
    """Pad ``problem`` to the planner's arrays.

    A wealth ``target`` is encoded as one more goal at the horizon (``WealthProblem.target_as_goal``):
    the option slots of year ``T`` then index that problem's option set, not ``problem``'s.

    Returns:
        The arrays (numpy; ``on_device`` converts them), the money scale (``W0``) and the utility scale (total attainable utility,
        1 when the problem has no utility).

    Raises:
        InputError: (a ``ValueError``) the horizon exceeds ``MAX_HORIZON`` or a year has more
            than ``MAX_OPTIONS`` undominated options; it names the field.
    """
    sets = planner_option_sets(problem)
    problem = problem.target_as_goal()
    scale = problem.initial_wealth
    total = sum(float(s.utilities[-1]) for s in sets) or 1.0
    costs = np.zeros((MAX_HORIZON + 1, MAX_OPTIONS))
    utils = np.zeros((MAX_HORIZON + 1, MAX_OPTIONS))
    n_options = np.ones(MAX_HORIZON + 1, dtype=np.int32)
    for t, opts in enumerate(sets):
        n = len(opts.costs)
        costs[t, :n], utils[t, :n] = opts.costs / scale, opts.utilities / total
        costs[t, n:], utils[t, n:] = costs[t, n - 1], utils[t, n - 1]
        n_options[t] = n
    flows = np.zeros(MAX_HORIZON + 1)
    flows[: problem.horizon] = np.asarray(problem.flows()) / scale
    arrays = ProblemArrays(
        horizon=np.asarray(problem.horizon, np.int32),
        flows=flows.astype(np.float32),
        costs=costs.astype(np.float32),
        utils=utils.astype(np.float32),
        n_options=n_options,
    )
    return arrays, scale, total


def on_device(arrays: ProblemArrays) -> ProblemArrays:
    """The arrays as JAX arrays (``encode`` gives numpy arrays)."""
    return jax.tree_util.tree_map(jnp.asarray, arrays)


def stack(problems: list[ProblemArrays]) -> ProblemArrays:
    """A bank: the problems' arrays stacked on a leading axis (as JAX arrays)."""
    return jax.tree_util.tree_map(lambda *xs: jnp.asarray(np.stack(xs)), *problems)


def features(prob: ProblemArrays, t: Array, cash: Array, mu_safe: Array) -> Array:
    """The scale-free observation of year ``t`` with ``cash`` in hand (see the module docstring).

    Args:
        prob: one problem's arrays.
        t: the year (int scalar).
        cash: wealth plus this year's flow, in units of ``W0`` (scalar).
        mu_safe: mean return of the safest portfolio, the discount rate of ``need``.

    Returns:
        ``(N_FEATURES,)`` float32.
    """
    years = jnp.arange(MAX_HORIZON + 1)
    c = jnp.maximum(cash, 1e-6)
    max_cost, max_util = prob.costs[:, -1], prob.utils[:, -1]
    future = (years > t) & (years <= prob.horizon)
    now_and_future = (years >= t) & (years <= prob.horizon)
    attainable = jnp.sum(jnp.where(now_and_future, max_util, 0.0))
    u_scale = jnp.maximum(attainable, 1e-6)
    due = jnp.where(future, max_cost - jnp.where(years < prob.horizon, prob.flows, 0.0), 0.0)
    need = jnp.sum(due * jnp.exp(-mu_safe * (years - t)))
    valid = jnp.arange(MAX_OPTIONS) < prob.n_options[t]
    cost_now, util_now = prob.costs[t], prob.utils[t]
    head = jnp.stack(
        [
            (prob.horizon - t) / MAX_HORIZON,
            attainable,
            jnp.log(jnp.clip(c / jnp.maximum(need, 1e-3), 1e-3, 1e3)),
            jnp.clip(need / c, -5.0, 5.0),
        ]
    )
    now = jnp.concatenate(
        [
            jnp.where(valid, jnp.clip(cost_now / c, 0.0, 5.0), 0.0),
            jnp.where(valid, util_now / u_scale, 0.0),
            valid.astype(jnp.float32),
            (valid & (cost_now <= cash)).astype(jnp.float32),
        ]
    )
    # Years t + 1 .. t + MAX_HORIZON: shift the arrays so that offset d sits at index d - 1.
    idx = t + 1 + jnp.arange(MAX_HORIZON)
    inside = idx <= prob.horizon
    safe = jnp.minimum(idx, MAX_HORIZON)
    n_opt = prob.n_options[safe]
    has_partial = n_opt > 2
    cheapest = jnp.where(has_partial, prob.costs[safe, 1], prob.costs[safe, -1])
    cheapest_u = jnp.where(has_partial, prob.utils[safe, 1], prob.utils[safe, -1])
    ahead = jnp.concatenate(
        [
            jnp.where(inside, jnp.clip(prob.costs[safe, -1] / c, 0.0, 5.0), 0.0),
            jnp.where(inside, prob.utils[safe, -1] / u_scale, 0.0),
            jnp.where(inside, jnp.clip(cheapest / c, 0.0, 5.0), 0.0),
            jnp.where(inside, cheapest_u / u_scale, 0.0),
            jnp.where(idx < prob.horizon, jnp.clip(prob.flows[safe] / c, -5.0, 5.0), 0.0),
        ]
    )
    return jnp.concatenate([head, now, ahead]).astype(jnp.float32)


def resolve_option(prob: ProblemArrays, t: Array, cash: Array, choice: Array) -> Array:
    """The option actually taken: ``choice`` (padding means the dearest) if affordable, else the dearest affordable."""
    n = prob.n_options[t]
    choice = jnp.clip(choice, 0, n - 1)
    costs = prob.costs[t]
    affordable = (jnp.arange(MAX_OPTIONS) < n) & (costs <= cash)
    best = jnp.maximum(jnp.sum(affordable) - 1, 0)  # costs increase, so affordable ones come first
    return jnp.where(costs[choice] <= cash, choice, best)


@struct.dataclass
class MetaState:
    """One episode: the problem, the year and the wealth (units of ``W0``)."""

    prob: ProblemArrays
    t: Array
    wealth: Array


@struct.dataclass
class MetaParams:
    """The problem bank and the market's frontier portfolios."""

    bank: ProblemArrays
    mu: Array  # (K,)
    sigma: Array  # (K,)


def split_action(action: Array, n_portfolios: int, joint: bool) -> tuple[Array, Array]:
    """``(option slot, portfolio)`` of actions ``(...)`` (joint) or ``(..., 2)`` (two components)."""
    if joint:
        return action // n_portfolios, action % n_portfolios
    return action[..., 0], action[..., 1]


class WealthMetaEnv(Environment[MetaState, MetaParams]):
    """Episodes over a bank of client problems (see the module docstring).

    Args:
        n_portfolios: frontier portfolios of the market.
        joint: one categorical action over (option slot, portfolio) pairs; else two components.
    """

    def __init__(self, n_portfolios: int, joint: bool = True) -> None:
        self.n_portfolios = int(n_portfolios)
        self.joint = bool(joint)

    @property
    def default_params(self) -> MetaParams:
        """A small default bank: ``DEFAULT_BANK`` mixed-family training problems on the default
        market's frontier (what the agents use when given no params; real trainings build their
        bank with ``make_params``)."""
        market = Market()
        mu, sigma = market.frontier()
        return make_params(sample_problems(DEFAULT_BANK, "mixed", market=market), mu, sigma)

    def observe(self, state: MetaState, params: MetaParams) -> Array:
        """The observation of ``state``."""
        t = state.t
        return features(state.prob, t, state.wealth + state.prob.flows[t], params.mu[0])

    def reset(self, key: PRNGKey, params: MetaParams) -> tuple[Array, MetaState]:
        """Draw a problem of the bank; start at year 0 with wealth 1 (``W0``)."""
        n = params.bank.horizon.shape[0]
        i = jax.random.randint(key, (), 0, n)
        prob = jax.tree_util.tree_map(lambda x: x[i], params.bank)
        state = MetaState(prob=prob, t=jnp.asarray(0, jnp.int32), wealth=jnp.asarray(1.0, jnp.float32))
        return self.observe(state, params), state

    def step(
        self, key: PRNGKey, state: MetaState, action: Array, params: MetaParams
    ) -> tuple[Array, MetaState, Array, Array, Array, Info]:
        """Pay the flow, fund the resolved option, invest the rest in the chosen portfolio."""
        prob, t = state.prob, state.t
        cash = state.wealth + prob.flows[t]
        alive = (state.wealth > 0) & (cash >= 0)
        slot, k = split_action(action, self.n_portfolios, self.joint)
        option = resolve_option(prob, t, cash, slot)
        reward = jnp.where(alive, prob.utils[t, option], 0.0)
        post = jnp.where(alive, cash - prob.costs[t, option], 0.0)
        k = jnp.clip(k, 0, self.n_portfolios - 1)
        mu, sigma = params.mu[k], params.sigma[k]
        growth = jnp.exp(mu - sigma**2 / 2 + sigma * jax.random.normal(key))
        wealth = jnp.where(post > 0, post * growth, 0.0)
        last = t >= prob.horizon
        terminated = last | ~alive | (wealth <= 0)
        nxt = MetaState(prob=prob, t=jnp.minimum(t + 1, prob.horizon), wealth=wealth.astype(jnp.float32))
        return self.observe(nxt, params), nxt, reward.astype(jnp.float32), terminated, jnp.asarray(False), {}

    def observation_space(self, params: MetaParams) -> Box:
        """``N_FEATURES`` scale-free features."""
        return Box(-jnp.inf, jnp.inf, (N_FEATURES,), jnp.float32)

    def action_space(self, params: MetaParams) -> Discrete | MultiDiscrete:
        """A goal option slot and a frontier portfolio (one joint index, or two components)."""
        if self.joint:
            return Discrete(MAX_OPTIONS * self.n_portfolios)
        return MultiDiscrete((MAX_OPTIONS, self.n_portfolios))


DEFAULT_BANK = 64
"""Problems in ``WealthMetaEnv.default_params``' bank."""


def make_params(problems: list[WealthProblem], mu: np.ndarray, sigma: np.ndarray) -> MetaParams:
    """Encode and stack ``problems`` into a bank, with the frontier ``(mu, sigma)``."""
    bank = stack([encode(p)[0] for p in problems])
    return MetaParams(bank=bank, mu=jnp.asarray(mu, jnp.float32), sigma=jnp.asarray(sigma, jnp.float32))
