"""The on-policy loop for environments that run on the host: external simulators, numpy in and out.

``train_agent_host`` is ``onpolicy.loop.train_agent`` (PPO, A2C) for environments that are not
functional JAX ones (a SUMO simulation per process, any gymnasium or PettingZoo environment),
with ``Discrete`` actions. Each iteration collects ``rollout_steps`` vector steps in Python,
acting with one jitted function (``_act``: the functional loop's ``loop.act``), then makes one
jitted update (``_learn``: the learning rewards, the next values and ``loop.update_on_rollout``,
i.e. ``gae`` and the agent's own ``update``), each compiled once. The state
(``loop.OnPolicyState`` without environments), the key splits, the observation statistics
(folded in at every step), the reward scaling and normalisation and the learning-rate schedule
are the functional loop's, so a run without observation normalisation on a deterministic
environment reproduces ``train_agent``'s.

The environments are a ``core.host_envs.MultiAgentVecEnv``: ``num_slots`` slots (parallel
environments x controlled agents per environment, the config's ``num_envs``) stepped together,
with gymnasium's vector auto-reset. One policy acts for every slot (parameter sharing).

**Truncation.** Where a slot's episode was truncated, the critic bootstraps from
``V(final_obs)``; where it terminated, from nothing (``gae``). The value of the observation a
step produced is the next step's value, except where the step truncated an episode: there it
is ``V(final_obs)``, computed (one jitted call) only on the steps that truncate
(``bootstrap_values``).

**Action masks.** With ``action_masks=True`` the invalid actions' logits are set to the dtype's
minimum (``ActorCriticPolicy.mask_logits``) when acting and in the update (the rollout's masks
ride in ``Batch.mask``), so no invalid action is ever sampled and the probability ratios and
the entropy are those of the masked distribution. Act with the trained policy through
``policy_actions``.

Not supported here: checkpoint/resume, several seeds at once (train one after another and
``common.stack_results``), continuous and ``MultiDiscrete`` actions.
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
    check_mask,
    check_obs,
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
    """The value of the observation each step produced (``loop.Rollout.next_value``).

    A truncated step bootstraps from ``V(final_obs)``; any other from the next step's value
    (where the step terminated ``gae`` ignores it).

    Args:
        value: ``(T, slots)`` values of the rollout's observations.
        last_value: ``(slots,)`` value of the observations after its last step.
        final_value: ``(T, slots)`` values of the steps' ``final_obs`` (read where ``truncated``).
        truncated: ``(T, slots)`` bool.

    Returns:
        ``(T, slots)``: ``final_value[t]`` where ``truncated[t]``, else ``value[t + 1]``
        (``last_value`` for the last step).
    """
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
    """``rollout_steps`` vector steps from ``(obs, mask)``.

    Returns:
        ``(state, rollout, obs, mask, returns, lengths)``: the state with the observations
        folded in, the rollout, the observations and masks after it, and the returns and
        lengths of the episodes that ended in it.
    """
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
    agent: OnPolicyAgent,
    envs: MultiAgentVecEnv,
    *,
    key: Array,
    progress: ProgressFn | None = None,
    action_masks: bool = True,
) -> TrainResult:
    """Train an on-policy agent on host environments (``train_agent``'s loop, collected in Python).

    Args:
        agent: the agent (``ppo.PPOAgent`` or ``a2c.A2CAgent``), built for ``obs_shape=(envs.obs_dim,)``
            and ``envs.num_actions`` actions (``PPOAgent.for_shapes``); its config's ``num_envs`` is
            ``envs.num_slots`` and every step count is in slot-steps.
        envs: the environments (left open: close them after).
        key: PRNG key of the run (seeds ``envs.reset`` too).
        progress: optional ``(task, done, total)`` callback, called every ``log_every`` iterations
            and after the last.
        action_masks: act and learn among the valid actions only; False ignores the masks
            (beyond their shape).

    Returns:
        A ``TrainResult`` as ``train_agent``'s: the agent's deterministic policy (unmasked: act
        with ``policy_actions`` to respect masks), params ``{"net", "obs_stats"}`` and
        per-iteration metrics ``episode_return`` (mean over the slots' episodes that ended in
        the iteration, NaN if none did), ``episode_length``, ``episodes``, the agent's update
        metrics and ``learning_rate``.

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
    obs, mask = envs.reset(int(jax.random.randint(reset_key, (), 0, 2**31 - 1)))
    obs, mask = check_obs("reset obs", obs, envs), check_mask("reset mask", mask, envs, acting=action_masks)
    episodes = EpisodeTracker(envs.num_slots)
    logs: list[dict[str, np.ndarray]] = []
    rows: list[dict[str, Any]] = []
    for iteration in range(1, config.iterations + 1):
        loop_key, rollout_key, update_key = jax.random.split(
            state.key, 3
        )  # as the functional loop's iteration
        step_keys = jax.random.split(rollout_key, config.rollout_steps)
        state, rollout, obs, mask, returns, lengths = _collect(
            agent, envs, state._replace(key=loop_key), obs, mask, step_keys, episodes, masked=action_masks
        )
        state, metrics = _learn(agent, state, rollout, obs, update_key)
        rows.append({**_episode_metrics(returns, lengths), **metrics})
        if iteration % config.log_every == 0 or iteration == config.iterations:
            logs.append(jax.tree.map(lambda *xs: np.stack(xs), *jax.device_get(rows)))
            rows = []
            if progress is not None:
                progress(agent.kind, iteration, config.iterations)
    log = {name: np.concatenate([chunk[name] for chunk in logs]) for name in logs[0]}
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
    """A trained actor-critic's actions among the valid ones, for host observations (jitted per policy).

    Args:
        policy: a discrete ``ActorCriticPolicy``, e.g. a ``TrainResult``'s or ``onpolicy.load_policy``'s.
        params: its params (no seed axis).
        obs: float ``(slots, obs_dim)`` (or one row ``(obs_dim,)``).
        mask: bool ``(slots, num_actions)`` (or one row).
        key: None for the greedy actions (argmax of the masked logits), or a PRNG key to sample
            them from the masked distribution.

    Returns:
        int ``(slots,)`` (or a scalar) numpy action indices.
    """
    policy = dataclasses.replace(policy, deterministic=key is None)
    return np.asarray(
        _policy_act(policy, params, jnp.asarray(obs, jnp.float32), jnp.asarray(mask, bool), key)
    )
