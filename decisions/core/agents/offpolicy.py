"""The loop shared by the off-policy agents (DQN, SAC): collection, replay, chunked jitted training.

An agent supplies only what is specific to it (an ``OffPolicyAgent``: network init,
exploration, one gradient update, the deterministic policy's params); this module runs the
rest, identically for every agent:

1. ``num_envs`` copies of the environment run in lockstep
   (``VmapEnv(EpisodeStatistics(AutoResetEnv(env)))``). Each vector step pushes one
   transition per copy into an ``NStepWindow`` and stores the n-step transition it emits in
   the ``ReplayBuffer``; truncated episodes bootstrap from ``info["final_obs"]``, terminated
   ones do not.
2. Before learning, ``n_step - 1`` steps fill the window and ``learning_starts`` transitions
   are collected with uniformly random actions (the prefill).
3. One *iteration* is ``train_freq`` vector steps with the agent's exploration policy, then
   ``gradient_steps`` updates on uniform replay batches. Iterations run in a ``lax.scan``
   inside one jitted chunk of ``log_every`` iterations, driven by ``common.run_chunked``
   (progress between chunks, checkpoint/resume). ``train_seeds`` vmaps the chunk over seeds.

Observations are stored raw and normalised with the current ``RunningStats`` when acting and
when sampled for an update; the statistics go into the returned policy params.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple, Protocol, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.agents.common import (
    Policy,
    ProgressFn,
    RunningStats,
    TrainResult,
    check_int,
    check_number,
    identity_stats,
    run_chunked,
)
from decisions.core.agents.replay import NStepWindow, ReplayBuffer, Transition
from decisions.core.checkpoint import load_metadata, load_pytree, save_pytree
from decisions.core.env import Environment
from decisions.core.pytrees import strong_types
from decisions.core.wrappers import AutoResetEnv, EpisodeStatistics, VmapEnv

__all__ = [
    "OffPolicyAgent",
    "OffPolicyConfig",
    "OffPolicyState",
    "PolicyDescription",
    "load_policy_as",
    "save_policy",
    "train_agent",
    "train_agent_seeds",
]

PyTree = Any
PolicyT = TypeVar("PolicyT")

POLICY_FORMAT = "decisions.offpolicy_policy/1"
"""Tag in the metadata of files written by ``save_policy``."""


@dataclass(frozen=True)
class OffPolicyConfig:
    """Settings shared by the off-policy agents (frozen and hashable: a jit static argument).

    Step counts are environment transitions summed over the ``num_envs`` copies, per seed.
    """

    total_env_steps: int = 100_000
    """Environment transitions to collect in all (prefill included)."""
    num_envs: int = 8
    """Environment copies stepped in lockstep."""
    learning_starts: int = 2_000
    """Transitions collected with uniformly random actions before learning (rounded up to ``num_envs``)."""
    buffer_size: int = 100_000
    """Replay capacity in transitions (the oldest are overwritten)."""
    batch_size: int = 128
    """Transitions per gradient update."""
    gamma: float = 0.99
    """Discount factor."""
    n_step: int = 1
    """Steps summed into each stored transition (n-step returns; 1 is plain TD)."""
    train_freq: int = 1
    """Vector environment steps per iteration (``train_freq * num_envs`` transitions)."""
    gradient_steps: int = 1
    """Gradient updates per iteration."""
    learning_rate: float = 3e-4
    """Adam learning rate (every network, and the SAC temperature)."""
    max_grad_norm: float = 10.0
    """Global gradient-norm clip applied before Adam."""
    tau: float = 0.005
    """Target network update ``target += tau * (online - target)``; 1.0 is a hard copy."""
    target_update_interval: int = 1
    """Gradient updates between target updates (1 with a small ``tau``: Polyak averaging)."""
    hidden: tuple[int, ...] = (128, 128)
    """Hidden layer widths of every network (ReLU)."""
    normalize_obs: bool = True
    """Normalise observations with running statistics (saved with the policy)."""
    reward_scale: float = 1.0
    """Factor applied to rewards before learning (not to the reported returns)."""
    bootstrap_truncated: bool = True
    """Bootstrap from the final observation on truncation (the ``Environment`` contract). Set it
    False for a finite-horizon task whose observation reveals the time left but that reports the
    horizon as ``truncated``: bootstrapping from a state that is never acted in can diverge."""
    log_every: int = 500
    """Iterations per jitted chunk, i.e. how often ``progress`` is called and a checkpoint written."""

    def __post_init__(self) -> None:
        """Validate every field; raise ``ValueError("field: problem")`` on the first bad one."""
        for name in ("total_env_steps", "num_envs", "learning_starts", "batch_size", "n_step"):
            check_int(name, getattr(self, name), 1)
        for name in ("train_freq", "gradient_steps", "target_update_interval", "log_every"):
            check_int(name, getattr(self, name), 1)
        check_int("buffer_size", self.buffer_size, max(self.num_envs, 1))
        check_number("gamma", self.gamma, 0.0, 1.0)
        check_number("learning_rate", self.learning_rate, 0.0, math.inf, open_low=True)
        check_number("max_grad_norm", self.max_grad_norm, 0.0, math.inf, open_low=True)
        check_number("tau", self.tau, 0.0, 1.0, open_low=True)
        check_number("reward_scale", self.reward_scale, 0.0, math.inf, open_low=True)
        if not isinstance(self.hidden, tuple) or not self.hidden:
            raise ValueError(f"hidden: must be a non-empty tuple of layer widths, got {self.hidden!r}")
        for width in self.hidden:
            if isinstance(width, bool) or not isinstance(width, int) or width < 1:
                raise ValueError(f"hidden: widths must be positive integers, got {self.hidden!r}")
        for name in ("normalize_obs", "bootstrap_truncated"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name}: must be a bool, got {getattr(self, name)!r}")
        if self.iterations < 1:
            needed = self.prefill_steps * self.num_envs + self.train_freq * self.num_envs
            raise ValueError(
                f"total_env_steps: {self.total_env_steps} leaves no training iteration after the prefill "
                f"(needs >= {needed} with learning_starts={self.learning_starts}, num_envs={self.num_envs}, "
                f"train_freq={self.train_freq})"
            )

    @property
    def prefill_steps(self) -> int:
        """Vector steps of random actions whose transitions are stored before learning."""
        return -(-self.learning_starts // self.num_envs)

    @property
    def iterations(self) -> int:
        """Training iterations (each ``train_freq`` vector steps, then ``gradient_steps`` updates)."""
        per_iteration = self.train_freq * self.num_envs
        return (self.total_env_steps - self.prefill_steps * self.num_envs) // per_iteration

    @property
    def env_steps(self) -> int:
        """Environment transitions actually taken per seed (window fill and prefill included)."""
        vector_steps = self.n_step - 1 + self.prefill_steps + self.iterations * self.train_freq
        return vector_steps * self.num_envs


class OffPolicyAgent(Protocol):
    """What an off-policy agent supplies to the shared loop (a hashable, frozen object).

    Observations reaching these methods are float32, flattened to ``(..., obs_dim)`` and
    already normalised; actions are in the agent's *stored* form (see ``env_action``).
    """

    config: OffPolicyConfig

    def init(self, key: Array, obs: Array) -> PyTree:
        """Initial agent training state (networks, targets, optimiser states) for one observation."""
        ...

    def example_action(self) -> Array:
        """One stored action (shape and dtype only)."""
        ...

    def random_action(self, key: Array, num: int) -> Array:
        """``num`` uniformly random stored actions."""
        ...

    def explore(self, state: PyTree, obs: Array, key: Array, frac: Array) -> Array:
        """Exploratory stored actions for a batch of observations; ``frac`` is training progress in [0, 1]."""
        ...

    def env_action(self, action: Array) -> Array:
        """Stored actions (batched) to the environment's action space."""
        ...

    def update(self, state: PyTree, batch: Transition, key: Array) -> tuple[PyTree, dict[str, Array]]:
        """One gradient update on a replay batch; returns the new state and scalar metrics."""
        ...

    def schedule_metrics(self, state: PyTree, frac: Array) -> dict[str, Array]:
        """Scalar metrics of the schedules at progress ``frac`` (e.g. epsilon)."""
        ...

    def policy_params(self, state: PyTree) -> dict[str, PyTree]:
        """The network params the deterministic policy needs (observation statistics are added)."""
        ...


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


