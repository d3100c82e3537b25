"""The off-policy loop for host environments (``core.host_envs.MultiAgentVecEnv``):
``train_agent_host`` collects in Python with the agent's jitted acting, storing and updates,
step for step as ``offpolicy.loop.train_agent`` (no checkpoints, one seed). With
``action_masks`` (a ``MaskedOffPolicyAgent``) acting and the TD bootstrap keep to the valid actions.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.agents.common import ProgressFn, RunningStats, TrainResult, identity_stats, make_result
from decisions.core.agents.loop_common import HostLog, reset_host_envs
from decisions.core.agents.offpolicy.agent import OffPolicyAgent, flatten_obs, normalize
from decisions.core.agents.replay import NStepWindow, ReplayBuffer, Transition
from decisions.core.host_envs import (
    EpisodeTracker,
    MultiAgentVecEnv,
    SlotStep,
    check_sizes,
    check_step,
)

__all__ = ["HostLoopState", "MaskedOffPolicyAgent", "MaskedTransition", "greedy_actions", "train_agent_host"]

PyTree = Any


class MaskedOffPolicyAgent(OffPolicyAgent, Protocol):
    """An off-policy agent with masked twins of its acting and update (``dqn.DQNAgent``)."""

    def random_valid_action(self, key: Array, mask: Array) -> Array:
        """Uniformly random valid actions, one per row of ``mask`` (bool ``(num, num_actions)``)."""
        ...

    def explore_masked(self, state: PyTree, obs: Array, mask: Array, key: Array, frac: Array) -> Array:
        """``explore`` among the valid actions."""
        ...

    def update_masked(
        self, state: PyTree, batch: Transition, next_mask: Array, key: Array
    ) -> tuple[PyTree, dict[str, Array]]:
        """``update`` whose bootstrap keeps to the actions valid in ``batch.next_obs``."""
        ...


class MaskedTransition(NamedTuple):
    """A replay item with masks: the transition and the actions valid in its ``next_obs``."""

    transition: Transition
    next_mask: Array  # (num_actions,) bool


class HostLoopState(NamedTuple):
    """The device part of the host loop's state (the environments hold theirs)."""

    agent: PyTree
    buffer: ReplayBuffer  # of Transition, or of MaskedTransition with masks
    window: NStepWindow  # with masks, obs / next_obs rows are ``obs ‖ mask`` (0/1 floats)
    obs_stats: RunningStats
    key: Array


def _progress(config: Any, step: Array) -> Array:
    """Training progress in [0, 1] after ``step`` exploring vector steps (as ``loop._progress``)."""
    return step.astype(jnp.float32) / (config.iterations * config.train_freq)


@partial(jax.jit, static_argnames=("agent", "masked"))
def _init(agent: OffPolicyAgent, obs: Array, mask: Array, agent_key: Array, key: Array, *, masked: bool):
    """Networks, empty replay and window, statistics of the first observations (as ``loop._init_state``)."""
    config = agent.config
    shape = obs.shape[1:]
    stats = RunningStats.create(shape).update(obs) if config.normalize_obs else identity_stats(shape)
    agent_state = agent.init(agent_key, flatten_obs(obs[0], shape))
    action = agent.example_action()
    example, row = Transition(obs[0], action, jnp.float32(0), obs[0], jnp.float32(0)), obs[0]
    if masked:
        example = MaskedTransition(example, mask[0])
        row = jnp.concatenate([obs[0], mask[0].astype(jnp.float32)])
    buffer = ReplayBuffer.create(example, config.buffer_size)
    window = NStepWindow.create(row, action, config.num_envs, config.n_step)
    return HostLoopState(agent_state, buffer, window, stats, key)


