"""What the on-policy actor-critic agents (PPO, A2C) share.

- ``OnPolicyConfig``: the common, validated, hashable configuration; each agent subclasses
  it and supplies its optimiser and its update of the network from one rollout batch.
- ``ActorCriticPolicy`` / ``ActorCritic``: separate actor and critic MLPs; a categorical
  head for ``Discrete`` actions, independent categorical heads (one set of logits per
  component, log-probabilities and entropies summed) for ``MultiDiscrete`` actions, a diagonal Gaussian with a learned state-independent
  log-std for ``Box`` actions. Continuous actions are *clipped*, not squashed: the network
  acts in a normalised space where ``[-1, 1]`` maps linearly onto ``[low, high]``; samples
  outside are clipped before the environment sees them, and the log-probability is that
  of the unclipped sample (the usual PPO treatment). Dimensions with an infinite bound are
  passed through unscaled (clipped to the finite bound if there is one).
- ``gae``: generalised advantage estimation as a reverse ``lax.scan`` that keeps
  ``terminated`` (no bootstrap) and ``truncated`` (bootstrap from ``V(final_obs)``) apart.
- ``surrogate_loss`` / ``gradient_step``: the clipped (PPO) or plain (A2C) policy-gradient
  loss with value and entropy terms, and one optimiser step on it.
- ``train`` / ``train_seeds``: the whole loop. Each iteration collects ``rollout_steps``
  steps from ``num_envs`` environments (``VmapEnv(EpisodeStatistics(AutoResetEnv(env)))``),
  computes advantages and calls the agent's update; iterations run in jitted ``lax.scan``
  chunks driven by ``common.run_chunked`` (progress, checkpoint/resume), and
  ``train_seeds`` vmaps the chunk over seeds.
- ``save_policy`` / ``load_policy``: msgpack files holding the network weights, the
  observation statistics and the policy's static description.

Observations are flattened (``Discrete`` observations one-hot encoded) and, with
``normalize_obs``, scaled by running statistics updated at every rollout step (as
gymnasium's ``NormalizeObservation``); the statistics are part of the returned params.
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from decisions.core import nets
from decisions.core.agents.common import (
    ProgressFn,
    RunningStats,
    TrainResult,
    check_bool,
    check_choice,
    check_int,
    check_number,
    identity_stats,
    run_chunked,
)
from decisions.core.checkpoint import load_metadata, load_pytree, save_pytree
from decisions.core.env import Environment
from decisions.core.pytrees import strong_types
from decisions.core.spaces import Box, Discrete, MultiDiscrete
from decisions.core.wrappers import AutoResetEnv, EpisodeStatistics, VmapEnv

__all__ = [
    "ActorCritic",
    "ActorCriticPolicy",
    "Batch",
    "OnPolicyConfig",
    "gae",
    "gradient_step",
    "load_policy",
    "save_policy",
    "surrogate_loss",
    "train",
    "train_seeds",
    "write_policy",
]

PyTree = Any

ACTIVATIONS = {"tanh": nn.tanh, "relu": nn.relu}
"""Hidden-layer activations a config may name."""
LR_SCHEDULES = ("constant", "linear", "cosine")
"""Learning-rate schedules a config may name (decay to ``final_lr_fraction`` of the peak)."""
POLICY_FORMAT = "decisions.actor_critic_policy/1"
"""Tag in the metadata of files written by ``save_policy``."""


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class OnPolicyConfig:
    """Configuration shared by the on-policy agents (frozen and hashable: a jit static argument).

    Subclasses add their own fields and implement ``updates_per_iteration``,
    ``base_optimizer`` and ``update``. Every field is checked in ``__post_init__``; a bad
    value raises ``ValueError("field: problem")``.
    """

    kind: ClassVar[str] = "onpolicy"
    """Checkpoint tag and progress task name of the agent."""

    num_envs: int = 32
    """Environments stepped in parallel."""
    rollout_steps: int = 128
    """Steps collected from each environment per iteration."""
    total_env_steps: int = 1_000_000
    """Training budget; ``iterations = total_env_steps // (num_envs * rollout_steps)``."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE bias/variance trade-off (1: Monte Carlo returns, 0: one-step TD)."""
    learning_rate: float = 3e-4
    """Peak learning rate."""
    lr_schedule: str = "linear"
    """``"constant"``, ``"linear"`` or ``"cosine"`` decay over all updates."""
    final_lr_fraction: float = 0.0
    """Learning rate at the end of the schedule, as a fraction of the peak."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus."""
    value_coef: float = 0.5
    """Weight of the value loss."""
    max_grad_norm: float = 0.5
    """Global gradient-norm clip."""
    hidden: tuple[int, ...] = (64, 64)
    """Hidden widths of the actor and of the critic (separate networks)."""
    activation: str = "tanh"
    """Hidden activation, ``"tanh"`` or ``"relu"``."""
    log_std_init: float = 0.0
    """Initial log standard deviation of the Gaussian policy (normalised action units)."""
    normalize_obs: bool = True
    """Scale observations by running mean and variance (stored in the policy params)."""
    normalize_advantages: bool = True
    """Standardise advantages within each (mini)batch."""
    reward_scale: float = 1.0
    """Constant factor on rewards before learning (metrics report unscaled returns)."""
    normalize_rewards: bool = True
    """Also divide rewards by a running std of the discounted return (gymnasium's
    ``NormalizeReward``, clipped to +-10): rewards of any scale (euros per day of a gas
    storage, dollars per hour of a battery) reach the networks at a similar scale."""
    log_every: int = 10
    """Iterations per jitted chunk (progress and checkpoint cadence)."""
    unit_width: int = 0
    """0: MLP actor and critic on the flat observation. ``w > 0``: *set* networks
    (``SetActorCritic``) for a ``MultiDiscrete`` action with one component per exchangeable
    unit (a user, a cell): the observation's first ``units * w`` features are the units' rows
    (``units`` = the number of action components), the rest global features. Every unit is
    encoded and decided by the same weights, so what the policy learns from one unit serves
    all, and the policy applies whatever the order of the units."""

    def __post_init__(self) -> None:
        """Check every field; raise ``ValueError("field: problem")`` on the first bad one."""
        for name in ("num_envs", "rollout_steps", "total_env_steps", "log_every"):
            check_int(name, getattr(self, name), 1)
        check_int("unit_width", self.unit_width, 0)
        for name in ("gamma", "gae_lambda", "final_lr_fraction"):
            check_number(name, getattr(self, name), 0.0, 1.0)
        for name in ("learning_rate", "max_grad_norm", "reward_scale"):
            check_number(name, getattr(self, name), 0.0, math.inf, open_low=True)
        for name in ("entropy_coef", "value_coef"):
            check_number(name, getattr(self, name), 0.0, math.inf)
        check_number("log_std_init", self.log_std_init, -5.0, 2.0)
        for name in ("normalize_obs", "normalize_advantages", "normalize_rewards"):
            check_bool(name, getattr(self, name))
        check_choice("lr_schedule", self.lr_schedule, LR_SCHEDULES)
        check_choice("activation", self.activation, tuple(ACTIVATIONS))
        hidden = self.hidden
        if not isinstance(hidden, tuple) or not hidden:
            raise ValueError(f"hidden: must be a non-empty tuple of layer widths, got {hidden!r}")
        if any(isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in hidden):
            raise ValueError(f"hidden: widths must be positive integers, got {hidden!r}")
        if self.total_env_steps < self.batch_size:
            raise ValueError(
                f"total_env_steps: must be at least num_envs * rollout_steps = {self.batch_size}, "
                f"got {self.total_env_steps}"
            )

    @property
    def batch_size(self) -> int:
        """Transitions per iteration, ``num_envs * rollout_steps``."""
        return self.num_envs * self.rollout_steps

    @property
    def iterations(self) -> int:
        """Training iterations (rollout + update), ``total_env_steps // batch_size``."""
        return self.total_env_steps // self.batch_size

    @property
    def updates_per_iteration(self) -> int:
        """Optimiser steps per iteration (sets the length of the learning-rate schedule)."""
        raise NotImplementedError

    def base_optimizer(self, learning_rate: optax.Schedule) -> optax.GradientTransformation:
        """The agent's optimiser (applied after gradient clipping)."""
        raise NotImplementedError

    def update(
        self,
        policy: ActorCriticPolicy,
        optimizer: optax.GradientTransformation,
        net: PyTree,
        opt_state: PyTree,
        batch: Batch,
        key: Array,
    ) -> tuple[PyTree, PyTree, dict[str, Array]]:
        """Improve the network on one rollout batch; return it, the optimiser state and scalar metrics."""
        raise NotImplementedError

    def schedule(self) -> optax.Schedule:
        """Learning rate as a function of the optimiser step count."""
        steps = self.iterations * self.updates_per_iteration
        end = self.learning_rate * self.final_lr_fraction
        if self.lr_schedule == "linear":
            return optax.linear_schedule(self.learning_rate, end, steps)
        if self.lr_schedule == "cosine":
            return optax.cosine_decay_schedule(self.learning_rate, steps, alpha=self.final_lr_fraction)
        return optax.constant_schedule(self.learning_rate)

    def optimizer(self) -> optax.GradientTransformation:
        """Global-norm clipping followed by ``base_optimizer`` on ``schedule``."""
        return optax.chain(
            optax.clip_by_global_norm(self.max_grad_norm), self.base_optimizer(self.schedule())
        )