class PolicyDescription:
    """Mixin of the frozen-dataclass policies: a JSON-able description that ``save_policy`` stores."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description (``from_dict`` inverts it)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        """Rebuild a policy from ``to_dict``'s output."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


def flatten_obs(obs: Array, obs_shape: tuple[int, ...]) -> Array:
    """``(..., *obs_shape)`` to float32 ``(..., prod(obs_shape))`` (what the networks take)."""
    lead = obs.shape[: obs.ndim - len(obs_shape)]
    return obs.reshape((*lead, math.prod(obs_shape))).astype(jnp.float32)


def normalize(stats: RunningStats, obs: Array, obs_shape: tuple[int, ...]) -> Array:
    """Normalise raw observations with ``stats`` and flatten them for the networks."""
    return flatten_obs(stats.normalize(obs.astype(jnp.float32)), obs_shape)


def _wrap(env: Environment[Any, Any], num_envs: int) -> VmapEnv:
    return VmapEnv(EpisodeStatistics(AutoResetEnv(env)), num_envs)



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
    venv = _wrap(env, config.num_envs)
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
    venv = _wrap(env, agent.config.num_envs)
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


def _train(
    agent: OffPolicyAgent,
    env: Environment[Any, Any],
    policy: Policy,
    *,
    kind: str,
    key: Array,
    env_params: PyTree | None,
    progress: ProgressFn | None,
    checkpoint: str | os.PathLike[str] | None,
    seeds: bool,
) -> TrainResult:
    start = time.perf_counter()
    config = agent.config
    env_params = strong_types(env.default_params if env_params is None else env_params)
    state = _init(agent, env, env_params, key, seeds=seeds)

    def chunk(s: OffPolicyState, n: int) -> tuple[OffPolicyState, dict[str, Array]]:
        s, log = _chunk(s, env_params, jnp.asarray(n, jnp.int32), agent=agent, env=env, seeds=seeds)
        return s, jax.tree.map(lambda x: x[:, :n] if seeds else x[:n], log)

    state, log = run_chunked(
        chunk,
        state,
        iterations=config.iterations,
        log_every=config.log_every,
        kind=kind,
        config=config,
        key=key,
        progress=progress,
        task=f"{kind} training",
        checkpoint=checkpoint,
        seed_axis=seeds,
    )
    params = {**agent.policy_params(state.agent), "obs_stats": state.obs_stats}
    params = jax.block_until_ready(params)
    return TrainResult(
        policy=policy,
        params=params,
        metrics={name: np.asarray(value) for name, value in log.items()},
        train_seconds=time.perf_counter() - start,
        env_steps=config.env_steps,
    )