@partial(jax.jit, static_argnames=("agent", "masked", "explore"))
def _act(agent: OffPolicyAgent, agent_state: PyTree, stats: RunningStats, key: Array, obs: Array, mask: Array,
         step: Array, *, masked: bool, explore: bool) -> tuple[Array, Array, Array]:
    """``(key, stored actions, environment actions)``: exploring (after ``step`` exploring steps), or random (valid) ones."""
    key, act_key, _ = jax.random.split(key, 3)  # the functional loop's split; its third key steps the envs
    if explore:
        frac = _progress(agent.config, step)
        x = normalize(stats, obs, obs.shape[1:])
        if masked:
            action = agent.explore_masked(agent_state, x, mask, act_key, frac)
        else:
            action = agent.explore(agent_state, x, act_key, frac)
    elif masked:
        action = agent.random_valid_action(act_key, mask)
    else:
        action = agent.random_action(act_key, obs.shape[0])
    return key, action, agent.env_action(action)


@partial(jax.jit, static_argnames=("agent", "masked", "store"), donate_argnums=(1,))
def _observe(agent: OffPolicyAgent, state: HostLoopState, obs: Array, mask: Array, action: Array, out: SlotStep,
             *, masked: bool, store: bool) -> HostLoopState:
    """Push one vector step into the window, store the emitted transition, fold ``out.obs`` into the statistics."""
    config = agent.config
    no_bootstrap = out.terminated if config.bootstrap_truncated else out.terminated | out.truncated
    first, last = obs, out.final_obs
    if masked:
        first = jnp.concatenate([obs, mask.astype(jnp.float32)], axis=-1)
        last = jnp.concatenate([out.final_obs, out.final_mask.astype(jnp.float32)], axis=-1)
    window = state.window.push(first, action, out.reward * config.reward_scale, last, no_bootstrap, out.truncated)
    buffer = state.buffer
    if store:
        item = window.transition(config.gamma)
        if masked:
            d = obs.shape[-1]
            trimmed = item._replace(obs=item.obs[:, :d], next_obs=item.next_obs[:, :d])
            item = MaskedTransition(trimmed, item.next_obs[:, d:] > 0.5)
        buffer = buffer.add(item)
    stats = state.obs_stats.update(out.obs) if config.normalize_obs else state.obs_stats
    return state._replace(window=window, buffer=buffer, obs_stats=stats)


@partial(jax.jit, static_argnames=("agent", "masked"), donate_argnums=(1,))
def _learn(agent: OffPolicyAgent, state: HostLoopState, step: Array, *, masked: bool):
    """``gradient_steps`` updates on uniform replay batches (metrics averaged), then the schedules after ``step``."""
    config = agent.config
    key, learn_key = jax.random.split(state.key)
    shape = state.obs_stats.mean.shape

    def one_update(agent_state: PyTree, update_key: Array) -> tuple[PyTree, dict[str, Array]]:
        sample_key, agent_key = jax.random.split(update_key)
        item = state.buffer.sample(sample_key, config.batch_size)
        batch = item.transition if masked else item
        batch = batch._replace(
            obs=normalize(state.obs_stats, batch.obs, shape), next_obs=normalize(state.obs_stats, batch.next_obs, shape)
        )
        if masked:
            return agent.update_masked(agent_state, batch, item.next_mask, agent_key)
        return agent.update(agent_state, batch, agent_key)

    agent_state, metrics = jax.lax.scan(one_update, state.agent, jax.random.split(learn_key, config.gradient_steps))
    metrics = {name: jnp.mean(value) for name, value in metrics.items()}
    metrics.update(agent.schedule_metrics(agent_state, _progress(config, step)))
    return state._replace(agent=agent_state, key=key), metrics


def _check_setup(agent: OffPolicyAgent, envs: MultiAgentVecEnv, masked: bool) -> None:
    policy = agent.policy
    num_actions = getattr(policy, "num_actions", None)
    check_sizes(envs, num_envs=agent.config.num_envs, obs_shape=policy.obs_shape, num_actions=num_actions)
    if masked:
        missing = [m for m in ("random_valid_action", "explore_masked", "update_masked") if not hasattr(agent, m)]
        if missing:
            raise TypeError(f"action_masks=True needs a MaskedOffPolicyAgent; {type(agent).__name__} lacks {missing}")


