"""The functional environment contract (gymnax style)::

    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

``reset`` and ``step`` are pure: state and params are ``flax.struct`` dataclasses, randomness
comes only from ``key``, so both can be jitted, vmapped (over keys, states and params) and scanned.
"""

from __future__ import annotations

import abc
from typing import Any, Generic, TypeAlias, TypeVar

from jax import Array

from decisions.core.spaces import Box, Discrete, Space

__all__ = ["Box", "Discrete", "Environment", "Info", "PRNGKey", "Space", "StepResult", "TParams", "TState"]

# Type of an environment's state (a ``flax.struct`` dataclass).
TState = TypeVar("TState")
# Type of an environment's params (a ``flax.struct`` dataclass).
TParams = TypeVar("TParams")

# A JAX PRNG key (typed ``jax.random.key`` or raw ``jax.random.PRNGKey``).
PRNGKey: TypeAlias = Array

# Per-step diagnostics, informational only: keys and shapes fixed per environment (never
# state-dependent); wrappers add documented keys.
Info: TypeAlias = dict[str, Array]

# ``(obs, state, reward, terminated, truncated, info)`` returned by ``Environment.step``.
StepResult: TypeAlias = tuple[Array, Any, Array, Array, Array, Info]


class Environment(abc.ABC, Generic[TState, TParams]):
    """A pure, functional environment: ``reset`` and ``step`` with explicit key, state and params.

    Subclasses implement the five abstract members. Constructor arguments fix shapes; every
    constant a user may sweep is a field of ``params``. ``reward`` is a float32 scalar,
    ``terminated`` and ``truncated`` bool scalars. No side effects, no hidden state on ``self``.
    """

    @property
    @abc.abstractmethod
    def default_params(self) -> TParams:
        """The default (reference scenario) params of this environment."""

    @abc.abstractmethod
    def reset(self, key: PRNGKey, params: TParams) -> tuple[Array, TState]:
        """Start an episode: ``(obs, state)``."""

    @abc.abstractmethod
    def step(
        self, key: PRNGKey, state: TState, action: Array, params: TParams
    ) -> tuple[Array, TState, Array, Array, Array, Info]:
        """Advance by one decision: ``(obs, state, reward, terminated, truncated, info)``.

        ``terminated``: a terminal MDP state (do not bootstrap); ``truncated``: the episode was cut,
        e.g. by a time limit (do bootstrap). ``step`` does not reset on its own.
        """

    @abc.abstractmethod
    def observation_space(self, params: TParams) -> Space:
        """The space observations lie in, for concrete (not traced) params."""

    @abc.abstractmethod
    def action_space(self, params: TParams) -> Space:
        """The space of valid actions, for concrete (not traced) params."""

    @property
    def name(self) -> str:
        """A short human-readable name (the class name by default)."""
        return type(self).__name__

    @property
    def unwrapped(self) -> Environment[Any, Any]:
        """The innermost environment (itself for an unwrapped environment)."""
        return self
