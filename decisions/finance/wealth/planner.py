"""The MetaRL planner: one PPO policy trained on thousands of client problems, applied to new ones.

Refinement (``distill.refine``): the PPO planner's joint head fitted to the exact DP's regrets
on training problems (never held-out ones), on the states the planner visits.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.agents import ppo
from decisions.core.agents.common import ProgressFn, TrainResult
from decisions.core.agents.onpolicy import ActorCriticPolicy, write_policy
from decisions.core.agents.onpolicy.io import read_policy
from decisions.errors import InputError
from decisions.finance.wealth.dp import OptionSet, option_sets, wealth_grid
from decisions.finance.wealth.families import sample_problems
from decisions.finance.wealth.market import Market
from decisions.finance.wealth.meta_env import (
    MAX_OPTIONS,
    N_FEATURES,
    ProblemArrays,
    WealthMetaEnv,
    encode,
    features,
    make_params,
    on_device,
    resolve_option,
    split_action,
)
from decisions.finance.wealth.planner_limits import (
    PLANNER_NUM_ENVS,
    PLANNER_ROLLOUT_STEPS,
    PLANNER_TRAIN_STEPS,
)
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.simulate import Policy

PyTree = Any

DEFAULT_CONFIG = ppo.PPOConfig(
    num_envs=PLANNER_NUM_ENVS,
    rollout_steps=PLANNER_ROLLOUT_STEPS,
    total_env_steps=PLANNER_TRAIN_STEPS,
    gamma=1.0,
    gae_lambda=0.95,
    learning_rate=3e-4,
    hidden=(256, 256),
    minibatches=8,
    epochs=2,
    entropy_coef=0.003,
    normalize_rewards=False,
    log_every=20,
)
"""PPO settings of the planner (undiscounted: the episode is the client's horizon)."""


@dataclass(frozen=True)
class Planner:
    """A trained planner: the PPO policy and its params."""

    policy: ActorCriticPolicy
    params: PyTree

    @property
    def joint(self) -> bool:
        """One categorical over (option slot, portfolio) pairs, rather than two independent heads."""
        return not self.policy.action_nvec

    @property
    def n_portfolios(self) -> int:
        """Portfolios the policy chooses among."""
        return self.policy.num_actions // MAX_OPTIONS if self.joint else self.policy.action_nvec[1]


def joint_planner(planner: Planner) -> Planner:
    """The same planner with one joint head: logit(slot, k) = logit(slot) + logit(k).

    The joint distribution is the product of the two heads', so its greedy choices and its
    probabilities are exactly the factored planner's; fine-tuning it (``train_planner(initial=...)``)
    can then learn which portfolio goes with which goal option.
    """
    if planner.joint:
        return planner
    n_port = planner.n_portfolios
    head = planner.params["net"]["params"]["head"]["Dense_0"]
    kernel, bias = jnp.asarray(head["kernel"]), jnp.asarray(head["bias"])

    def pair(x: Array) -> Array:
        sums = x[..., :MAX_OPTIONS, None] + x[..., None, MAX_OPTIONS:]
        return sums.reshape(*x.shape[:-1], MAX_OPTIONS * n_port)

    net = jax.tree_util.tree_map(lambda x: x, planner.params["net"])
    net["params"]["head"]["Dense_0"] = {"bias": pair(bias), "kernel": pair(kernel)}
    policy = dataclasses.replace(
        planner.policy, num_actions=MAX_OPTIONS * n_port, action_shape=(), action_nvec=()
    )
    return Planner(policy, {**planner.params, "net": net})


FINE_TUNE_CONFIG = dataclasses.replace(
    DEFAULT_CONFIG, total_env_steps=100_000_000, learning_rate=1e-4, entropy_coef=0.0
)
"""The second stage of the shipped planner: ``train_planner(config=FINE_TUNE_CONFIG, seed=1, initial=...)``."""

DEFAULT_PLANNER_PATH = Path(__file__).with_name("planner.msgpack")
"""The shipped planner:"""
PPO_PLANNER_PATH = Path(__file__).with_name("planner_ppo.msgpack")
"""The shipped planner before its DP refinement (PPO and fine-tune only): the start of
``examples/wealth_refine.toml``, kept so that the refinement can be rerun and compared."""


def train_planner(
    problems: int = 16_384,
    *,
    config: ppo.PPOConfig = DEFAULT_CONFIG,
    market: Market | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    initial: Planner | None = None,
    joint: bool = True,
    checkpoint: str | os.PathLike[str] | None = None,
) -> tuple[Planner, TrainResult]:
    """Train the planner with PPO on ``problems`` sampled training problems (family ``mixed``).

    Returns:
        The planner and the training result.
    """
    market = market or Market()
    mu, sigma = market.frontier()
    bank = make_params(sample_problems(problems, "mixed", market=market), mu, sigma)
    env = _meta_env(len(mu), joint)
    if initial is not None and joint:
        initial = joint_planner(initial)
    result = ppo.train(
        env, config, key=jax.random.PRNGKey(seed), params=bank, progress=progress,
        initial=None if initial is None else initial.params, checkpoint=checkpoint,
    )
    return Planner(result.policy, result.params), result


@functools.lru_cache(maxsize=4)
def _meta_env(n_portfolios: int, joint: bool) -> WealthMetaEnv:
    """The training environment of a planner's shape: one object each, so that a training repeated
    or resumed in the same process reuses the compiled loop (``ppo.train`` keys it on the env)."""
    return WealthMetaEnv(n_portfolios, joint=joint)


def training_summary(result: TrainResult, *, problems: int) -> dict[str, Any]:
    """How a PPO run trained a planner: problems in its bank, steps, seconds, final return."""
    episode_return = np.asarray(result.metrics.get("episode_return", [np.nan]), dtype=float)
    return {
        "problems": int(problems),
        "env_steps": int(result.env_steps),
        "train_seconds": float(result.train_seconds),
        "final_episode_return": float(np.nanmean(episode_return[-10:])),
    }


def write_planner(path: str | os.PathLike[str], planner: Planner, training: dict[str, Any]) -> None:
    """Write ``planner`` as an actor-critic policy file with ``training`` (JSON-able: how it was made) in its
    description."""
    write_policy(path, planner.policy, planner.params, extra={"training": training})


def save_planner(path: str | os.PathLike[str], result: TrainResult, *, problems: int) -> None:
    """Write a PPO-trained planner, with how it was trained (``problems`` in the bank) in the description."""
    write_planner(path, Planner(result.policy, result.params), training_summary(result, problems=problems))


def _read_planner(path: str | os.PathLike[str]) -> tuple[Planner, dict[str, Any]]:
    """``(planner, description)`` of a file written by ``save_planner``.

    Raises:
        InputError: (``planner.path``, a ``ValueError``) not a saved actor-critic policy, or not a planner.
    """
    policy, params, description = read_policy(path, field="planner.path")
    factored = policy.action_nvec[:1] == (MAX_OPTIONS,) and len(policy.action_nvec) == 2
    joint = not policy.action_nvec and policy.num_actions > 0 and policy.num_actions % MAX_OPTIONS == 0
    if not (factored or joint) or policy.obs_shape != (N_FEATURES,):
        actions = policy.action_nvec or policy.num_actions
        raise InputError(
            "planner.path", f"{path}: not a wealth planner (observation {policy.obs_shape}, actions {actions})"
        )
    return Planner(policy, params), description


def load_planner(path: str | os.PathLike[str]) -> Planner:
    """Read a planner written by ``save_planner`` (raises ``InputError``, a ``ValueError``, for any other file)."""
    return _read_planner(path)[0]


def planner_training(path: str | os.PathLike[str] = DEFAULT_PLANNER_PATH) -> dict[str, Any]:
    """How the planner in ``path`` was trained (problems, steps, seconds), from its description."""
    return dict(_read_planner(path)[1].get("training", {}))


@functools.lru_cache(maxsize=1)
def default_planner() -> Planner:
    """The shipped planner (loaded once)."""
    if not DEFAULT_PLANNER_PATH.is_file():
        raise FileNotFoundError(
            f"{DEFAULT_PLANNER_PATH} is missing: train one with `decisions run examples/wealth_train.toml`"
        )
    return load_planner(DEFAULT_PLANNER_PATH)


MIN_BATCH = 4096
"""Smallest padded batch of ``decide``."""


@partial(jax.jit, static_argnames=("policy", "n_portfolios"))
def _decide_jit(
    policy: ActorCriticPolicy,
    n_portfolios: int,
    params: PyTree,
    prob: ProblemArrays,
    t: Array,
    cash: Array,
    mu_safe: Array,
) -> tuple[Array, Array]:
    obs = jax.vmap(features, in_axes=(None, 0, 0, None))(prob, t, cash, mu_safe)
    action = policy(params, obs, jax.random.PRNGKey(0))
    slot, portfolio = split_action(action, n_portfolios, not policy.action_nvec)
    option = jax.vmap(resolve_option, in_axes=(None, 0, 0, 0))(prob, t, cash, slot)
    return option, portfolio


def decide(
    planner: Planner, prob: ProblemArrays, t: np.ndarray, cash: np.ndarray, mu_safe: float,
    *, min_batch: int = MIN_BATCH,
) -> tuple[np.ndarray, np.ndarray]:
    """Option and portfolio for each ``(t, cash)`` pair (cash in units of ``W0``).

    The batch is padded to a power of two, at least ``min_batch``: by default one compiled shape
    serves every table (at most 31 years x 129 nodes) and Monte Carlo runs of up to 4096 paths.
    """
    n = len(cash)
    size = max(min_batch, 1 << max(n - 1, 1).bit_length())
    t_pad = np.zeros(size, np.int32)
    c_pad = np.ones(size, np.float32)
    t_pad[:n], c_pad[:n] = t, cash
    option, port = _decide_jit(
        planner.policy, planner.n_portfolios, planner.params, prob, jnp.asarray(t_pad), jnp.asarray(c_pad), jnp.float32(mu_safe)
    )
    return np.asarray(option[:n], np.int64), np.asarray(port[:n], np.int64)


@dataclass(frozen=True)
class Plan:
    """The planner's answer for one client.

    Attributes:
        wealth: wealth of each table state: 0 (bankrupt), then every k-th node of ``dp.wealth_grid``.
        portfolio: portfolio index per year ``0 .. T-1`` and grid state, ``(T, S)``.
        goal_option: option index (into ``options[t]``) per year ``0 .. T`` and state, ``(T + 1, S)``;
            -1 where the state cannot pay its cash flow or is bankrupt.
        options: the option set of each year.
        policy: the planner as a ``simulate.Policy`` on continuous wealth.
        seconds: time ``plan`` took (encoding, grid and tables).
    """

    wealth: np.ndarray
    portfolio: np.ndarray
    goal_option: np.ndarray
    options: tuple[OptionSet, ...]
    policy: Policy = field(repr=False)
    seconds: float = 0.0


def target_options(problem: WealthProblem) -> np.ndarray:
    """Map the year-``T`` options of ``problem.target_as_goal()`` to those of ``problem``."""
    sets = option_sets(problem)
    if problem.target is None:
        return np.arange(len(sets[-1].costs))
    folded = option_sets(problem.target_as_goal())[-1]
    n_goals = len(problem.goals)
    costs = [
        sum(problem.goals[g].options[k - 1].cost if k else 0.0 for g, k in zip(folded.goals, choice, strict=True) if g < n_goals)
        for choice in folded.choices
    ]
    return np.maximum(np.searchsorted(sets[-1].costs, np.asarray(costs, dtype=float), side="right") - 1, 0)


def plan(planner: Planner, problem: WealthProblem, *, table_nodes: int = 128) -> Plan:
    """The planner's policy for a new client, as tables on the wealth grid and as a ``Policy``.

    Raises:
        InputError: (a ``ValueError``) the problem is beyond the planner's padding (see
            ``meta_env.encode``), or its market has another number of frontier portfolios than
            the planner chooses among (its index ``k`` would name another portfolio).
    """
    start = time.perf_counter()
    if problem.market.n_portfolios != planner.n_portfolios:
        raise InputError(
            "problem.market.n_portfolios",
            f"the planner chooses among {planner.n_portfolios} frontier portfolios, got {problem.market.n_portfolios}: "
            f"use {planner.n_portfolios} or train a planner for this market (planner.train_problems)",
        )
    encoded, scale, _ = encode(problem)
    arrays = on_device(encoded)
    mu, _ = problem.market.frontier()
    mu_safe = float(mu[0])
    n_port = problem.market.n_portfolios
    horizon = problem.horizon
    at_horizon = target_options(problem)

    def policy(t: int, cash: np.ndarray, wealth: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        option, port = decide(planner, arrays, np.full(len(cash), t), cash / scale, mu_safe)
        if t == horizon:
            option = at_horizon[option]
        return option, np.minimum(port, n_port - 1)

    grid = wealth_grid(problem)
    wealth = np.concatenate([[0.0], grid[:: max(1, -(-len(grid) // table_nodes))]])
    years = np.repeat(np.arange(horizon + 1), len(wealth))
    cash = np.tile(wealth, horizon + 1) + np.repeat(np.asarray(problem.flows() + [0.0]), len(wealth))
    option, port = decide(planner, arrays, years, cash / scale, mu_safe)
    option = np.where(years == horizon, at_horizon[np.minimum(option, len(at_horizon) - 1)], option)
    alive = (np.tile(wealth, horizon + 1) > 0) & (cash >= 0)
    goal_option = np.where(alive, option, -1).reshape(horizon + 1, len(wealth))
    portfolio = np.where(alive, np.minimum(port, n_port - 1), -1).reshape(horizon + 1, len(wealth))[:horizon]
    sets = option_sets(problem)
    return Plan(
        wealth=wealth,
        portfolio=portfolio,
        goal_option=goal_option,
        options=sets,
        policy=policy,
        seconds=time.perf_counter() - start,
    )
