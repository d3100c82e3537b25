"""What an on-policy agent supplies to the shared loop (``OnPolicyAgent``), and the optimiser every
agent gets (``schedule``, ``optimizer``) around its own ``base_optimizer``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self

import optax
from jax import Array

from decisions.core.agents.common import check_config, gradient_clip
from decisions.core.agents.onpolicy.config import OnPolicyConfig
from decisions.core.agents.onpolicy.losses import Batch
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy
from decisions.core.env import Environment

__all__ = ["ActorCriticAgent", "OnPolicyAgent", "optimizer", "schedule"]

PyTree = Any


class OnPolicyAgent(Protocol):
    """What an on-policy agent supplies to the shared loop (a hashable, frozen object); ``kind`` tags
    its checkpoints and progress."""

    kind: ClassVar[str]
    config: OnPolicyConfig
    policy: ActorCriticPolicy

    @property
    def updates_per_iteration(self) -> int:
        """Optimiser steps per iteration (sets the length of the learning-rate schedule)."""
        ...

    def base_optimizer(self, learning_rate: optax.Schedule) -> optax.GradientTransformation:
        """The agent's optimiser (applied after gradient clipping)."""
        ...

    def update(
        self, optimizer: optax.GradientTransformation, net: PyTree, opt_state: PyTree, batch: Batch, key: Array
    ) -> tuple[PyTree, PyTree, dict[str, Array]]:
        """Improve the network on one rollout batch; return it, the optimiser state and scalar metrics."""
        ...


@dataclass(frozen=True)
class ActorCriticAgent:
    """Base of the agents built from their ``config_type`` config and an ``ActorCriticPolicy``: a
    subclass is a frozen dataclass implementing ``OnPolicyAgent`` (it may narrow ``config``'s type)."""

    config_type: ClassVar[type[OnPolicyConfig]]

    config: OnPolicyConfig
    policy: ActorCriticPolicy

    @classmethod
    def for_env(cls, env: Environment[Any, Any], config: OnPolicyConfig, params: Any = None) -> Self:
        """The agent for ``env``'s spaces, read from ``params`` (default ``env.default_params``).

        Raises:
            TypeError: ``config`` is not a ``config_type``.
        """
        check_config(config, cls.config_type)
        policy = ActorCriticPolicy.from_env(env, env.default_params if params is None else params, config)
        return cls(config, policy)

    @classmethod
    def for_shapes(cls, config: OnPolicyConfig, *, obs_shape: tuple[int, ...], num_actions: int) -> Self:
        """The agent for float observations of ``obs_shape`` and ``num_actions`` discrete actions (host
        environments).

        Raises:
            TypeError: ``config`` is not a ``config_type``.
            ValueError: ``num_actions`` is not a positive integer, or ``config.unit_width`` is set.
        """
        check_config(config, cls.config_type)
        policy = ActorCriticPolicy.for_shapes(config, obs_shape=obs_shape, num_actions=num_actions)
        return cls(config, policy)

    @property
    def updates_per_iteration(self) -> int:
        """One gradient step per rollout unless the agent overrides it."""
        return 1


def schedule(agent: OnPolicyAgent) -> optax.Schedule:
    """Learning rate by optimiser step: ``config.lr_schedule`` over all updates, ending at
    ``final_lr_fraction`` of the peak."""
    config = agent.config
    steps = config.iterations * agent.updates_per_iteration
    end = config.learning_rate * config.final_lr_fraction
    if config.lr_schedule == "linear":
        return optax.linear_schedule(config.learning_rate, end, steps)
    if config.lr_schedule == "cosine":
        return optax.cosine_decay_schedule(config.learning_rate, steps, alpha=config.final_lr_fraction)
    return optax.constant_schedule(config.learning_rate)


def optimizer(agent: OnPolicyAgent) -> optax.GradientTransformation:
    """The config's gradient clip (``grad_clip``) followed by the agent's ``base_optimizer`` on ``schedule``."""
    config = agent.config
    return optax.chain(gradient_clip(config.grad_clip, config.max_grad_norm), agent.base_optimizer(schedule(agent)))
