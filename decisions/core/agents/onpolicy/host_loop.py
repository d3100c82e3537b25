"""The on-policy loop (PPO, A2C) for host environments (``core.host_envs.MultiAgentVecEnv``) with
``Discrete`` actions: ``train_agent_host`` collects rollouts in Python with one jitted act and
one jitted update, otherwise as ``onpolicy.loop.train_agent`` (no checkpoints, one seed).
Truncation and action masks: ``docs/notes/core.md``.
"""

from __future__ import annotations

import dataclasses
import time
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.agents.common import ProgressFn, TrainResult, make_result
from decisions.core.agents.loop_common import HostLog, reset_host_envs
from decisions.core.agents.onpolicy.agent import OnPolicyAgent
from decisions.core.agents.onpolicy.config import OnPolicyConfig
from decisions.core.agents.onpolicy.loop import (
    OnPolicyState,
    Rollout,
    act,
    initial_state,
    learning_reward,
    update_on_rollout,
)
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy
from decisions.core.host_envs import (
    EpisodeTracker,
    MultiAgentVecEnv,
    check_sizes,
    check_step,
)

__all__ = ["HostRollout", "bootstrap_values", "policy_actions", "train_agent_host"]

PyTree = Any


class HostRollout(NamedTuple):
    """One iteration's collection, time-major ``(rollout_steps, slots, ...)`` numpy arrays."""

    obs: np.ndarray  # normalised features the actions were chosen on
    action: np.ndarray  # int32 action indices
    log_prob: np.ndarray  # under the (masked) rollout policy
    value: np.ndarray  # V(obs)
    final_value: np.ndarray  # V(final_obs) on the steps where some slot truncated (else 0)
    reward: np.ndarray  # environment rewards (unscaled)
    terminated: np.ndarray
    truncated: np.ndarray
    mask: np.ndarray | None  # bool valid actions, or None without action masks


def bootstrap_values(value: Array, last_value: Array, final_value: Array, truncated: Array) -> Array:
    """``(T, slots)`` values of the observations the steps produced (``loop.Rollout.next_value``):
    ``final_value[t]`` where ``truncated[t]``, else ``value[t + 1]`` (``last_value`` at the end)."""
    following = jnp.concatenate([value[1:], last_value[None]], axis=0)
    return jnp.where(truncated, final_value, following)


def _learning_rewards(
    state: OnPolicyState, reward: Array, done: Array, config: OnPolicyConfig
) -> tuple[OnPolicyState, Array]:
    """``loop.learning_reward`` over a rollout's steps in order; returns the state with the reward statistics."""

    def step(carry: tuple[Any, Array], xs: tuple[Array, Array]) -> tuple[tuple[Any, Array], Array]:
        learn_reward, stats, discounted = learning_reward(xs[0], xs[1], *carry, config)
        return (stats, discounted), learn_reward

    carry = (state.reward_stats, state.discounted_return)
    (stats, discounted), learn_reward = jax.lax.scan(step, carry, (reward, done))
    return state._replace(reward_stats=stats, discounted_return=discounted), learn_reward


@partial(jax.jit, static_argnames="agent")
def _init(agent: OnPolicyAgent, key: Array) -> OnPolicyState:
    """The functional loop's fresh state (same key split; its second key resets the environments)."""
    net_key, _, loop_key = jax.random.split(key, 3)
    return initial_state(agent, net_key, loop_key)


@partial(jax.jit, static_argnames=("agent", "masked"))
def _act(
    agent: OnPolicyAgent,
    state: OnPolicyState,
    step_keys: Array,
    t: Array,
    obs: Array,
    mask: Array,
    *,
    masked: bool,
) -> tuple[OnPolicyState, tuple[Array, Array, Array, Array], Array]:
    """Rollout step ``t``: ``(state with obs folded in, (features, action, log_prob, value), env actions)``."""
    act_key, _ = jax.random.split(step_keys[t])  # the functional loop's split; its second key steps the envs
    obs_stats, x, raw, log_prob, value = act(
        agent, state.net, state.obs_stats, obs, act_key, mask if masked else None
    )
    return state._replace(obs_stats=obs_stats), (x, raw, log_prob, value), agent.policy.to_env(raw)


@partial(jax.jit, static_argnames="policy")
def _values(policy: ActorCriticPolicy, state: OnPolicyState, obs: Array) -> Array:
    """The critic's values of raw observations, normalised with the state's current statistics."""
    return policy.value({"net": state.net, "obs_stats": state.obs_stats}, obs)


@partial(jax.jit, static_argnames="agent")
def _learn(
    agent: OnPolicyAgent, state: OnPolicyState, rollout: HostRollout, last_obs: Array, key: Array
) -> tuple[OnPolicyState, dict[str, Array]]:
    """Learning rewards, next values (``bootstrap_values``), then ``update_on_rollout``."""
    last_value = agent.policy.value({"net": state.net, "obs_stats": state.obs_stats}, last_obs)
    state, reward = _learning_rewards(
        state, rollout.reward, rollout.terminated | rollout.truncated, agent.config
    )
    next_value = bootstrap_values(rollout.value, last_value, rollout.final_value, rollout.truncated)
    learn_on = Rollout(
        rollout.obs,
        rollout.action,
        rollout.log_prob,
        rollout.value,
        next_value,
        reward,
        rollout.terminated,
        rollout.truncated,
        rollout.mask,
    )
    net, opt_state, metrics = update_on_rollout(
        agent, state.net, state.opt_state, state.iteration, learn_on, key
    )
    return state._replace(net=net, opt_state=opt_state, iteration=state.iteration + 1), metrics