def train_agent(
    agent: OffPolicyAgent,
    env: Environment[Any, Any],
    policy: Policy,
    *,
    kind: str,
    key: Array,
    env_params: PyTree | None = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> TrainResult:
    """Train ``agent`` on ``env`` for one seed (what ``dqn.train`` and ``sac.train`` call).

    Args:
        agent: the agent (hashable; its ``config`` fixes the loop).
        env: an unwrapped environment (hashed by identity: reuse the object to reuse compilations).
        policy: the deterministic policy returned in the result.
        kind: checkpoint tag, e.g. ``"dqn"``.
        key: PRNG key of the run.
        env_params: environment params (default ``env.default_params``).
        progress: optional ``(task, done, total)`` callback, called between chunks.
        checkpoint: optional path to save after every chunk and resume from.

    Returns:
        A ``TrainResult`` whose params hold the policy networks and ``obs_stats``.
    """
    return _train(
        agent,
        env,
        policy,
        kind=kind,
        key=key,
        env_params=env_params,
        progress=progress,
        checkpoint=checkpoint,
        seeds=False,
    )


def train_agent_seeds(
    agent: OffPolicyAgent,
    env: Environment[Any, Any],
    policy: Policy,
    *,
    kind: str,
    keys: Array,
    env_params: PyTree | None = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> TrainResult:
    """Train ``agent`` for several seeds at once (the chunk vmapped over a leading key axis).

    Args:
        agent: the agent.
        env: an unwrapped environment.
        policy: the deterministic policy returned in the result.
        kind: tag used in progress messages.
        keys: ``(seeds,)`` typed keys or ``(seeds, 2)`` raw keys, one per seed.
        env_params: environment params shared by all seeds (default ``env.default_params``).
        progress: optional ``(task, done, total)`` callback.
        checkpoint: optional path to save after every chunk and resume from (all seeds in one file).

    Returns:
        A ``TrainResult`` whose params and metrics carry a leading seed axis.
    """
    return _train(
        agent,
        env,
        policy,
        kind=kind,
        key=keys,
        env_params=env_params,
        progress=progress,
        checkpoint=checkpoint,
        seeds=True,
    )


def save_policy(path: str | os.PathLike[str], result: TrainResult, *, seed: int | None = None) -> None:
    """Write a trained off-policy agent's policy (weights, observation statistics, description) as msgpack.

    Args:
        path: destination file.
        result: what ``train`` or ``train_seeds`` of ``dqn`` or ``sac`` returned.
        seed: for a ``train_seeds`` result, which seed's policy to save.

    Raises:
        ValueError: the params carry a seed axis and no ``seed`` was given.
    """
    policy, params = result.policy, result.params
    if not hasattr(policy, "to_dict") or not hasattr(policy, "kind"):
        raise TypeError(f"not an off-policy agent's result (policy is {type(policy).__name__})")
    if seed is not None:
        params = jax.tree.map(lambda x: x[seed], params)
    expected = jax.eval_shape(policy.init, jax.random.PRNGKey(0))
    if jax.tree.leaves(params)[0].shape != jax.tree.leaves(expected)[0].shape:
        raise ValueError("seed: the params have a seed axis; pass seed= to choose one")
    metadata = {"format": POLICY_FORMAT, "kind": policy.kind, "policy": policy.to_dict()}
    save_pytree(path, params, metadata=metadata)


def load_policy_as(path: str | os.PathLike[str], policy_type: type[PolicyT]) -> tuple[PolicyT, PyTree]:
    """Read a policy written by ``save_policy``, checking it is a ``policy_type`` (e.g. ``DQNPolicy``).

    Args:
        path: the file.
        policy_type: the expected policy class (with ``kind``, ``from_dict`` and ``init``).

    Returns:
        ``(policy, params)``: call ``policy(params, obs, key)``.

    Raises:
        ValueError: the file is not a saved policy of that kind, or its params do not match it.
    """
    meta = load_metadata(path)
    if meta.get("format") != POLICY_FORMAT or meta.get("kind") != policy_type.kind:
        raise ValueError(f"{path}: not a saved {policy_type.kind} policy (found {meta.get('kind')!r})")
    policy = policy_type.from_dict(meta["policy"])
    return policy, load_pytree(path, jax.eval_shape(policy.init, jax.random.PRNGKey(0)))