def train_agent_host(
    agent: OffPolicyAgent, envs: MultiAgentVecEnv, *, key: Array, progress: ProgressFn | None = None,
    action_masks: bool = True,
) -> TrainResult:
    """Train an off-policy agent on host environments (``train_agent``'s loop, collected in Python).

    Args:
        agent: built for ``envs`` (``dqn.agent_for_shapes``), its ``num_envs`` ``envs.num_slots``.
        envs: left open; close them after.
        action_masks: act, prefill and bootstrap among the valid actions only (needs a
            ``MaskedOffPolicyAgent``).

    Returns:
        A ``TrainResult`` as ``train_agent``'s; its policy is unmasked (``greedy_actions`` masks);
        ``episode_return`` holds its last value in iterations where no episode finished.

    Raises:
        ValueError: the agent, config and environments disagree (slots, shapes), or the
            environments return arrays of the wrong shape or dtype, or a slot without a valid action.
        TypeError: ``action_masks`` with an agent that has no masked methods.
    """
    start = time.perf_counter()
    config = agent.config
    _check_setup(agent, envs, action_masks)
    reset_key, agent_key, loop_key = jax.random.split(key, 3)
    obs, mask = reset_host_envs(envs, reset_key, acting=action_masks)
    state = _init(agent, obs, mask, agent_key, loop_key, masked=action_masks)
    episodes = EpisodeTracker(envs.num_slots)

    def vector_step(state: HostLoopState, obs: np.ndarray, mask: np.ndarray, step: int, *, explore: bool,
                    store: bool) -> tuple[HostLoopState, SlotStep, np.ndarray]:
        """One vector step: act, step the environments, store; also returns the returns of the episodes ended."""
        key, action, env_action = _act(
            agent, state.agent, state.obs_stats, state.key, obs, mask, np.int32(step), masked=action_masks,
            explore=explore,
        )
        out = check_step(envs.step(np.asarray(env_action)), envs, action_masks)
        state = _observe(agent, state._replace(key=key), obs, mask, action, out, masked=action_masks, store=store)
        returns, _ = episodes.step(out.reward, out.terminated | out.truncated)
        return state, out, returns

    for _ in range(config.n_step - 1):
        state, out, _ = vector_step(state, obs, mask, 0, explore=False, store=False)
        obs, mask = out.obs, out.mask
    for _ in range(config.prefill_steps):
        state, out, _ = vector_step(state, obs, mask, 0, explore=False, store=True)
        obs, mask = out.obs, out.mask
    host_log = HostLog(config, progress, f"{agent.kind} training")
    last_return, step = np.float32(np.nan), 0
    for iteration in range(1, config.iterations + 1):
        finished = []
        for _ in range(config.train_freq):
            state, out, returns = vector_step(state, obs, mask, step, explore=True, store=True)
            obs, mask, step = out.obs, out.mask, step + 1
            finished.append(returns)
        state, metrics = _learn(agent, state, np.int32(step), masked=action_masks)
        returns = np.concatenate(finished)
        if returns.size:
            last_return = np.float32(returns.sum(dtype=np.float32) / np.float32(returns.size))
        host_log.append(iteration, {"episode_return": last_return, "episodes": np.int32(returns.size), **metrics})
    log = host_log.log()
    params = {**agent.policy_params(state.agent), "obs_stats": state.obs_stats}
    return make_result(agent.policy, params, log, config.env_steps, start)


@partial(jax.jit, static_argnums=0)
def _greedy(policy: Any, params: PyTree, obs: Array, mask: Array) -> Array:
    return policy.masked_action(params, obs, mask)


def greedy_actions(policy: Any, params: PyTree, obs: Any, mask: Any) -> np.ndarray:
    """A policy's ``masked_action`` (``dqn.DQNPolicy``) for host observations (rows or one row), as numpy."""
    return np.asarray(_greedy(policy, params, jnp.asarray(obs, jnp.float32), jnp.asarray(mask, bool)))