# ----------------------------------------------------------------------------- network and policy


class ActorCritic(nn.Module):
    """Separate actor and critic MLPs on the same (encoded, normalised) observation features.

    Attributes:
        hidden: hidden widths of each network.
        activation: key of ``ACTIVATIONS``.
        num_actions: number of discrete actions (categorical head), or 0 for a Gaussian head.
        action_dim: dimension of the Gaussian (ignored when ``num_actions > 0``).
        log_std_init: initial log standard deviation of the Gaussian.
    """

    hidden: tuple[int, ...]
    activation: str
    num_actions: int
    action_dim: int
    log_std_init: float

    def setup(self) -> None:
        """Build the actor torso and head and the critic."""
        act = ACTIVATIONS[self.activation]
        *inner, last = self.hidden
        self.torso = nets.MLP(tuple(inner), last, act, final_activation=act, out_scale=math.sqrt(2.0))
        if self.num_actions > 0:
            self.head = nets.CategoricalHead(self.num_actions)
        else:
            self.head = nets.GaussianHead(self.action_dim, log_std_init=self.log_std_init)
        self.critic = nets.MLP(self.hidden, 1, act, out_scale=1.0)

    def __call__(self, x: Array) -> tuple[Any, Array]:
        """``(distribution parameters, value)`` for features ``x`` of shape ``(..., F)``."""
        return self.actor(x), self.value(x)

    def actor(self, x: Array) -> Any:
        """Logits ``(..., n)`` or ``(mean, log_std)``, each ``(..., d)``."""
        return self.head(self.torso(x))

    def value(self, x: Array) -> Array:
        """State values ``(...)``."""
        return self.critic(x)[..., 0]


