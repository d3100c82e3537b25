"""The off-policy loop for environments that run on the host: external simulators, numpy in and out.

``train_agent_host`` is ``offpolicy.loop.train_agent`` for environments that are not functional
JAX ones (a SUMO simulation per process, any gymnasium or PettingZoo environment). The
collection loop runs in Python; everything else is the agent's own code, jitted once each:
acting (``_act``), storing a step in the n-step window and the replay (``_observe``) and
``gradient_steps`` updates plus the schedules (``_learn``). The loop follows the functional one
step for step (prefill with random actions, ``train_freq`` exploring vector steps then the
updates per iteration, observation statistics folded in every step, the same key splits), so
an unmasked run on a deterministic environment reproduces ``train_agent``'s.

The environments are a ``core.host_envs.MultiAgentVecEnv``: a fixed number of *slots* (parallel
environments x controlled agents per environment) stepped together, with gymnasium's vector
auto-reset. One agent (one Q-network) acts for every slot: parameter sharing across agents and
environments. The adapters (``GymVecSlots``, ``SubprocessVecSlots``) and ``run_episodes`` live
in ``core.host_envs``, which does not import JAX.

**Action masks.** With ``action_masks=True`` (the agent must be a ``MaskedOffPolicyAgent``,
e.g. ``dqn.DQNAgent``) exploration, the prefill and the greedy action keep to the valid
actions, and the replay stores each transition's next-state mask (items are
``MaskedTransition``), so the double-DQN argmax of the TD target keeps to it too. Act with the
trained policy through ``greedy_actions``.

Not supported here: checkpoint/resume (the environments' state lives outside) and several
seeds at once (train one after another and ``common.stack_results``).
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
from decisions.core.agents.offpolicy.agent import OffPolicyAgent, flatten_obs, normalize
from decisions.core.agents.replay import NStepWindow, ReplayBuffer, Transition
from decisions.core.host_envs import (
    EpisodeTracker,
    MultiAgentVecEnv,
    SlotStep,
    check_mask,
    check_obs,
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
    agent: OffPolicyAgent,
    envs: MultiAgentVecEnv,
    *,
    key: Array,
    progress: ProgressFn | None = None,
    action_masks: bool = True,
) -> TrainResult:
    """Train an off-policy agent on host environments (``train_agent``'s loop, collected in Python).

    Args:
        agent: the agent, built for ``obs_shape=(envs.obs_dim,)`` and ``envs.num_actions`` actions
            (``dqn.agent_for_shapes``); its config's ``num_envs`` is ``envs.num_slots`` and every
            step count is in slot-steps.
        envs: the environments (left open: close them after).
        key: PRNG key of the run (seeds ``envs.reset`` too).
        progress: optional ``(task, done, total)`` callback, called every ``log_every`` iterations.
        action_masks: act, prefill and bootstrap among the valid actions only (needs a
            ``MaskedOffPolicyAgent``); False ignores the masks (beyond their shape).

    Returns:
        A ``TrainResult`` as ``train_agent``'s: the agent's deterministic policy (unmasked: act with
        ``greedy_actions`` to respect masks), params ``{..., "obs_stats"}`` and per-iteration
        metrics ``episode_return`` (mean over the slots' episodes finished in the iteration, else
        the previous value; NaN before the first), ``episodes`` and the agent's.

    Raises:
        ValueError: the agent, config and environments disagree (slots, shapes), or the
            environments return arrays of the wrong shape or dtype, or a slot without a valid action.
        TypeError: ``action_masks`` with an agent that has no masked methods.
    """
    start = time.perf_counter()
    config = agent.config
    _check_setup(agent, envs, action_masks)
    reset_key, agent_key, loop_key = jax.random.split(key, 3)
    obs, mask = envs.reset(int(jax.random.randint(reset_key, (), 0, 2**31 - 1)))
    obs, mask = check_obs("reset obs", obs, envs), check_mask("reset mask", mask, envs, acting=action_masks)
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
    logs: list[dict[str, np.ndarray]] = []
    rows: list[dict[str, Any]] = []
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
        rows.append({"episode_return": last_return, "episodes": np.int32(returns.size), **metrics})
        if iteration % config.log_every == 0 or iteration == config.iterations:
            logs.append(jax.tree.map(lambda *xs: np.stack(xs), *jax.device_get(rows)))
            rows = []
            if progress is not None:
                progress(f"{agent.kind} training", iteration, config.iterations)
    log = {name: np.concatenate([chunk[name] for chunk in logs]) for name in logs[0]}
    params = {**agent.policy_params(state.agent), "obs_stats": state.obs_stats}
    return make_result(agent.policy, params, log, config.env_steps, start)


@partial(jax.jit, static_argnums=0)
def _greedy(policy: Any, params: PyTree, obs: Array, mask: Array) -> Array:
    return policy.masked_action(params, obs, mask)


def greedy_actions(policy: Any, params: PyTree, obs: Any, mask: Any) -> np.ndarray:
    """The trained policy's greedy actions among the valid ones, for host observations (jitted per policy).

    Args:
        policy: a policy with ``masked_action(params, obs, mask)`` (``dqn.DQNPolicy``), e.g. a
            ``TrainResult``'s or ``dqn.load_policy``'s.
        params: its params (no seed axis).
        obs: float ``(slots, obs_dim)`` (or one row ``(obs_dim,)``).
        mask: bool ``(slots, num_actions)`` (or one row).

    Returns:
        int ``(slots,)`` (or a scalar) numpy action indices.
    """
    return np.asarray(_greedy(policy, params, jnp.asarray(obs, jnp.float32), jnp.asarray(mask, bool)))
