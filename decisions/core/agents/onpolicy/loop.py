"""The training loop every on-policy agent runs: rollout, advantages (``gae``), the agent's update,
in jitted chunks (``loop_common.run_agent_chunks``), optionally vmapped over seeds.

Observations are flattened (``Discrete`` ones one-hot) and, with ``normalize_obs``, scaled by
running statistics saved with the params. ``onpolicy.host_loop`` shares ``initial_state``,
``act``, ``learning_reward`` and ``update_on_rollout``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents.common import ProgressFn, RunningStats, TrainResult, make_result
from decisions.core.agents.loop_common import loop_env_params, run_agent_chunks, training_envs
from decisions.core.agents.onpolicy.agent import ActorCriticAgent, OnPolicyAgent, optimizer, schedule
from decisions.core.agents.onpolicy.config import OnPolicyConfig
from decisions.core.agents.onpolicy.losses import Batch, gae
from decisions.core.agents.trainers import agent_trainers
from decisions.core.env import Environment
from decisions.core.pytrees import PyTree, fits

__all__ = [
    "OnPolicyState",
    "Rollout",
    "act",
    "initial_state",
    "learning_reward",
    "train_agent",
    "trainers",
    "update_on_rollout",
]


class OnPolicyState(NamedTuple):
    """Loop state carried between iterations and checkpointed (``env_state``, ``obs`` None in the host loop)."""

    net: PyTree
    opt_state: PyTree
    obs_stats: RunningStats
    reward_stats: RunningStats  # () statistics of the discounted return (normalize_rewards)
    discounted_return: Array  # (num_envs,) running discounted return (normalize_rewards)
    env_state: PyTree
    obs: Array | None  # (num_envs, *obs_shape) current raw observations
    iteration: Array  # () int32
    key: Array


class Transition(NamedTuple):
    """One rollout step of all environments (stacked over time by the scan); the values of
    ``obs`` and ``final_obs`` are computed after the scan, in one batched call."""

    obs: Array  # normalised features the actions were chosen on
    final_obs: Array  # normalised features of the observation the step produced (``info["final_obs"]``)
    action: Array
    log_prob: Array
    reward: Array  # learning reward (scaled / normalised)
    terminated: Array
    truncated: Array
    episode_done: Array
    episode_return: Array
    episode_length: Array


class Rollout(NamedTuple):
    """What the update needs of one rollout, time-major ``(rollout_steps, num_envs, ...)``."""

    obs: Array  # normalised features the actions were chosen on
    action: Array  # raw actions
    log_prob: Array
    value: Array  # V(obs)
    next_value: Array  # V of the observation the step produced (``final_obs`` where an episode ended)
    reward: Array  # learning reward (scaled / normalised)
    terminated: Array
    truncated: Array
    mask: Array | None = None  # bool valid actions (``Batch.mask``), or None: all valid


def initial_state(
    agent: OnPolicyAgent, net_key: Array, loop_key: Array, env_state: PyTree = None, obs: Array | None = None
) -> OnPolicyState:
    """A fresh network (from ``net_key``), optimiser state and statistics, before iteration 0
    (``env_state`` and ``obs`` None for host environments)."""
    config = agent.config
    params = agent.policy.init(net_key, config.normalize_obs)
    return OnPolicyState(
        net=params["net"],
        opt_state=optimizer(agent).init(params["net"]),
        obs_stats=params["obs_stats"],
        reward_stats=RunningStats.create(()),
        discounted_return=jnp.zeros((config.num_envs,), jnp.float32),
        env_state=env_state,
        obs=obs,
        iteration=jnp.zeros((), jnp.int32),
        key=loop_key,
    )


def _init_state(key: Array, env_params: Any, env: Environment[Any, Any], agent: OnPolicyAgent) -> OnPolicyState:
    """Fresh network, optimiser state, statistics and environments (reset) for one seed."""
    k_net, k_env, k_loop = jax.random.split(key, 3)
    obs, env_state = training_envs(env, agent.config.num_envs).reset(k_env, env_params)
    return initial_state(agent, k_net, k_loop, env_state, obs)


def learning_reward(
    reward: Array, done: Array, stats: RunningStats, discounted: Array, config: OnPolicyConfig
) -> tuple[Array, RunningStats, Array]:
    """Scale rewards; with ``normalize_rewards`` divide by the running std of the discounted return."""
    reward = reward * config.reward_scale
    if not config.normalize_rewards:
        return reward, stats, discounted
    discounted = discounted * config.gamma + reward
    stats = stats.update(discounted)
    reward = jnp.clip(reward / jnp.sqrt(stats.var + 1e-8), -10.0, 10.0)
    return reward, stats, jnp.where(done, 0.0, discounted)


def act(
    agent: OnPolicyAgent,
    net: PyTree,
    obs_stats: RunningStats,
    obs: Array,
    key: Array,
    mask: Array | None = None,
) -> tuple[RunningStats, Array, Array, Array, Array]:
    """One rollout step's sampled decision for raw observations ``(num_envs, *obs_shape)``.

    ``obs`` is folded into ``obs_stats`` first (with ``normalize_obs``); an optional ``mask`` keeps
    the draw to the valid actions.

    Returns:
        ``(obs_stats, features, raw_action, log_prob, value)``.
    """
    policy = agent.policy
    features = policy.encode(obs)
    obs_stats = obs_stats.update(features) if agent.config.normalize_obs else obs_stats
    x = obs_stats.normalize(features)
    dist, value = policy.network.apply(net, x)
    if mask is not None:
        dist = policy.mask_logits(dist, mask)
    raw = policy.sample(dist, key)
    return obs_stats, x, raw, policy.log_prob(dist, raw), value


def _rollout(
    state: OnPolicyState, env_params: Any, key: Array, env: Environment[Any, Any], agent: OnPolicyAgent
) -> tuple[OnPolicyState, Transition, Rollout]:
    """``rollout_steps`` steps of all environments with the current policy (sampled actions).

    The scan runs the actor only; the critic's values of every step's features and final
    features come from one batched call after it (the network is fixed during the rollout, so
    they are the values ``act`` gives, and the keys are drawn as the host loop draws them:
    every step's pair of keys is split before the scan, in one batched call, and the actions'
    noise is drawn from them there too, ``policy.sample_noise``).
    """
    config, policy = agent.config, agent.policy
    venv = training_envs(env, config.num_envs)

    def step(carry: OnPolicyState, inputs: tuple[Any, Array]) -> tuple[OnPolicyState, Transition]:
        noise, k_env = inputs
        features = policy.encode(carry.obs)
        obs_stats = carry.obs_stats.update(features) if config.normalize_obs else carry.obs_stats
        x = obs_stats.normalize(features)
        dist = policy.network.apply(carry.net, x, method="actor")
        raw = policy.sample_with(dist, noise)
        obs, env_state, reward, terminated, truncated, info = venv.step(
            k_env, carry.env_state, policy.to_env(raw), env_params
        )
        learn_reward, reward_stats, discounted = learning_reward(
            reward, terminated | truncated, carry.reward_stats, carry.discounted_return, config
        )
        carry = carry._replace(
            obs_stats=obs_stats,
            reward_stats=reward_stats,
            discounted_return=discounted,
            env_state=env_state,
            obs=obs,
        )
        transition = Transition(
            x,
            obs_stats.normalize(policy.encode(info["final_obs"])),
            raw,
            policy.log_prob(dist, raw),
            learn_reward,
            terminated,
            truncated,
            info["returned_episode"],
            info["returned_episode_return"],
            info["returned_episode_length"],
        )
        return carry, transition

    step_keys = jax.vmap(jax.random.split)(jax.random.split(key, config.rollout_steps))
    noise = jax.vmap(lambda k: policy.sample_noise(k, (config.num_envs,)))(step_keys[:, 0])
    state, traj = jax.lax.scan(step, state, (noise, step_keys[:, 1]))
    values = policy.network.apply(state.net, jnp.stack([traj.obs, traj.final_obs]), method="value")
    rollout = Rollout(
        traj.obs, traj.action, traj.log_prob, values[0], values[1], traj.reward, traj.terminated, traj.truncated
    )
    return state, traj, rollout


def _episode_metrics(traj: Transition) -> dict[str, Array]:
    """Mean return and length of the episodes that finished in this rollout (NaN if none did)."""
    count = jnp.sum(traj.episode_done)
    denom = jnp.maximum(count, 1).astype(jnp.float32)

    def mean_finished(x: Array) -> Array:
        total = jnp.sum(jnp.where(traj.episode_done, x, 0).astype(jnp.float32))
        return jnp.where(count > 0, total / denom, jnp.nan)

    return {
        "episode_return": mean_finished(traj.episode_return),
        "episode_length": mean_finished(traj.episode_length),
        "episodes": count.astype(jnp.int32),
    }


def update_on_rollout(
    agent: OnPolicyAgent, net: PyTree, opt_state: PyTree, iteration: Array, rollout: Rollout, key: Array
) -> tuple[PyTree, PyTree, dict[str, Array]]:
    """Advantages (``gae``) of a rollout, then the agent's update on it flattened into a ``Batch``;
    ``(net, opt_state, metrics)`` with ``learning_rate`` at ``iteration``."""
    config = agent.config
    advantages, targets = gae(
        rollout.reward,
        rollout.value,
        rollout.next_value,
        rollout.terminated,
        rollout.truncated,
        config.gamma,
        config.gae_lambda,
    )
    flat = partial(jax.tree_util.tree_map, lambda x: x.reshape((config.batch_size, *x.shape[2:])))
    batch = Batch(*flat((rollout.obs, rollout.action, rollout.log_prob, advantages, targets, rollout.mask)))
    net, opt_state, update_metrics = agent.update(optimizer(agent), net, opt_state, batch, key)
    learning_rate = schedule(agent)(iteration * agent.updates_per_iteration)
    return net, opt_state, {**update_metrics, "learning_rate": jnp.asarray(learning_rate, jnp.float32)}


def _iteration(
    state: OnPolicyState, env_params: Any, env: Environment[Any, Any], agent: OnPolicyAgent
) -> tuple[OnPolicyState, dict[str, Array]]:
    """One rollout, advantage estimate and agent update."""
    key, k_roll, k_update = jax.random.split(state.key, 3)
    state, traj, rollout = _rollout(state, env_params, k_roll, env, agent)
    net, opt_state, update_metrics = update_on_rollout(
        agent, state.net, state.opt_state, state.iteration, rollout, k_update
    )
    log = {**_episode_metrics(traj), **update_metrics}
    state = state._replace(net=net, opt_state=opt_state, iteration=state.iteration + 1, key=key)
    return state, log


def _run(
    state: OnPolicyState, env_params: Any, env: Environment[Any, Any], agent: OnPolicyAgent, n: int
) -> tuple[OnPolicyState, dict[str, Array]]:
    """``n`` iterations in one ``lax.scan``; the log leaves gain a leading ``n`` axis."""
    return jax.lax.scan(lambda s, _: _iteration(s, env_params, env, agent), state, None, length=n)


@partial(jax.jit, static_argnames=("env", "agent", "seeds"))
def _init(
    key: Array, env_params: Any, *, env: Environment[Any, Any], agent: OnPolicyAgent, seeds: bool
) -> OnPolicyState:
    """``_init_state`` for one key, or for every key of a leading seed axis with ``seeds``."""
    if seeds:
        return jax.vmap(lambda k: _init_state(k, env_params, env, agent))(key)
    return _init_state(key, env_params, env, agent)


@partial(jax.jit, static_argnames=("env", "agent", "n", "seeds"))
def _chunk(
    state: OnPolicyState,
    env_params: Any,
    *,
    env: Environment[Any, Any],
    agent: OnPolicyAgent,
    n: int,
    seeds: bool,
) -> tuple[OnPolicyState, dict[str, Array]]:
    """``_run``, vmapped over a leading seed axis of ``state`` with ``seeds`` (the env params are shared)."""
    if seeds:
        return jax.vmap(lambda s: _run(s, env_params, env, agent, n))(state)
    return _run(state, env_params, env, agent, n)


def _warm_start(state: OnPolicyState, initial: PyTree, agent: OnPolicyAgent) -> OnPolicyState:
    """``state`` with the network and observation statistics of ``initial`` and a fresh optimiser."""
    expected = {"net": state.net, "obs_stats": state.obs_stats}
    if not isinstance(initial, Mapping) or not fits(dict(initial), expected):
        raise ValueError("initial: the params do not fit this policy (another network or observation shape)")
    net = jax.tree_util.tree_map(jnp.asarray, initial["net"])
    return state._replace(net=net, opt_state=optimizer(agent).init(net), obs_stats=initial["obs_stats"])


def train_agent(
    agent: OnPolicyAgent,
    env: Environment[Any, Any],
    *,
    key: Array,
    params: Any = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    initial: PyTree | None = None,
    seeds: bool = False,
) -> TrainResult:
    """Train an on-policy agent (what ``ppo.train`` / ``a2c.train`` and their ``train_seeds`` call).

    Args:
        env: an unwrapped environment (the same object reuses the compiled loop).
        key: the run's key; with ``seeds``, one key per seed, trained at once.
        params: the environment's params, shared by all seeds (default ``env.default_params``).
        checkpoint: optional file written after every chunk and resumed from when it exists.
        initial: optional policy params (one seed) to fine-tune, with a fresh optimiser.

    Returns:
        A ``TrainResult`` with the deterministic policy (a leading seed axis with ``seeds``).

    Raises:
        ValueError: ``initial`` does not fit the policy (the message names ``initial``).
    """
    start = time.perf_counter()
    config = agent.config
    env_params = loop_env_params(env, params)
    state = _init(key, env_params, env=env, agent=agent, seeds=seeds)
    if initial is not None:
        state = _warm_start(state, initial, agent)

    def chunk(s: OnPolicyState, n: int) -> tuple[OnPolicyState, dict[str, Array]]:
        # Block, so that progress reports (made between chunks) follow the computation.
        return jax.block_until_ready(_chunk(s, env_params, env=env, agent=agent, n=n, seeds=seeds))

    state, log = run_agent_chunks(
        agent, chunk, state, key=key, progress=progress, checkpoint=checkpoint, seeds=seeds, task=agent.kind
    )
    params = {"net": state.net, "obs_stats": state.obs_stats}
    return make_result(agent.policy, params, log, config.iterations * config.batch_size, start)


def trainers(
    agent_type: type[ActorCriticAgent], default_config: OnPolicyConfig, *, metrics: str
) -> tuple[Callable[..., TrainResult], Callable[..., TrainResult]]:
    """An on-policy agent module's ``(train, train_seeds)``: ``agent_type.for_env``, then ``train_agent``;
    ``metrics`` names the update's metrics in ``train``'s docstring."""
    returns = f"""
        A ``TrainResult``: deterministic ``policy``, params ``{{"net", "obs_stats"}}`` and
        per-iteration metrics ``episode_return`` (NaN where no episode finished),
        ``episode_length``, ``episodes``, {metrics},
        ``grad_norm`` and ``learning_rate``.
    """
    initial = "``initial``: optional policy params to fine-tune (with a fresh optimiser state)."
    return agent_trainers(agent_type.for_env, default_config, train_agent, returns=returns, options_doc=initial)