class SetActorCritic(nn.Module):
    """Actor and critic over a set of exchangeable units (see ``OnPolicyConfig.unit_width``).

    Input ``x = [rows (units x unit_width), global features]``. Actor: a per-unit encoder MLP
    on ``[row, global]`` gives ``h_i``; the mean and max of the ``h_i`` over units give a
    context ``c``; a per-unit head MLP on ``[h_i, c]`` gives unit ``i``'s logits, and the
    logits of all units are concatenated (a ``MultiDiscrete`` head of ``units`` equal
    components). Critic: its own encoder, the same pooling, an MLP to the value. All
    weights are shared over units.

    Attributes:
        hidden: widths; the encoder is ``MLP(hidden[:-1], hidden[-1])``, the heads have one
            hidden layer of ``hidden[-1]``.
        activation: key of ``ACTIVATIONS``.
        units: number of units (action components).
        unit_width: features per unit row.
        choices: choices per unit.
    """

    hidden: tuple[int, ...]
    activation: str
    units: int
    unit_width: int
    choices: int

    def setup(self) -> None:
        """Build the encoders and heads."""
        act = ACTIVATIONS[self.activation]
        *inner, last = self.hidden
        gain = math.sqrt(2.0)
        self.actor_encoder = nets.MLP(tuple(inner), last, act, final_activation=act, out_scale=gain)
        self.actor_head = nets.MLP((last,), self.choices, act, out_scale=0.01)
        self.critic_encoder = nets.MLP(tuple(inner), last, act, final_activation=act, out_scale=gain)
        self.critic_head = nets.MLP((last,), 1, act, out_scale=1.0)

    def _rows(self, x: Array) -> Array:
        lead = x.shape[:-1]
        rows = x[..., : self.units * self.unit_width].reshape(*lead, self.units, self.unit_width)
        glob = jnp.broadcast_to(x[..., None, self.units * self.unit_width :], (*lead, self.units, x.shape[-1] - self.units * self.unit_width))
        return jnp.concatenate([rows, glob], axis=-1)

    @staticmethod
    def _pool(h: Array) -> Array:
        return jnp.concatenate([jnp.mean(h, axis=-2), jnp.max(h, axis=-2)], axis=-1)

    def __call__(self, x: Array) -> tuple[Array, Array]:
        """``(logits (..., units * choices), value (...))``."""
        return self.actor(x), self.value(x)

    def actor(self, x: Array) -> Array:
        """Concatenated per-unit logits ``(..., units * choices)``."""
        h = self.actor_encoder(self._rows(x))
        context = jnp.broadcast_to(self._pool(h)[..., None, :], (*h.shape[:-1], 2 * h.shape[-1]))
        logits = self.actor_head(jnp.concatenate([h, context], axis=-1))
        return logits.reshape(*logits.shape[:-2], self.units * self.choices)

    def value(self, x: Array) -> Array:
        """State values ``(...)``."""
        return self.critic_head(self._pool(self.critic_encoder(self._rows(x))))[..., 0]