def _collect(
    agent: OnPolicyAgent,
    envs: MultiAgentVecEnv,
    state: OnPolicyState,
    obs: np.ndarray,
    mask: np.ndarray,
    step_keys: Array,
    episodes: EpisodeTracker,
    *,
    masked: bool,
) -> tuple[OnPolicyState, HostRollout, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``rollout_steps`` vector steps from ``(obs, mask)``; ``(state, rollout, obs, mask, returns,
    lengths)`` after them, with the episodes that ended in them."""
    steps, ended = [], []
    for t in range(agent.config.rollout_steps):
        state, decided, env_action = _act(agent, state, step_keys, np.int32(t), obs, mask, masked=masked)
        x, action, log_prob, value = jax.device_get(decided)
        out = check_step(envs.step(np.asarray(env_action)), envs, masked)
        final_value = np.zeros(envs.num_slots, np.float32)
        if out.truncated.any():
            final_value = np.asarray(_values(agent.policy, state, out.final_obs))
        steps.append(
            (x, action, log_prob, value, final_value, out.reward, out.terminated, out.truncated, mask)
        )
        ended.append(episodes.step(out.reward, out.terminated | out.truncated))
        obs, mask = out.obs, out.mask
    *fields, masks = (np.stack(column) for column in zip(*steps, strict=True))
    rollout = HostRollout(*fields, mask=masks if masked else None)
    returns, lengths = (np.concatenate(column) for column in zip(*ended, strict=True))
    return state, rollout, obs, mask, returns, lengths


def _episode_metrics(returns: np.ndarray, lengths: np.ndarray) -> dict[str, np.ndarray]:
    """Mean return and length of the episodes that ended in an iteration (NaN if none did), and their number."""
    count = np.int32(returns.size)

    def mean(x: np.ndarray) -> np.float32:
        return (
            np.float32(x.astype(np.float32).sum(dtype=np.float32) / np.float32(count))
            if count
            else np.float32(np.nan)
        )

    return {"episode_return": mean(returns), "episode_length": mean(lengths), "episodes": count}


def _check_setup(agent: OnPolicyAgent, envs: MultiAgentVecEnv) -> None:
    policy = agent.policy
    if not policy.discrete or policy.action_nvec or policy.obs_categories:
        raise ValueError(
            "policy: the host loop needs float observations and Discrete actions (build the agent with for_shapes)"
        )
    check_sizes(
        envs, num_envs=agent.config.num_envs, obs_shape=policy.obs_shape, num_actions=policy.num_actions
    )


def train_agent_host(
    agent: OnPolicyAgent, envs: MultiAgentVecEnv, *, key: Array, progress: ProgressFn | None = None,
    action_masks: bool = True,
) -> TrainResult:
    """Train an on-policy agent on host environments (``train_agent``'s loop, collected in Python).

    Args:
        agent: built for ``envs`` (``for_shapes``), its ``num_envs`` ``envs.num_slots``.
        envs: left open; close them after.
        action_masks: act and learn among the valid actions only.

    Returns:
        A ``TrainResult`` as ``train_agent``'s; its policy is unmasked (``policy_actions`` masks).

    Raises:
        ValueError: the agent, config and environments disagree (slots, shapes, a policy that is
            not discrete), or the environments return arrays of the wrong shape or dtype, or
            (with ``action_masks``) a slot without a valid action.
    """
    start = time.perf_counter()
    config = agent.config
    _check_setup(agent, envs)
    state = _init(agent, key)
    reset_key = jax.random.split(key, 3)[1]
    obs, mask = reset_host_envs(envs, reset_key, acting=action_masks)
    episodes = EpisodeTracker(envs.num_slots)
    host_log = HostLog(config, progress, agent.kind)
    for iteration in range(1, config.iterations + 1):
        loop_key, rollout_key, update_key = jax.random.split(
            state.key, 3
        )  # as the functional loop's iteration
        step_keys = jax.random.split(rollout_key, config.rollout_steps)
        state, rollout, obs, mask, returns, lengths = _collect(
            agent, envs, state._replace(key=loop_key), obs, mask, step_keys, episodes, masked=action_masks
        )
        state, metrics = _learn(agent, state, rollout, obs, update_key)
        host_log.append(iteration, {**_episode_metrics(returns, lengths), **metrics})
    log = host_log.log()
    params = {"net": state.net, "obs_stats": state.obs_stats}
    return make_result(agent.policy, params, log, config.iterations * config.batch_size, start)


@partial(jax.jit, static_argnums=0)
def _policy_act(
    policy: ActorCriticPolicy, params: PyTree, obs: Array, mask: Array, key: Array | None
) -> Array:
    return policy(params, obs, key, mask)


def policy_actions(
    policy: ActorCriticPolicy, params: PyTree, obs: Any, mask: Any, key: Array | None = None
) -> np.ndarray:
    """A discrete actor-critic's actions among the valid ones for host observations (rows or one
    row): greedy with ``key`` None, else sampled from the masked distribution."""
    policy = dataclasses.replace(policy, deterministic=key is None)
    return np.asarray(
        _policy_act(policy, params, jnp.asarray(obs, jnp.float32), jnp.asarray(mask, bool), key)
    )
