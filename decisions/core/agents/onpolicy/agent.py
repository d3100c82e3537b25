"""What an on-policy agent supplies to the shared loop (``OnPolicyAgent``), and the optimiser it gets.

An agent is a small frozen dataclass holding its config and its ``ActorCriticPolicy``; the
loop (``onpolicy.loop``) does the rest. The learning-rate schedule and the gradient clipping
are the same for every agent (``schedule``, ``optimizer``); the agent names the optimiser
under them (``base_optimizer``) and how many steps of it one iteration takes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Protocol, Self

import optax
from jax import Array

from decisions.core.agents.common import check_config
from decisions.core.agents.onpolicy.config import OnPolicyConfig
from decisions.core.agents.onpolicy.losses import Batch
from decisions.core.agents.onpolicy.policy import ActorCriticPolicy
from decisions.core.env import Environment

__all__ = ["ActorCriticAgent", "OnPolicyAgent", "optimizer", "schedule"]

PyTree = Any


class OnPolicyAgent(Protocol):
    """What an on-policy agent supplies to the shared loop (a hashable, frozen object).

    Attributes:
        kind: checkpoint tag and progress task name, e.g. ``"ppo"``.
        config: the agent's configuration (an ``OnPolicyConfig``).
        policy: the actor-critic policy being trained.
    """

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
        self,
        optimizer: optax.GradientTransformation,
        net: PyTree,
        opt_state: PyTree,
        batch: Batch,
        key: Array,
    ) -> tuple[PyTree, PyTree, dict[str, Array]]:
        """Improve the network on one rollout batch; return it, the optimiser state and scalar metrics."""
        ...


class ActorCriticAgent:
    """Base of the agents built from their config and an ``ActorCriticPolicy`` of the env's spaces.

    A subclass is a frozen dataclass ``(config, policy)`` implementing ``OnPolicyAgent``; its
    module's ``make_agent`` is its ``for_env``.

    Attributes:
        config_type: the agent's configuration class (``for_env`` refuses any other).
    """

    config_type: ClassVar[type[OnPolicyConfig]]

    @classmethod
    def for_env(cls, env: Environment[Any, Any], config: OnPolicyConfig, params: Any = None) -> Self:
        """The agent for ``env``'s spaces (read from concrete params).

        Args:
            env: an unwrapped environment.
            config: the agent's configuration (a ``config_type``).
            params: the environment's params (default ``env.default_params``).

        Returns:
            The agent, with its policy description.

        Raises:
            TypeError: ``config`` is not a ``config_type``.
        """
        check_config(config, cls.config_type)
        policy = ActorCriticPolicy.from_env(env, env.default_params if params is None else params, config)
        return cls(config, policy)  # type: ignore[call-arg]  # the subclass's dataclass fields

    @classmethod
    def for_shapes(cls, config: OnPolicyConfig, *, obs_shape: tuple[int, ...], num_actions: int) -> Self:
        """The agent for float observations of ``obs_shape`` and ``num_actions`` discrete actions.

        For host environments (``onpolicy.host_loop``): ``obs_shape=(envs.obs_dim,)``,
        ``num_actions=envs.num_actions``.

        Args:
            config: the agent's configuration (a ``config_type``).
            obs_shape: shape of one observation.
            num_actions: number of discrete actions (>= 1).

        Returns:
            The agent, with its policy description (``ActorCriticPolicy.for_shapes``).

        Raises:
            TypeError: ``config`` is not a ``config_type``.
            ValueError: ``num_actions`` is not a positive integer, or ``config.unit_width`` is set.
        """
        check_config(config, cls.config_type)
        policy = ActorCriticPolicy.for_shapes(config, obs_shape=obs_shape, num_actions=num_actions)
        return cls(config, policy)  # type: ignore[call-arg]  # the subclass's dataclass fields


def schedule(agent: OnPolicyAgent) -> optax.Schedule:
    """Learning rate as a function of the optimiser step count (``config.lr_schedule`` over all updates).

    Args:
        agent: the agent.

    Returns:
        The schedule, decaying to ``final_lr_fraction`` of the peak after the last update.
    """
    config = agent.config
    steps = config.iterations * agent.updates_per_iteration
    end = config.learning_rate * config.final_lr_fraction
    if config.lr_schedule == "linear":
        return optax.linear_schedule(config.learning_rate, end, steps)
    if config.lr_schedule == "cosine":
        return optax.cosine_decay_schedule(config.learning_rate, steps, alpha=config.final_lr_fraction)
    return optax.constant_schedule(config.learning_rate)


def optimizer(agent: OnPolicyAgent) -> optax.GradientTransformation:
    """Global-norm clipping followed by the agent's ``base_optimizer`` on ``schedule``.

    Args:
        agent: the agent.

    Returns:
        The optimiser the loop initialises and hands to ``agent.update``.
    """
    return optax.chain(
        optax.clip_by_global_norm(agent.config.max_grad_norm), agent.base_optimizer(schedule(agent))
    )