@dataclass(frozen=True)
class ActorCriticPolicy:
    """Static description of an actor-critic policy, callable as ``policy(params, obs, key)``.

    Hashable, so it can be a jit static argument (e.g. of ``common.evaluate_episodes``).
    ``params`` is ``{"net": network weights, "obs_stats": RunningStats}``. Calls work on one
    observation or on any leading batch axes.

    Attributes:
        obs_shape: shape of one observation.
        obs_categories: for a ``Discrete`` observation space its size (one-hot encoded), else 0.
        num_actions: for a ``Discrete`` action space its size, for a ``MultiDiscrete`` one the
            total of its ``nvec`` (the width of the concatenated logits), else 0 (``Box``).
        action_shape: shape of one action.
        action_low: flattened lower bounds of a ``Box`` action space (empty if discrete).
        action_high: flattened upper bounds.
        action_dtype: dtype name of actions handed to the environment.
        hidden: hidden widths of actor and critic.
        activation: hidden activation name.
        log_std_init: initial Gaussian log standard deviation.
        deterministic: greedy (argmax / clipped mean) actions; ``False`` samples.
        action_nvec: for a ``MultiDiscrete`` action space its ``nvec``, else empty.
        unit_width: > 0 for set networks (``OnPolicyConfig.unit_width``), else 0.
    """

    obs_shape: tuple[int, ...]
    obs_categories: int
    num_actions: int
    action_shape: tuple[int, ...]
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    action_dtype: str
    hidden: tuple[int, ...]
    activation: str
    log_std_init: float
    deterministic: bool = True
    action_nvec: tuple[int, ...] = ()
    unit_width: int = 0

    @classmethod
    def from_env(
        cls, env: Environment[Any, Any], env_params: Any, config: OnPolicyConfig
    ) -> ActorCriticPolicy:
        """Describe the policy for ``env``'s spaces (read from concrete params) and ``config``."""
        obs_space, action_space = env.observation_space(env_params), env.action_space(env_params)
        obs_categories = obs_space.n if isinstance(obs_space, Discrete) else 0
        nvec: tuple[int, ...] = ()
        if isinstance(action_space, Discrete):
            num_actions, low, high = action_space.n, (), ()
        elif isinstance(action_space, MultiDiscrete):
            nvec = action_space.nvec
            num_actions, low, high = sum(nvec), (), ()
        elif isinstance(action_space, Box):
            num_actions = 0
            low = tuple(
                float(v) for v in np.broadcast_to(np.asarray(action_space.low), action_space.shape).ravel()
            )
            high = tuple(
                float(v) for v in np.broadcast_to(np.asarray(action_space.high), action_space.shape).ravel()
            )
        else:
            raise TypeError(f"unsupported action space {action_space!r}")
        if config.unit_width:
            features = obs_categories or int(np.prod(obs_space.shape, dtype=int))
            if not nvec or len(set(nvec)) != 1:
                raise ValueError("unit_width: set networks need a MultiDiscrete action with equal components")
            if len(nvec) * config.unit_width > features:
                raise ValueError(
                    f"unit_width: {len(nvec)} units x {config.unit_width} exceed the {features} observation features"
                )
        return cls(
            obs_shape=tuple(obs_space.shape),
            obs_categories=obs_categories,
            num_actions=num_actions,
            action_shape=tuple(action_space.shape),
            action_low=low,
            action_high=high,
            action_dtype=np.dtype(action_space.dtype).name,
            hidden=tuple(config.hidden),
            activation=config.activation,
            log_std_init=float(config.log_std_init),
            action_nvec=nvec,
            unit_width=int(config.unit_width),
        )

    @property
    def discrete(self) -> bool:
        """Whether actions are categorical."""
        return self.num_actions > 0

    @property
    def features(self) -> int:
        """Width of the encoded observation fed to the networks."""
        return self.obs_categories or int(np.prod(self.obs_shape, dtype=int))

    @property
    def network(self) -> ActorCritic | SetActorCritic:
        """The flax module."""
        if self.unit_width:
            units = len(self.action_nvec)
            return SetActorCritic(self.hidden, self.activation, units, self.unit_width, self.action_nvec[0])
        dim = int(np.prod(self.action_shape, dtype=int))
        return ActorCritic(self.hidden, self.activation, self.num_actions, dim, self.log_std_init)

    def stochastic(self) -> ActorCriticPolicy:
        """The same policy sampling its actions instead of taking the greedy one."""
        return dataclasses.replace(self, deterministic=False)

    def init(self, key: Array, normalize_obs: bool = True) -> PyTree:
        """Fresh params: random network weights and empty (or identity) observation statistics."""
        net = self.network.init(key, jnp.zeros((self.features,), jnp.float32))
        stats = RunningStats.create((self.features,)) if normalize_obs else identity_stats((self.features,))
        return {"net": net, "obs_stats": stats}

    def encode(self, obs: Array) -> Array:
        """Observations ``(..., *obs_shape)`` as float features ``(..., features)``."""
        if self.obs_categories:
            return jax.nn.one_hot(obs, self.obs_categories, dtype=jnp.float32)
        lead = obs.shape[: obs.ndim - len(self.obs_shape)]
        return jnp.reshape(obs, (*lead, self.features)).astype(jnp.float32)

    def _components(self, logits: Array) -> list[Array]:
        """The logits of each ``MultiDiscrete`` component, split off the concatenated head."""
        bounds = np.cumsum(self.action_nvec)[:-1].tolist()
        return jnp.split(logits, bounds, axis=-1)

    def sample(self, dist: Any, key: Array) -> Array:
        """Draw raw actions (integers, or unclipped normalised Gaussian samples)."""
        if self.action_nvec:
            keys = jax.random.split(key, len(self.action_nvec))
            parts = [nets.categorical_sample(k, lg) for k, lg in zip(keys, self._components(dist), strict=True)]
            return jnp.stack(parts, axis=-1)
        if self.discrete:
            return nets.categorical_sample(key, dist)
        return nets.gaussian_sample(key, *dist)

    def mode(self, dist: Any) -> Array:
        """The most likely raw action (argmax per component, or the Gaussian mean)."""
        if self.action_nvec:
            return jnp.stack([jnp.argmax(lg, axis=-1) for lg in self._components(dist)], axis=-1).astype(jnp.int32)
        return jnp.argmax(dist, axis=-1).astype(jnp.int32) if self.discrete else dist[0]

    def log_prob(self, dist: Any, raw_action: Array) -> Array:
        """Log-probability of raw actions (summed over ``MultiDiscrete`` components)."""
        if self.action_nvec:
            parts = [
                nets.categorical_log_prob(lg, raw_action[..., i]) for i, lg in enumerate(self._components(dist))
            ]
            return sum(parts[1:], parts[0])
        if self.discrete:
            return nets.categorical_log_prob(dist, raw_action)
        return nets.gaussian_log_prob(*dist, raw_action)

    def entropy(self, dist: Any) -> Array:
        """Entropy of the action distribution (summed over components; normalised units for Gaussians)."""
        if self.action_nvec:
            parts = [nets.categorical_entropy(lg) for lg in self._components(dist)]
            return sum(parts[1:], parts[0])
        return nets.categorical_entropy(dist) if self.discrete else nets.gaussian_entropy(dist[1])

    def to_env(self, raw_action: Array) -> Array:
        """Map raw actions to environment actions: the index, or the clipped and rescaled Gaussian draw."""
        if self.discrete:
            return raw_action.astype(self.action_dtype)
        low = np.asarray(self.action_low, np.float32)
        high = np.asarray(self.action_high, np.float32)
        finite = np.isfinite(low) & np.isfinite(high)
        low_f, high_f = np.where(finite, low, 0.0), np.where(finite, high, 0.0)
        mid = ((low_f + high_f) / 2).astype(np.float32)
        half = ((high_f - low_f) / 2).astype(np.float32)
        scaled = mid + jnp.clip(raw_action, -1.0, 1.0) * half
        action = jnp.where(finite, scaled, jnp.clip(raw_action, low, high))
        action = jnp.reshape(action, (*raw_action.shape[:-1], *self.action_shape))
        if np.issubdtype(np.dtype(self.action_dtype), np.integer):
            action = jnp.round(action)
        return action.astype(self.action_dtype)

    def __call__(self, params: PyTree, obs: Array, key: Array) -> Array:
        """Action for ``obs``: greedy if ``deterministic``, else sampled with ``key``."""
        x = params["obs_stats"].normalize(self.encode(obs))
        dist = self.network.apply(params["net"], x, method="actor")
        raw = self.mode(dist) if self.deterministic else self.sample(dist, key)
        return self.to_env(raw)

    def value(self, params: PyTree, obs: Array) -> Array:
        """The critic's value of ``obs`` (in learning units: rewards scaled and normalised)."""
        x = params["obs_stats"].normalize(self.encode(obs))
        return self.network.apply(params["net"], x, method="value")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able description (``from_dict`` inverts it)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ActorCriticPolicy:
        """Rebuild a policy from ``to_dict``'s output."""
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})


