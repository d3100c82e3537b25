"""DQN for discrete actions, on the shared off-policy loop (``offpolicy``): ``DQNAgent`` supplies
the Q-network and its update.

Double-DQN targets with discount ``gamma ** n`` (0 after a termination), Huber loss (or the
squared error, ``loss``), Adam with global-norm (or element-wise, ``grad_clip``) gradient
clipping, a target network moved by ``tau`` every ``target_update_interval`` updates, and
epsilon-greedy exploration decaying linearly over ``exploration_fraction`` of training. The
``*_masked`` methods and ``DQNPolicy.masked_action`` are the action-masked twins for the host
loop; ``agent_for_shapes`` builds the agent without an ``Environment``.
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

from decisions.core.agents.common import check_choice, check_config, check_int, check_number
from decisions.core.agents.offpolicy import (
    NetworkPolicy,
    OffPolicyConfig,
    gradient_update,
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
LOSSES = ("huber", "squared")


@dataclass(frozen=True)
class DQNConfig(OffPolicyConfig):
    """DQN settings (frozen, hashable: a jit static argument); the shared ones are in ``OffPolicyConfig``."""

    # Adam learning rate.
    learning_rate: float = 1e-3
    # Fraction of the training iterations over which epsilon decays linearly.
    exploration_fraction: float = 0.3
    # Exploration rate at the start of training (after the random prefill).
    epsilon_start: float = 1.0
    # Exploration rate after the decay.
    epsilon_end: float = 0.05
    # TD loss: "huber" (``huber_delta``) or "squared" (half the squared error, ``optax.l2_loss``).
    loss: str = "huber"
    # Transition point of the Huber loss between quadratic and linear.
    huber_delta: float = 1.0

    def __post_init__(self) -> None:
        """Validate every field; raise ``ValueError("field: problem")`` on the first bad one."""
        super().__post_init__()
        check_number("exploration_fraction", self.exploration_fraction, 0.0, 1.0, open_low=True)
        check_number("epsilon_start", self.epsilon_start, 0.0, 1.0)
        check_number("epsilon_end", self.epsilon_end, 0.0, 1.0)
        check_choice("loss", self.loss, LOSSES)
        check_number("huber_delta", self.huber_delta, 0.0, float("inf"), open_low=True)

    def epsilon(self, frac: Array) -> Array:
        """Exploration rate at training progress ``frac`` in [0, 1]."""
        decay = jnp.clip(frac / self.exploration_fraction, 0.0, 1.0)
        return self.epsilon_start + (self.epsilon_end - self.epsilon_start) * decay

    def td_loss(self, q: Array, target: Array) -> Array:
        """Mean TD loss (``loss``) of predictions ``q`` against ``target``."""
        if self.loss == "squared":
            return jnp.mean(optax.l2_loss(q, target))
        return jnp.mean(optax.huber_loss(q, target, delta=self.huber_delta))


def q_network(hidden: tuple[int, ...], num_actions: int) -> MLP:
    """The Q-network: a ReLU MLP from flat observations to one value per action."""
    return MLP(hidden=hidden, out=num_actions, activation=nn.relu)


def masked_argmax(q: Array, mask: Array) -> Array:
    """``argmax`` over the last axis among the actions where ``mask`` is True (0 if none is)."""
    return jnp.argmax(jnp.where(mask, q, -jnp.inf), axis=-1)


@dataclass(frozen=True)
class DQNPolicy(NetworkPolicy):
    """The greedy policy ``argmax_a Q(normalised obs, a)``, hashable; ``params = {"q", "obs_stats"}``,
    leading observation axes kept, ``key`` unused."""

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
        """The greedy action(s) among those where ``mask`` (``(..., num_actions)``) is True."""
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
    """DQN's part of the off-policy loop (an ``offpolicy.OffPolicyAgent``)."""

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
        """One double-DQN step on ``config.td_loss``, then the target update; metrics ``q_loss``, ``q_mean``."""
        del key
        return self._td_update(state, batch, None)

    def update_masked(
        self, state: DQNState, batch: Transition, next_mask: Array, key: Array
    ) -> tuple[DQNState, dict[str, Array]]:
        """``update`` whose double-DQN argmax keeps to the actions valid in ``batch.next_obs``."""
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
            return config.td_loss(q, target), q

        params, opt_state, loss, q = gradient_update(config.optimizer(), loss_fn, state.params, state.opt_state)
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
    """The DQN agent for ``env``'s spaces, read from ``params`` (default ``env.default_params``).

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
    """The DQN agent for observations of ``obs_shape`` and ``num_actions`` discrete actions (for
    environments that are not a functional ``Environment``, e.g. the host loop's).

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

# ``load_policy(path) -> (policy, params)``: read a DQN policy written by ``save_policy``.
load_policy = DQNPolicy.load
