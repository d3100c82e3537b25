"""DQN for discrete actions: double Q-learning, target network, epsilon-greedy, Huber loss.

The loop (vectorised collection, n-step replay, prefill, jitted chunks with progress and
checkpoint/resume, several seeds at once) is the shared off-policy loop of
``decisions.core.agents.offpolicy``; this module supplies ``DQNAgent`` (an
``offpolicy.OffPolicyAgent``: the Q-network and its update):

- **double DQN** target ``r + discount * Q_target(s', argmax_a Q(s', a))``, where ``discount``
  is ``gamma ** n`` (0 after a termination; truncations bootstrap from the final observation);
- **Huber loss** on the TD error, Adam with global-norm clipping;
- **target network** updated as ``target += tau * (online - target)`` every
  ``target_update_interval`` updates (``tau=1`` with a long interval: periodic hard copies;
  a small ``tau`` with interval 1: Polyak averaging);
- **epsilon-greedy** exploration, epsilon decaying linearly from ``epsilon_start`` to
  ``epsilon_end`` over the first ``exploration_fraction`` of the training iterations.

``train`` returns the greedy policy; its params hold the Q-network weights and the
observation statistics, and ``save_policy`` / ``load_policy`` round-trip them (msgpack; the
file also holds the policy's description, so loading needs nothing else).

**Action masks** (for the host loop, ``offpolicy.host_loop``): ``explore_masked``,
``random_valid_action`` and ``update_masked`` are the masked twins of ``explore``,
``random_action`` and ``update`` (epsilon-greedy among the valid actions; the double-DQN
argmax over the next state's valid actions), and ``DQNPolicy.masked_action`` the masked greedy
policy. ``agent_for_shapes`` builds the agent from shapes when there is no functional
``Environment`` to read them from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from decisions.core.agents.common import check_config, check_int, check_number
from decisions.core.agents.offpolicy import (
    NetworkPolicy,
    OffPolicyConfig,
    polyak_update,
    save_policy,
    trainers,
)
from decisions.core.agents.replay import Transition
from decisions.core.env import Environment
from decisions.core.nets import MLP
from decisions.core.spaces import Discrete

__all__ = [
    "DQNAgent",
    "DQNConfig",
    "DQNPolicy",
    "DQNState",
    "agent_for_shapes",
    "load_policy",
    "make_agent",
    "save_policy",
    "train",
    "train_seeds",
]

PyTree = Any
KIND = "dqn"


@dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    """DQN settings (frozen, hashable: a jit static argument); the shared ones are in ``OffPolicyConfig``."""

    learning_rate: float = 1e-3
    """Adam learning rate."""
    exploration_fraction: float = 0.3
    """Fraction of the training iterations over which epsilon decays linearly."""
    epsilon_start: float = 1.0
    """Exploration rate at the start of training (after the random prefill)."""
    epsilon_end: float = 0.05
    """Exploration rate after the decay."""
    huber_delta: float = 1.0
    """Transition point of the Huber loss between quadratic and linear."""

    def __post_init__(self) -> None:
        """Validate every field; raise ``ValueError("field: problem")`` on the first bad one."""
        super().__post_init__()
        check_number("exploration_fraction", self.exploration_fraction, 0.0, 1.0, open_low=True)
        check_number("epsilon_start", self.epsilon_start, 0.0, 1.0)
        check_number("epsilon_end", self.epsilon_end, 0.0, 1.0)
        check_number("huber_delta", self.huber_delta, 0.0, float("inf"), open_low=True)

    def epsilon(self, frac: Array) -> Array:
        """Exploration rate at training progress ``frac`` in [0, 1]."""
        decay = jnp.clip(frac / self.exploration_fraction, 0.0, 1.0)
        return self.epsilon_start + (self.epsilon_end - self.epsilon_start) * decay


def q_network(hidden: tuple[int, ...], num_actions: int) -> MLP:
    """The Q-network: a ReLU MLP from flat observations to one value per action."""
    return MLP(hidden=hidden, out=num_actions, activation=nn.relu)


def masked_argmax(q: Array, mask: Array) -> Array:
    """``argmax`` over the last axis among the actions where ``mask`` is True (0 if none is)."""
    return jnp.argmax(jnp.where(mask, q, -jnp.inf), axis=-1)


@dataclass(frozen=True)
class DQNPolicy(NetworkPolicy):
    """The greedy policy ``argmax_a Q(normalised obs, a)``; hashable, so jitted evaluators reuse it.

    Call it as ``policy(params, obs, key)`` with ``params = {"q": ..., "obs_stats": ...}`` and one
    observation (or a batch: leading axes are kept). ``key`` is unused.

    Attributes:
        obs_shape: shape of one observation.
        num_actions: number of discrete actions.
        action_dtype: dtype name of the actions handed to the environment.
        hidden: hidden widths of the Q-network.
    """

    kind: ClassVar[str] = KIND
    params_key: ClassVar[str] = "q"

    obs_shape: tuple[int, ...]
    num_actions: int
    action_dtype: str
    hidden: tuple[int, ...]

    @property
    def network(self) -> MLP:
        """The Q-network module."""
        return q_network(self.hidden, self.num_actions)

    def __call__(self, params: PyTree, obs: Array, key: Array) -> Array:
        """The greedy action(s)."""
        del key
        x = self.features(params, obs)
        return jnp.argmax(self.network.apply(params["q"], x), axis=-1).astype(self.action_dtype)

    def masked_action(self, params: PyTree, obs: Array, mask: Array) -> Array:
        """The greedy action(s) among the valid ones.

        Args:
            params: the policy's params.
            obs: one observation or a batch (leading axes are kept).
            mask: bool ``(..., num_actions)``, True where an action is valid.

        Returns:
            ``argmax`` of the Q-values over the valid actions, in ``action_dtype``.
        """
        q = self.network.apply(params["q"], self.features(params, obs))
        return masked_argmax(q, mask).astype(self.action_dtype)


class DQNState(NamedTuple):
    """DQN training state."""

    params: PyTree
    target_params: PyTree
    opt_state: optax.OptState
    updates: Array  # () int32, gradient updates done


@dataclass(frozen=True)
class DQNAgent:
    """DQN's part of the off-policy loop (an ``offpolicy.OffPolicyAgent``).

    Attributes:
        config: the DQN settings.
        policy: the greedy policy (its Q-network is the one trained).
    """

    kind: ClassVar[str] = KIND

    config: DQNConfig
    policy: DQNPolicy

    @property
    def network(self) -> MLP:
        """The Q-network module."""
        return self.policy.network

    @property
    def num_actions(self) -> int:
        """Number of discrete actions."""
        return self.policy.num_actions

    @property
    def action_dtype(self) -> str:
        """Dtype name of the actions."""
        return self.policy.action_dtype

    def init(self, key: Array, obs: Array) -> DQNState:
        """Random Q-network, its target copy and a fresh optimiser state."""
        params = self.network.init(key, obs)
        return DQNState(params, params, self.config.optimizer().init(params), jnp.zeros((), jnp.int32))

    def example_action(self) -> Array:
        """One action index (shape and dtype only)."""
        return jnp.zeros((), self.action_dtype)

    def random_action(self, key: Array, num: int) -> Array:
        """``num`` uniformly random action indices."""
        return jax.random.randint(key, (num,), 0, self.num_actions).astype(self.action_dtype)

    def explore(self, state: DQNState, obs: Array, key: Array, frac: Array) -> Array:
        """Epsilon-greedy actions, epsilon at training progress ``frac``."""
        greedy = jnp.argmax(self.network.apply(state.params, obs), axis=-1).astype(self.action_dtype)
        explore_key, random_key = jax.random.split(key)
        random = self.random_action(random_key, obs.shape[0])
        take_random = jax.random.uniform(explore_key, (obs.shape[0],)) < self.config.epsilon(frac)
        return jnp.where(take_random, random, greedy)

    def random_valid_action(self, key: Array, mask: Array) -> Array:
        """Uniformly random valid action indices, one per row of ``mask`` (bool ``(num, num_actions)``)."""
        return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(self.action_dtype)

    def explore_masked(self, state: DQNState, obs: Array, mask: Array, key: Array, frac: Array) -> Array:
        """``explore`` restricted to the valid actions (``mask``: bool ``(num, num_actions)``)."""
        greedy = masked_argmax(self.network.apply(state.params, obs), mask).astype(self.action_dtype)
        explore_key, random_key = jax.random.split(key)
        random = self.random_valid_action(random_key, mask)
        take_random = jax.random.uniform(explore_key, (obs.shape[0],)) < self.config.epsilon(frac)
        return jnp.where(take_random, random, greedy)

    def env_action(self, action: Array) -> Array:
        """The stored action index is the environment's action."""
        return action

    def update(self, state: DQNState, batch: Transition, key: Array) -> tuple[DQNState, dict[str, Array]]:
        """One double-DQN Huber step, then the target update; metrics ``q_loss`` and ``q_mean``."""
        del key
        return self._td_update(state, batch, None)

    def update_masked(
        self, state: DQNState, batch: Transition, next_mask: Array, key: Array
    ) -> tuple[DQNState, dict[str, Array]]:
        """``update`` whose double-DQN argmax keeps to the next state's valid actions.

        Args:
            state: the training state.
            batch: a replay batch (normalised observations).
            next_mask: bool ``(batch, num_actions)``, the actions valid in ``batch.next_obs``.
            key: unused.

        Returns:
            As ``update``.
        """
        del key
        return self._td_update(state, batch, next_mask)

    def _td_update(
        self, state: DQNState, batch: Transition, next_mask: Array | None
    ) -> tuple[DQNState, dict[str, Array]]:
        config, network = self.config, self.network
        next_online = network.apply(state.params, batch.next_obs)
        next_target = network.apply(state.target_params, batch.next_obs)
        if next_mask is None:
            best = jnp.argmax(next_online, axis=-1)
        else:
            best = masked_argmax(next_online, next_mask)
        next_value = jnp.take_along_axis(next_target, best[:, None], axis=-1)[:, 0]
        target = jax.lax.stop_gradient(batch.reward + batch.discount * next_value)
        action = batch.action.astype(jnp.int32)

        def loss_fn(params: PyTree) -> tuple[Array, Array]:
            q = jnp.take_along_axis(network.apply(params, batch.obs), action[:, None], axis=-1)[:, 0]
            return jnp.mean(optax.huber_loss(q, target, delta=config.huber_delta)), q

        (loss, q), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        updates, opt_state = config.optimizer().update(grads, state.opt_state, state.params)
        params = optax.apply_updates(state.params, updates)
        count = state.updates + 1
        target_params = polyak_update(config, count, state.target_params, params)
        return DQNState(params, target_params, opt_state, count), {"q_loss": loss, "q_mean": jnp.mean(q)}

    def schedule_metrics(self, state: DQNState, frac: Array) -> dict[str, Array]:
        """Epsilon at training progress ``frac``."""
        return {"epsilon": self.config.epsilon(frac).astype(jnp.float32)}

    def policy_params(self, state: DQNState) -> dict[str, PyTree]:
        """The online Q-network."""
        return {"q": state.params}