# ----------------------------------------------------------------------------- GAE and losses


def gae(
    rewards: Array,
    values: Array,
    next_values: Array,
    terminated: Array,
    truncated: Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[Array, Array]:
    """Generalised advantage estimates over a rollout (leading time axis), as a reverse scan.

    ``next_values[t]`` is the value of the observation that step ``t`` really produced
    (``V(info["final_obs"])`` under ``AutoResetEnv``). A terminated step does not bootstrap
    (``delta = r - V``); a truncated one bootstraps from ``next_values``; both stop the
    recursion, so advantages never leak across episodes::

        delta_t = r_t + gamma (1 - terminated_t) next_values_t - values_t
        A_t = delta_t + gamma lambda (1 - (terminated_t | truncated_t)) A_{t+1},  A_T = 0

    Args:
        rewards: ``(T, ...)``.
        values: ``(T, ...)``, ``V(s_t)``.
        next_values: ``(T, ...)``, ``V(s'_t)``.
        terminated: ``(T, ...)`` bool.
        truncated: ``(T, ...)`` bool.
        gamma: discount factor.
        gae_lambda: GAE lambda.

    Returns:
        ``(advantages, returns)`` with ``returns = advantages + values``, both ``(T, ...)``.
    """
    dtype = values.dtype
    not_terminated = 1.0 - terminated.astype(dtype)
    not_done = 1.0 - (terminated | truncated).astype(dtype)
    deltas = rewards + gamma * not_terminated * next_values - values

    def backward(carry: Array, step: tuple[Array, Array]) -> tuple[Array, Array]:
        delta, cont = step
        advantage = delta + gamma * gae_lambda * cont * carry
        return advantage, advantage

    _, advantages = jax.lax.scan(backward, jnp.zeros_like(values[0]), (deltas, not_done), reverse=True)
    return advantages, advantages + values


class Batch(NamedTuple):
    """Flattened rollout transitions for the update (leading axis: transitions)."""

    obs: Array  # (B, F) normalised features the actions were chosen on
    action: Array  # (B,) int32 or (B, d) raw Gaussian samples
    log_prob: Array  # (B,) log-probability under the rollout policy
    advantage: Array  # (B,)
    target: Array  # (B,) value target (GAE return)


def surrogate_loss(
    net: PyTree,
    policy: ActorCriticPolicy,
    batch: Batch,
    config: OnPolicyConfig,
    clip_eps: float | None,
) -> tuple[Array, dict[str, Array]]:
    """Policy-gradient loss with value and entropy terms.

    ``policy_loss = -mean(min(r A, clip(r, 1 - eps, 1 + eps) A))`` with the probability ratio
    ``r``; with ``clip_eps=None`` it is ``-mean(r A)``, whose gradient at ``r = 1`` is the
    plain (A2C) policy gradient ``-mean(grad log pi A)``. The total is
    ``policy_loss + value_coef * 0.5 mean((V - target)^2) - entropy_coef * entropy``.

    Args:
        net: network weights.
        policy: the policy description.
        batch: transitions.
        config: supplies the coefficients and ``normalize_advantages``.
        clip_eps: PPO clip range, or ``None`` for no clipping.

    Returns:
        ``(loss, metrics)`` with ``policy_loss``, ``value_loss``, ``entropy``, ``approx_kl``
        (``mean(r - 1 - log r)``) and ``clip_fraction``.
    """
    dist, value = policy.network.apply(net, batch.obs)
    log_prob = policy.log_prob(dist, batch.action)
    entropy = jnp.mean(policy.entropy(dist))
    advantage = batch.advantage
    if config.normalize_advantages:
        advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-8)
    log_ratio = log_prob - batch.log_prob
    ratio = jnp.exp(log_ratio)
    if clip_eps is None:
        surrogate, clipped = ratio * advantage, jnp.zeros_like(ratio)
    else:
        surrogate = jnp.minimum(
            ratio * advantage, jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantage
        )
        clipped = (jnp.abs(ratio - 1.0) > clip_eps).astype(ratio.dtype)
    policy_loss = -jnp.mean(surrogate)
    value_loss = 0.5 * jnp.mean(jnp.square(value - batch.target))
    loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
    metrics = {
        "policy_loss": policy_loss,
        "value_loss": value_loss,
        "entropy": entropy,
        "approx_kl": jnp.mean(ratio - 1.0 - log_ratio),
        "clip_fraction": jnp.mean(clipped),
    }
    return loss, metrics


