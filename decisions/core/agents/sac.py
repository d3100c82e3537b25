"""Soft actor-critic for continuous (``Box``, finite bounds) actions, on the shared off-policy loop
(``offpolicy``): ``SACAgent`` supplies the update, ``sac_policy`` the networks and policy.

A tanh-squashed Gaussian actor scaled to the action bounds, twin Q critics with Polyak targets
(``r + discount * (min_i Q_target_i(s', u') - alpha * log pi(u'|s'))``) and a temperature tuned
towards ``target_entropy`` (or fixed). ``train`` returns the deterministic ``scale(tanh(mean))``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import Array

from decisions.core.agents.common import check_config, check_number
from decisions.core.agents.offpolicy import (
    OffPolicyConfig,
    gradient_update,
    polyak_update,
    save_policy,
    trainers,
)
from decisions.core.agents.replay import Transition
from decisions.core.agents.sac_policy import (
    KIND,
    SACPolicy,
    SquashedGaussianActor,
    critic_network,
    squashed_sample,
)
from decisions.core.env import Environment
from decisions.core.spaces import Box

__all__ = [
    "SACAgent",
    "SACConfig",
    "SACPolicy",
    "SACState",
    "SquashedGaussianActor",
    "critic_network",
    "load_policy",
    "make_agent",
    "save_policy",
    "squashed_sample",
    "train",
    "train_seeds",
]

PyTree = Any


@dataclass(frozen=True)
class SACConfig(OffPolicyConfig):
    """SAC settings (frozen, hashable: a jit static argument); the shared ones are in ``OffPolicyConfig``."""

    # Transitions per gradient update.
    batch_size: int = 256
    # Initial entropy temperature.
    initial_alpha: float = 0.1
    # Tune the temperature automatically towards ``target_entropy``.
    tune_alpha: bool = True
    # Entropy target in nats (default ``-action_dim``).
    target_entropy: float | None = None

    def __post_init__(self) -> None:
        """Validate every field; raise ``ValueError("field: problem")`` on the first bad one."""
        super().__post_init__()
        check_number("initial_alpha", self.initial_alpha, 0.0, math.inf, open_low=True)
        if not isinstance(self.tune_alpha, bool):
            raise ValueError(f"tune_alpha: must be a bool, got {self.tune_alpha!r}")
        if self.target_entropy is not None:
            check_number("target_entropy", self.target_entropy, -math.inf, math.inf)


class SACState(NamedTuple):
    """SAC training state (critic params carry a leading axis of 2: the twin critics)."""

    actor: PyTree
    critic: PyTree
    target_critic: PyTree
    log_alpha: Array
    actor_opt: optax.OptState
    critic_opt: optax.OptState
    alpha_opt: optax.OptState
    updates: Array  # () int32


@dataclass(frozen=True)
class SACAgent:
    """SAC's part of the off-policy loop (an ``offpolicy.OffPolicyAgent``)."""

    kind: ClassVar[str] = KIND

    config: SACConfig
    policy: SACPolicy

    def _q(self, params: PyTree, obs: Array, u: Array) -> Array:
        """Both critics' values, ``(2, batch)``."""
        x = jnp.concatenate([obs, u], axis=-1)
        return jax.vmap(lambda p: critic_network(self.config.hidden).apply(p, x)[..., 0])(params)

    def _sample(self, actor_params: PyTree, obs: Array, key: Array) -> tuple[Array, Array]:
        mean, log_std = self.policy.network.apply(actor_params, obs)
        return squashed_sample(mean, log_std, key)

    def init(self, key: Array, obs: Array) -> SACState:
        """Random actor and twin critics, target critics, temperature and fresh optimiser states."""
        actor_key, critic_key = jax.random.split(key)
        config = self.config
        actor = self.policy.network.init(actor_key, obs)
        x = jnp.concatenate([obs, jnp.zeros((self.policy.action_dim,), jnp.float32)])
        critic = jax.vmap(critic_network(config.hidden).init, in_axes=(0, None))(
            jax.random.split(critic_key, 2), x
        )
        log_alpha = jnp.asarray(math.log(config.initial_alpha), jnp.float32)
        optimizer = config.optimizer()
        return SACState(
            actor=actor,
            critic=critic,
            target_critic=critic,
            log_alpha=log_alpha,
            actor_opt=optimizer.init(actor),
            critic_opt=optimizer.init(critic),
            alpha_opt=optax.adam(config.learning_rate).init(log_alpha),
            updates=jnp.zeros((), jnp.int32),
        )

    def example_action(self) -> Array:
        """One squashed action (shape and dtype only)."""
        return jnp.zeros((self.policy.action_dim,), jnp.float32)

    def random_action(self, key: Array, num: int) -> Array:
        """``num`` squashed actions uniform in ``[-1, 1]^d``."""
        return jax.random.uniform(key, (num, self.policy.action_dim), jnp.float32, -1.0, 1.0)

    def explore(self, state: SACState, obs: Array, key: Array, frac: Array) -> Array:
        """Squashed samples of the current actor."""
        return self._sample(state.actor, obs, key)[0]

    def env_action(self, action: Array) -> Array:
        """Squashed actions scaled to the action bounds."""
        return self.policy.to_env(action)

    def _critic_step(self, state: SACState, batch: Transition, key: Array) -> tuple[SACState, Array, Array]:
        alpha = jnp.exp(state.log_alpha)
        next_u, next_logp = self._sample(state.actor, batch.next_obs, key)
        next_q = jnp.min(self._q(state.target_critic, batch.next_obs, next_u), axis=0)
        target = jax.lax.stop_gradient(batch.reward + batch.discount * (next_q - alpha * next_logp))

        def loss_fn(params: PyTree) -> tuple[Array, Array]:
            q = self._q(params, batch.obs, batch.action)
            return jnp.sum(jnp.mean(jnp.square(q - target), axis=-1)), q

        critic, critic_opt, loss, q = gradient_update(self.config.optimizer(), loss_fn, state.critic, state.critic_opt)
        return state._replace(critic=critic, critic_opt=critic_opt), loss, jnp.mean(q)

    def _actor_step(self, state: SACState, batch: Transition, key: Array) -> tuple[SACState, Array, Array]:
        alpha = jnp.exp(state.log_alpha)

        def loss_fn(params: PyTree) -> tuple[Array, Array]:
            u, logp = self._sample(params, batch.obs, key)
            q = jnp.min(self._q(state.critic, batch.obs, u), axis=0)
            return jnp.mean(alpha * logp - q), logp

        actor, actor_opt, loss, logp = gradient_update(self.config.optimizer(), loss_fn, state.actor, state.actor_opt)
        return state._replace(actor=actor, actor_opt=actor_opt), loss, logp

    def _alpha_step(self, state: SACState, logp: Array) -> SACState:
        if not self.config.tune_alpha:
            return state
        target_entropy = self.config.target_entropy
        if target_entropy is None:
            target_entropy = -float(self.policy.action_dim)
        gap = jax.lax.stop_gradient(logp + target_entropy)
        grad = -jnp.mean(gap)  # d/d log_alpha of mean(-log_alpha * (logp + target_entropy))
        updates, alpha_opt = optax.adam(self.config.learning_rate).update(grad, state.alpha_opt)
        return state._replace(log_alpha=optax.apply_updates(state.log_alpha, updates), alpha_opt=alpha_opt)

    def update(self, state: SACState, batch: Transition, key: Array) -> tuple[SACState, dict[str, Array]]:
        """Critic, actor and temperature steps, then the target update; their losses as metrics."""
        critic_key, actor_key = jax.random.split(key)
        state, q_loss, q_mean = self._critic_step(state, batch, critic_key)
        state, actor_loss, logp = self._actor_step(state, batch, actor_key)
        state = self._alpha_step(state, logp)
        count = state.updates + 1
        target = polyak_update(self.config, count, state.target_critic, state.critic)
        metrics = {
            "q_loss": q_loss,
            "q_mean": q_mean,
            "actor_loss": actor_loss,
            "alpha": jnp.exp(state.log_alpha),
            "entropy": -jnp.mean(logp),
        }
        return state._replace(target_critic=target, updates=count), metrics

    def schedule_metrics(self, state: SACState, frac: Array) -> dict[str, Array]:
        """None: SAC has no schedule."""
        return {}

    def policy_params(self, state: SACState) -> dict[str, PyTree]:
        """The actor."""
        return {"actor": state.actor}