def make_agent(env: Environment[Any, Any], config: DQNConfig, params: PyTree | None = None) -> DQNAgent:
    """The DQN agent for ``env``'s spaces (read from concrete params).

    Args:
        env: an unwrapped environment with a ``Discrete`` action space.
        config: the DQN settings.
        params: environment params (default ``env.default_params``).

    Returns:
        The agent, with its greedy policy.

    Raises:
        TypeError: ``config`` is not a ``DQNConfig``.
        ValueError: the action space is not ``Discrete``.
    """
    check_config(config, DQNConfig)
    params = env.default_params if params is None else params
    space = env.action_space(params)
    if not isinstance(space, Discrete):
        raise ValueError(f"DQN needs a Discrete action space, {env.name} has {type(space).__name__}")
    return agent_for_shapes(
        config,
        obs_shape=tuple(env.observation_space(params).shape),
        num_actions=space.n,
        action_dtype=np.dtype(space.dtype).name,
    )


def agent_for_shapes(
    config: DQNConfig, *, obs_shape: tuple[int, ...], num_actions: int, action_dtype: str = "int32"
) -> DQNAgent:
    """The DQN agent for observations of ``obs_shape`` and ``num_actions`` discrete actions.

    For environments that are not a functional ``Environment`` (the host loop's
    ``offpolicy.host_loop.MultiAgentVecEnv``: ``obs_shape=(envs.obs_dim,)``,
    ``num_actions=envs.num_actions``).

    Args:
        config: the DQN settings.
        obs_shape: shape of one observation.
        num_actions: number of discrete actions (>= 1).
        action_dtype: dtype name of the actions.

    Returns:
        The agent, with its greedy policy.

    Raises:
        TypeError: ``config`` is not a ``DQNConfig``.
        ValueError: ``num_actions`` is not a positive integer.
    """
    check_config(config, DQNConfig)
    check_int("num_actions", num_actions, 1)
    policy = DQNPolicy(
        obs_shape=tuple(int(d) for d in obs_shape),
        num_actions=int(num_actions),
        action_dtype=action_dtype,
        hidden=config.hidden,
    )
    return DQNAgent(config=config, policy=policy)


train, train_seeds = trainers(make_agent, DQNConfig(), DQNPolicy, metrics="``q_loss``, ``q_mean`` and ``epsilon``")

load_policy = DQNPolicy.load
"""``load_policy(path) -> (policy, params)``: read a DQN policy written by ``save_policy``."""