def gradient_step(
    net: PyTree,
    opt_state: PyTree,
    batch: Batch,
    *,
    policy: ActorCriticPolicy,
    optimizer: optax.GradientTransformation,
    config: OnPolicyConfig,
    clip_eps: float | None,
) -> tuple[PyTree, PyTree, dict[str, Array]]:
    """One optimiser step on ``surrogate_loss``; metrics gain ``grad_norm`` (before clipping)."""
    grads, metrics = jax.grad(surrogate_loss, has_aux=True)(net, policy, batch, config, clip_eps)
    updates, opt_state = optimizer.update(grads, opt_state, net)
    return optax.apply_updates(net, updates), opt_state, {**metrics, "grad_norm": optax.global_norm(grads)}


# ----------------------------------------------------------------------------- training loop


class OnPolicyState(NamedTuple):
    """Loop state carried from iteration to iteration (and saved in checkpoints)."""

    net: PyTree
    opt_state: PyTree
    obs_stats: RunningStats
    reward_stats: RunningStats  # () statistics of the discounted return (normalize_rewards)
    discounted_return: Array  # (num_envs,) running discounted return (normalize_rewards)
    env_state: PyTree
    obs: Array  # (num_envs, *obs_shape) current raw observations
    iteration: Array  # () int32
    key: Array


class Transition(NamedTuple):
    """One rollout step of all environments (stacked over time by the scan)."""

    obs: Array
    action: Array
    log_prob: Array
    value: Array
    next_value: Array
    reward: Array  # learning reward (scaled / normalised)
    terminated: Array
    truncated: Array
    episode_done: Array
    episode_return: Array
    episode_length: Array


def _vector_env(env: Environment[Any, Any], config: OnPolicyConfig) -> VmapEnv:
    """The training stack: ``num_envs`` auto-resetting copies with episode statistics."""
    return VmapEnv(EpisodeStatistics(AutoResetEnv(env)), config.num_envs)


def _init_state(
    key: Array, env_params: Any, env: Environment[Any, Any], config: OnPolicyConfig, policy: ActorCriticPolicy
) -> OnPolicyState:
    """Fresh network, optimiser state, statistics and environments (reset) for one seed."""
    k_net, k_env, k_loop = jax.random.split(key, 3)
    params = policy.init(k_net, config.normalize_obs)
    obs, env_state = _vector_env(env, config).reset(k_env, env_params)
    return OnPolicyState(
        net=params["net"],
        opt_state=config.optimizer().init(params["net"]),
        obs_stats=params["obs_stats"],
        reward_stats=RunningStats.create(()),
        discounted_return=jnp.zeros((config.num_envs,), jnp.float32),
        env_state=env_state,
        obs=obs,
        iteration=jnp.zeros((), jnp.int32),
        key=k_loop,
    )


