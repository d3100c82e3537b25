"""The loop every off-policy agent runs: lockstep collection into an ``NStepWindow`` and a
``ReplayBuffer`` after a random prefill, then per iteration ``train_freq`` exploring vector
steps and ``gradient_steps`` updates, in jitted chunks (``loop_common.run_agent_chunks``),
optionally vmapped over seeds. Observations are stored raw and normalised when used.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents.common import ProgressFn, RunningStats, TrainResult, identity_stats, make_result
from decisions.core.agents.loop_common import loop_env_params, run_agent_chunks, training_envs
from decisions.core.agents.offpolicy.agent import NetworkPolicy, OffPolicyAgent, flatten_obs, normalize
from decisions.core.agents.offpolicy.config import OffPolicyConfig
from decisions.core.agents.replay import NStepWindow, ReplayBuffer, Transition
from decisions.core.agents.trainers import agent_trainers
from decisions.core.env import Environment
from decisions.core.pytrees import PyTree
from decisions.core.wrappers import VmapEnv

__all__ = ["OffPolicyState", "train_agent", "trainers"]


class OffPolicyState(NamedTuple):
    """Loop state carried through the training scan (and checkpointed)."""

    agent: PyTree
    buffer: ReplayBuffer
    window: NStepWindow
    env_state: PyTree
    obs: Array  # (num_envs, *obs_shape) float32, raw
    obs_stats: RunningStats
    step: Array  # () int32, vector steps taken since the prefill
    last_return: Array  # () float32, mean return of the last iteration that finished episodes
    key: Array


def _progress(config: OffPolicyConfig, step: Array) -> Array:
    """Training progress in [0, 1] after ``step`` exploring vector steps (drives the schedules)."""
    return step.astype(jnp.float32) / (config.iterations * config.train_freq)


def _env_step(
    agent: OffPolicyAgent, venv: VmapEnv, env_params: PyTree, state: OffPolicyState, *, mode: str
) -> tuple[OffPolicyState, tuple[Array, Array]]:
    """One vector step. ``mode``: ``"fill"`` (random, not stored), ``"random"`` or ``"explore"`` (stored).

    Returns the new state and ``(returned_episode, returned_episode_return)`` per copy.
    """
    config = agent.config
    obs_shape = state.obs.shape[1:]
    key, act_key, env_key = jax.random.split(state.key, 3)
    if mode == "explore":
        obs = normalize(state.obs_stats, state.obs, obs_shape)
        action = agent.explore(state.agent, obs, act_key, _progress(config, state.step))
    else:
        action = agent.random_action(act_key, config.num_envs)
    next_obs, env_state, reward, terminated, truncated, info = venv.step(
        env_key, state.env_state, agent.env_action(action), env_params
    )
    next_obs = next_obs.astype(jnp.float32)
    final_obs = info["final_obs"].astype(jnp.float32)
    no_bootstrap = terminated if config.bootstrap_truncated else terminated | truncated
    window = state.window.push(
        state.obs, action, reward * config.reward_scale, final_obs, no_bootstrap, truncated
    )
    buffer = state.buffer
    if mode != "fill":
        buffer = buffer.add(window.transition(config.gamma))
    stats = state.obs_stats.update(next_obs) if config.normalize_obs else state.obs_stats
    step = state.step + (1 if mode == "explore" else 0)
    state = state._replace(
        buffer=buffer, window=window, env_state=env_state, obs=next_obs, obs_stats=stats, step=step, key=key
    )
    return state, (info["returned_episode"], info["returned_episode_return"])


def _scan_env_steps(
    agent: OffPolicyAgent, venv: VmapEnv, env_params: PyTree, state: OffPolicyState, length: int, mode: str
) -> tuple[OffPolicyState, tuple[Array, Array]]:
    def body(s: OffPolicyState, _: None) -> tuple[OffPolicyState, tuple[Array, Array]]:
        return _env_step(agent, venv, env_params, s, mode=mode)

    return jax.lax.scan(body, state, None, length=length)


def _init_state(
    agent: OffPolicyAgent, env: Environment[Any, Any], env_params: PyTree, key: Array
) -> OffPolicyState:
    """Reset the environments, build the networks and buffer, fill the window and prefill the buffer."""
    config = agent.config
    venv = training_envs(env, config.num_envs)
    reset_key, agent_key, loop_key = jax.random.split(key, 3)
    obs, env_state = venv.reset(reset_key, env_params)
    obs = obs.astype(jnp.float32)
    obs_shape = obs.shape[1:]
    if config.normalize_obs:
        stats = RunningStats.create(obs_shape).update(obs)
    else:
        stats = identity_stats(obs_shape)
    agent_state = agent.init(agent_key, flatten_obs(obs[0], obs_shape))
    action = agent.example_action()
    example = Transition(obs[0], action, jnp.float32(0), obs[0], jnp.float32(0))
    state = OffPolicyState(
        agent=agent_state,
        buffer=ReplayBuffer.create(example, config.buffer_size),
        window=NStepWindow.create(obs[0], action, config.num_envs, config.n_step),
        env_state=env_state,
        obs=obs,
        obs_stats=stats,
        step=jnp.zeros((), jnp.int32),
        last_return=jnp.full((), jnp.nan, jnp.float32),
        key=loop_key,
    )
    if config.n_step > 1:
        state, _ = _scan_env_steps(agent, venv, env_params, state, config.n_step - 1, "fill")
    state, _ = _scan_env_steps(agent, venv, env_params, state, config.prefill_steps, "random")
    return state


@partial(jax.jit, static_argnames=("agent", "env", "seeds"))
def _init(agent: OffPolicyAgent, env: Environment[Any, Any], env_params: PyTree, key: Array, *, seeds: bool):
    if seeds:
        return jax.vmap(lambda k: _init_state(agent, env, env_params, k))(key)
    return _init_state(agent, env, env_params, key)


def _learn(agent: OffPolicyAgent, state: OffPolicyState, key: Array) -> tuple[PyTree, dict[str, Array]]:
    """``gradient_steps`` updates on uniform replay batches; metrics averaged over them."""
    config = agent.config
    obs_shape = state.obs.shape[1:]

    def one_update(agent_state: PyTree, update_key: Array) -> tuple[PyTree, dict[str, Array]]:
        sample_key, agent_key = jax.random.split(update_key)
        batch = state.buffer.sample(sample_key, config.batch_size)
        batch = batch._replace(
            obs=normalize(state.obs_stats, batch.obs, obs_shape),
            next_obs=normalize(state.obs_stats, batch.next_obs, obs_shape),
        )
        return agent.update(agent_state, batch, agent_key)

    keys = jax.random.split(key, config.gradient_steps)
    agent_state, metrics = jax.lax.scan(one_update, state.agent, keys)
    return agent_state, {name: jnp.mean(value) for name, value in metrics.items()}


def _iteration(
    agent: OffPolicyAgent, venv: VmapEnv, env_params: PyTree, state: OffPolicyState
) -> tuple[OffPolicyState, dict[str, Array]]:
    """Collect ``train_freq`` vector steps, then run ``gradient_steps`` updates."""
    config = agent.config
    state, (finished, returns) = _scan_env_steps(agent, venv, env_params, state, config.train_freq, "explore")
    key, learn_key = jax.random.split(state.key)
    agent_state, metrics = _learn(agent, state, learn_key)
    count = jnp.sum(finished)
    mean_return = jnp.sum(jnp.where(finished, returns, 0.0)) / jnp.maximum(count, 1)
    episode_return = jnp.where(count > 0, mean_return, state.last_return).astype(jnp.float32)
    metrics = {
        "episode_return": episode_return,
        "episodes": count.astype(jnp.int32),
        **metrics,
        **agent.schedule_metrics(agent_state, _progress(config, state.step)),
    }
    return state._replace(agent=agent_state, key=key, last_return=episode_return), metrics


def _run_iterations(
    agent: OffPolicyAgent, env: Environment[Any, Any], env_params: PyTree, state: OffPolicyState, n: Array
) -> tuple[OffPolicyState, dict[str, Array]]:
    """Run ``n`` (traced, ``<= log_every``) iterations; the log has ``log_every`` rows, ``n`` filled."""
    venv = training_envs(env, agent.config.num_envs)
    rows = agent.config.log_every
    shapes = jax.eval_shape(lambda s: _iteration(agent, venv, env_params, s)[1], state)
    log = jax.tree.map(lambda x: jnp.zeros((rows, *x.shape), x.dtype), shapes)

    def body(
        i: Array, carry: tuple[OffPolicyState, dict[str, Array]]
    ) -> tuple[OffPolicyState, dict[str, Array]]:
        s, log = carry
        s, metrics = _iteration(agent, venv, env_params, s)
        return s, jax.tree.map(lambda buf, x: buf.at[i].set(x), log, metrics)

    return jax.lax.fori_loop(0, n, body, (state, log))


@partial(jax.jit, static_argnames=("agent", "env", "seeds"))
def _chunk(
    state: OffPolicyState,
    env_params: PyTree,
    n: Array,
    *,
    agent: OffPolicyAgent,
    env: Environment[Any, Any],
    seeds: bool,
) -> tuple[OffPolicyState, dict[str, Array]]:
    """``n`` iterations in one compiled loop; ``n`` is traced, so all chunk lengths share one compilation."""
    if seeds:
        return jax.vmap(lambda s: _run_iterations(agent, env, env_params, s, n))(state)
    return _run_iterations(agent, env, env_params, state, n)


def train_agent(
    agent: OffPolicyAgent,
    env: Environment[Any, Any],
    *,
    key: Array,
    params: PyTree | None = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    seeds: bool = False,
) -> TrainResult:
    """Train an off-policy agent on an unwrapped ``env`` (what ``dqn.train`` / ``sac.train`` call).

    As ``onpolicy.train_agent``: ``env`` hashed by identity, ``params`` shared by all seeds,
    ``checkpoint`` saved after every chunk and resumed from, one key per seed with ``seeds``.
    The result's params hold the policy networks and ``obs_stats``.
    """
    start = time.perf_counter()
    config = agent.config
    env_params = loop_env_params(env, params)
    state = _init(agent, env, env_params, key, seeds=seeds)

    def chunk(s: OffPolicyState, n: int) -> tuple[OffPolicyState, dict[str, Array]]:
        s, log = _chunk(s, env_params, jnp.asarray(n, jnp.int32), agent=agent, env=env, seeds=seeds)
        return s, jax.tree.map(lambda x: x[:, :n] if seeds else x[:n], log)

    state, log = run_agent_chunks(
        agent, chunk, state, key=key, progress=progress, checkpoint=checkpoint, seeds=seeds,
        task=f"{agent.kind} training",
    )
    params = {**agent.policy_params(state.agent), "obs_stats": state.obs_stats}
    return make_result(agent.policy, params, log, config.env_steps, start)


def trainers(
    make_agent: Callable[[Environment[Any, Any], Any, PyTree | None], OffPolicyAgent],
    default_config: OffPolicyConfig,
    policy_type: type[NetworkPolicy],
    *,
    metrics: str,
) -> tuple[Callable[..., TrainResult], Callable[..., TrainResult]]:
    """An off-policy agent module's ``(train, train_seeds)``: its ``make_agent``, then ``train_agent``;
    ``policy_type`` and ``metrics`` go into ``train``'s docstring."""
    returns = f"""
        A ``TrainResult``: the deterministic ``{policy_type.__name__}``,
        its params ``{{"{policy_type.params_key}", "obs_stats"}}`` and per-iteration metrics
        ``episode_return`` (mean over the episodes finished in the iteration, else the
        previous value; NaN before the first), ``episodes``, {metrics}.
    """
    return agent_trainers(make_agent, default_config, train_agent, returns=returns)