def make_agent(env: Environment[Any, Any], config: SACConfig, params: PyTree | None = None) -> SACAgent:
    """The SAC agent for ``env``'s spaces, read from ``params`` (default ``env.default_params``).

    Raises:
        TypeError: ``config`` is not a ``SACConfig``.
        ValueError: the action space is not a bounded float ``Box``.
    """
    check_config(config, SACConfig)
    params = env.default_params if params is None else params
    space = env.action_space(params)
    if not isinstance(space, Box) or space.is_integer:
        raise ValueError(f"SAC needs a float Box action space, {env.name} has {space}")
    low = np.broadcast_to(np.asarray(space.low, np.float64), space.shape).ravel()
    high = np.broadcast_to(np.asarray(space.high, np.float64), space.shape).ravel()
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))):
        raise ValueError(f"SAC needs finite action bounds, {env.name} has low={low}, high={high}")
    policy = SACPolicy(
        obs_shape=tuple(env.observation_space(params).shape),
        action_shape=tuple(space.shape),
        action_low=tuple(float(v) for v in low),
        action_high=tuple(float(v) for v in high),
        hidden=config.hidden,
    )
    return SACAgent(config=config, policy=policy)


train, train_seeds = trainers(
    make_agent, SACConfig(), SACPolicy, metrics="``q_loss``, ``q_mean``, ``actor_loss``, ``alpha`` and ``entropy``"
)

# ``load_policy(path) -> (policy, params)``: read a SAC policy written by ``save_policy``.
load_policy = SACPolicy.load