def _learning_reward(
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


def _rollout(
    state: OnPolicyState,
    env_params: Any,
    key: Array,
    env: Environment[Any, Any],
    config: OnPolicyConfig,
    policy: ActorCriticPolicy,
) -> tuple[OnPolicyState, Transition]:
    """``rollout_steps`` steps of all environments with the current policy (sampled actions)."""
    venv, apply = _vector_env(env, config), policy.network.apply

    def step(carry: OnPolicyState, step_key: Array) -> tuple[OnPolicyState, Transition]:
        k_act, k_env = jax.random.split(step_key)
        features = policy.encode(carry.obs)
        obs_stats = carry.obs_stats.update(features) if config.normalize_obs else carry.obs_stats
        x = obs_stats.normalize(features)
        dist, value = apply(carry.net, x)
        raw = policy.sample(dist, k_act)
        obs, env_state, reward, terminated, truncated, info = venv.step(
            k_env, carry.env_state, policy.to_env(raw), env_params
        )
        final_x = obs_stats.normalize(policy.encode(info["final_obs"]))
        next_value = apply(carry.net, final_x, method="value")
        learn_reward, reward_stats, discounted = _learning_reward(
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
            raw,
            policy.log_prob(dist, raw),
            value,
            next_value,
            learn_reward,
            terminated,
            truncated,
            info["returned_episode"],
            info["returned_episode_return"],
            info["returned_episode_length"],
        )
        return carry, transition

    return jax.lax.scan(step, state, jax.random.split(key, config.rollout_steps))


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


def _iteration(
    state: OnPolicyState,
    env_params: Any,
    env: Environment[Any, Any],
    config: OnPolicyConfig,
    policy: ActorCriticPolicy,
) -> tuple[OnPolicyState, dict[str, Array]]:
    """One rollout, advantage estimate and agent update."""
    key, k_roll, k_update = jax.random.split(state.key, 3)
    state, traj = _rollout(state, env_params, k_roll, env, config, policy)
    advantages, targets = gae(
        traj.reward,
        traj.value,
        traj.next_value,
        traj.terminated,
        traj.truncated,
        config.gamma,
        config.gae_lambda,
    )
    flat = partial(jax.tree_util.tree_map, lambda x: x.reshape((config.batch_size, *x.shape[2:])))
    batch = Batch(*flat((traj.obs, traj.action, traj.log_prob, advantages, targets)))
    optimizer = config.optimizer()
    net, opt_state, update_metrics = config.update(
        policy, optimizer, state.net, state.opt_state, batch, k_update
    )
    learning_rate = config.schedule()(state.iteration * config.updates_per_iteration)
    log = {
        **_episode_metrics(traj),
        **update_metrics,
        "learning_rate": jnp.asarray(learning_rate, jnp.float32),
    }
    state = state._replace(net=net, opt_state=opt_state, iteration=state.iteration + 1, key=key)
    return state, log


def _run(
    state: OnPolicyState,
    env_params: Any,
    env: Environment[Any, Any],
    config: OnPolicyConfig,
    policy: ActorCriticPolicy,
    n: int,
) -> tuple[OnPolicyState, dict[str, Array]]:
    """``n`` iterations in one ``lax.scan``; the log leaves gain a leading ``n`` axis."""
    return jax.lax.scan(lambda s, _: _iteration(s, env_params, env, config, policy), state, None, length=n)


_STATIC = ("env", "config", "policy")
_init_jit = jax.jit(_init_state, static_argnames=_STATIC)
_chunk_jit = jax.jit(_run, static_argnames=(*_STATIC, "n"))


@partial(jax.jit, static_argnames=_STATIC)
def _init_seeds_jit(
    keys: Array,
    env_params: Any,
    env: Environment[Any, Any],
    config: OnPolicyConfig,
    policy: ActorCriticPolicy,
) -> OnPolicyState:
    """``_init_state`` for every key (leading seed axis)."""
    return jax.vmap(lambda k: _init_state(k, env_params, env, config, policy))(keys)


@partial(jax.jit, static_argnames=(*_STATIC, "n"))
def _chunk_seeds_jit(
    states: OnPolicyState,
    env_params: Any,
    env: Environment[Any, Any],
    config: OnPolicyConfig,
    policy: ActorCriticPolicy,
    n: int,
) -> tuple[OnPolicyState, dict[str, Array]]:
    """``_run`` vmapped over a leading seed axis of ``states`` (the env params are shared)."""
    return jax.vmap(lambda s: _run(s, env_params, env, config, policy, n))(states)



def _warm_start(state: OnPolicyState, initial: PyTree, config: OnPolicyConfig) -> OnPolicyState:
    """``state`` with the network and observation statistics of ``initial`` and a fresh optimiser."""
    expected = {"net": state.net, "obs_stats": state.obs_stats}
    shapes = jax.tree_util.tree_map(lambda x: (jnp.shape(x), jnp.result_type(x)), expected)
    try:
        given = jax.tree_util.tree_map(lambda x: (jnp.shape(x), jnp.result_type(x)), dict(initial))
    except (TypeError, ValueError):
        given = None
    if given != shapes:
        raise ValueError("initial: the params do not fit this policy (another network or observation shape)")
    net = jax.tree_util.tree_map(jnp.asarray, initial["net"])
    return state._replace(net=net, opt_state=config.optimizer().init(net), obs_stats=initial["obs_stats"])


def _setup(env: Environment[Any, Any], config: OnPolicyConfig, params: Any) -> tuple[Any, ActorCriticPolicy]:
    """The env params to train on and the policy description (spaces read from concrete params)."""
    if not isinstance(config, OnPolicyConfig):
        raise TypeError(f"config must be an agent's config (e.g. PPOConfig), got {type(config).__name__}")
    env_params = env.default_params if params is None else params
    return env_params, ActorCriticPolicy.from_env(env, env_params, config)


def _result(
    policy: ActorCriticPolicy,
    state: OnPolicyState,
    log: dict[str, Array],
    config: OnPolicyConfig,
    start: float,
) -> TrainResult:
    params = jax.block_until_ready({"net": state.net, "obs_stats": state.obs_stats})
    return TrainResult(
        policy=policy,
        params=params,
        metrics={name: np.asarray(value) for name, value in log.items()},
        train_seconds=time.perf_counter() - start,
        env_steps=config.iterations * config.batch_size,
    )


def train(
    env: Environment[Any, Any],
    config: OnPolicyConfig,
    *,
    key: Array,
    params: Any = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
    initial: PyTree | None = None,
) -> TrainResult:
    """Train an on-policy actor-critic agent (the agent is the type of ``config``).

    Args:
        env: an unwrapped environment (pass the same object again to reuse the compiled loop).
        config: ``PPOConfig`` or ``A2CConfig``.
        key: PRNG key of the run.
        params: the environment's params (default ``env.default_params``).
        progress: optional ``(task, done, total)`` callback, called between chunks.
        checkpoint: optional file; written after every chunk and resumed from when it exists
            (a resumed run ends identical to an uninterrupted one).
        initial: optional policy params to start from (a previous ``TrainResult.params`` of
            the same policy shape): fine-tuning, with a fresh optimiser state.

    Returns:
        A ``TrainResult`` whose ``policy`` is the deterministic ``ActorCriticPolicy``.

    Raises:
        ValueError: ``initial`` does not fit the policy (the message names ``initial``).
    """
    start = time.perf_counter()
    env_params, policy = _setup(env, config, params)
    env_params = strong_types(env_params)
    state = _init_jit(key, env_params, env=env, config=config, policy=policy)
    if initial is not None:
        state = _warm_start(state, initial, config)

    def chunk(s: OnPolicyState, n: int) -> tuple[OnPolicyState, dict[str, Array]]:
        # Block, so that progress reports (made between chunks) follow the computation.
        return jax.block_until_ready(_chunk_jit(s, env_params, env=env, config=config, policy=policy, n=n))

    state, log = run_chunked(
        chunk,
        state,
        iterations=config.iterations,
        log_every=config.log_every,
        kind=config.kind,
        config=config,
        key=key,
        progress=progress,
        task=config.kind,
        checkpoint=checkpoint,
    )
    return _result(policy, state, log, config, start)


def train_seeds(
    env: Environment[Any, Any],
    config: OnPolicyConfig,
    *,
    keys: Array,
    params: Any = None,
    progress: ProgressFn | None = None,
    checkpoint: str | os.PathLike[str] | None = None,
) -> TrainResult:
    """Train one agent per key at once (the jitted chunk is vmapped over seeds).

    Args:
        env: an unwrapped environment.
        config: ``PPOConfig`` or ``A2CConfig``.
        keys: ``(seeds, ...)`` PRNG keys, one per seed.
        params: the environment's params, shared by all seeds (default ``env.default_params``).
        progress: optional ``(task, done, total)`` callback, called between chunks.
        checkpoint: optional checkpoint file (as in ``train``).

    Returns:
        A ``TrainResult`` whose params leaves and metrics carry a leading seed axis.
    """
    start = time.perf_counter()
    env_params, policy = _setup(env, config, params)
    env_params = strong_types(env_params)
    state = _init_seeds_jit(keys, env_params, env=env, config=config, policy=policy)

    def chunk(s: OnPolicyState, n: int) -> tuple[OnPolicyState, dict[str, Array]]:
        return jax.block_until_ready(
            _chunk_seeds_jit(s, env_params, env=env, config=config, policy=policy, n=n)
        )

    state, log = run_chunked(
        chunk,
        state,
        iterations=config.iterations,
        log_every=config.log_every,
        kind=config.kind,
        config=config,
        key=keys,
        progress=progress,
        task=config.kind,
        checkpoint=checkpoint,
        seed_axis=True,
    )
    return _result(policy, state, log, config, start)


# ----------------------------------------------------------------------------- save / load


def save_policy(
    path: str | os.PathLike[str], result: TrainResult, *, seed: int | None = None, extra: dict[str, Any] | None = None
) -> None:
    """Write a trained actor-critic policy (weights, observation statistics, description) as msgpack.

    Args:
        path: destination file.
        result: what ``train`` or ``train_seeds`` returned.
        seed: for a ``train_seeds`` result, which seed's policy to save.
        extra: more JSON-able metadata to store (e.g. how the policy was trained), read back
            with ``checkpoint.load_metadata``.

    Raises:
        ValueError: the params carry a seed axis and no ``seed`` was given.
    """
    policy, params = result.policy, result.params
    if not isinstance(policy, ActorCriticPolicy):
        raise TypeError(f"not an actor-critic result (policy is {type(policy).__name__})")
    if seed is not None:
        params = jax.tree_util.tree_map(lambda x: x[seed], params)
    expected = jax.eval_shape(policy.init, jax.random.PRNGKey(0))
    if jax.tree_util.tree_leaves(params)[0].shape != jax.tree_util.tree_leaves(expected)[0].shape:
        raise ValueError("seed: the params have a seed axis; pass seed= to choose one")
    write_policy(path, policy, params, extra=extra)


def write_policy(
    path: str | os.PathLike[str], policy: ActorCriticPolicy, params: PyTree, *, extra: dict[str, Any] | None = None
) -> None:
    """Write ``policy`` and its ``params`` (one seed's) as msgpack, readable by ``load_policy``.

    ``save_policy`` writes a training result this way; use this for params refined outside an
    agent's ``train`` (e.g. by supervised distillation).
    """
    save_pytree(path, params, metadata={**(extra or {}), "format": POLICY_FORMAT, "policy": policy.to_dict()})


def load_policy(path: str | os.PathLike[str]) -> tuple[ActorCriticPolicy, PyTree]:
    """Read a policy written by ``save_policy``.

    Args:
        path: the file.

    Returns:
        ``(policy, params)``: call ``policy(params, obs, key)``.

    Raises:
        ValueError: the file is not a saved actor-critic policy.
    """
    meta = load_metadata(path)
    if meta.get("format") != POLICY_FORMAT:
        raise ValueError(f"{path}: not a saved actor-critic policy")
    policy = ActorCriticPolicy.from_dict(meta["policy"])
    return policy, load_pytree(path, jax.eval_shape(policy.init, jax.random.PRNGKey(0)))
