"""A2C: synchronous advantage actor-critic (Mnih et al., 2016).

Each iteration collects a short rollout from ``num_envs`` auto-resetting environments,
estimates advantages with GAE (bootstrapping on truncation, not on termination) and takes
*one* gradient step on the unclipped policy gradient plus value and entropy terms. The
optimiser is RMSprop (decay 0.99, eps 1e-5, as in the A3C paper and Stable-Baselines3) by
default, or Adam with ``optimizer_name="adam"``. This module supplies ``A2CAgent`` (an
``onpolicy.OnPolicyAgent``); everything but the update is shared with PPO (``onpolicy``)::

    result = a2c.train(env, A2CConfig(total_env_steps=200_000), key=jax.random.PRNGKey(0))
    action = result.policy(result.params, obs, key)   # deterministic (argmax / clipped mean)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import optax
from jax import Array

from decisions.core.agents.common import check_choice, check_number
from decisions.core.agents.onpolicy import ActorCriticAgent, Batch, OnPolicyConfig, gradient_step, trainers
from decisions.core.agents.onpolicy.io import load_policy, save_policy

__all__ = ["A2CAgent", "A2CConfig", "load_policy", "make_agent", "save_policy", "train", "train_seeds"]

PyTree = Any

# Optimisers ``A2CConfig.optimizer_name`` may name.
OPTIMIZERS = ("rmsprop", "adam")


@dataclass(frozen=True)
class A2CConfig(OnPolicyConfig):
    """A2C configuration (fields of ``OnPolicyConfig`` with A2C defaults, plus the ones below).

    Defaults: 32 environments x 16 steps per update, RMSprop 7e-4 decaying linearly,
    entropy bonus 0.01, gradient clip 0.5.
    """

    rollout_steps: int = 16
    learning_rate: float = 7e-4
    entropy_coef: float = 0.01
    # ``"rmsprop"`` (decay 0.99) or ``"adam"``.
    optimizer_name: str = "rmsprop"
    # Epsilon of the optimiser.
    optimizer_eps: float = 1e-5

    def __post_init__(self) -> None:
        """Check the shared fields, then A2C's own."""
        super().__post_init__()
        check_choice("optimizer_name", self.optimizer_name, OPTIMIZERS)
        check_number("optimizer_eps", self.optimizer_eps, 0.0, 1.0, open_low=True)


@dataclass(frozen=True)
class A2CAgent(ActorCriticAgent):
    """A2C's part of the on-policy loop (an ``onpolicy.OnPolicyAgent``): one gradient step per rollout
    (the base's ``updates_per_iteration``)."""

    kind: ClassVar[str] = "a2c"
    config_type: ClassVar[type[A2CConfig]] = A2CConfig

    config: A2CConfig

    def base_optimizer(self, learning_rate: optax.Schedule) -> optax.GradientTransformation:
        """RMSprop (decay 0.99) or Adam, per ``optimizer_name``."""
        if self.config.optimizer_name == "adam":
            return optax.adam(learning_rate, eps=self.config.optimizer_eps)
        return optax.rmsprop(learning_rate, decay=0.99, eps=self.config.optimizer_eps)

    def update(
        self, optimizer: optax.GradientTransformation, net: PyTree, opt_state: PyTree, batch: Batch, key: Array
    ) -> tuple[PyTree, PyTree, dict[str, Array]]:
        """One unclipped policy-gradient step on the whole rollout."""
        net, opt_state, metrics = gradient_step(
            net, opt_state, batch, policy=self.policy, optimizer=optimizer, config=self.config, clip_eps=None
        )
        metrics.pop("approx_kl")  # measured before the step: always 0 for A2C
        metrics.pop("clip_fraction")
        return net, opt_state, metrics


# ``make_agent(env, config, params=None)``: the ``A2CAgent`` for ``env``'s spaces (``ActorCriticAgent.for_env``).
make_agent = A2CAgent.for_env

train, train_seeds = trainers(A2CAgent, A2CConfig(), metrics="``policy_loss``, ``value_loss``, ``entropy``")
