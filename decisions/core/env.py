"""The functional environment contract (gymnax style).

An environment is a stateless object holding only *static* configuration
(shapes, sizes, horizons that fix array shapes). Everything that changes over
an episode lives in an explicit ``state`` and every number a user may sweep or
randomise (prices, rates, probabilities, costs) lives in ``params``; both are
frozen ``flax.struct`` dataclasses. Randomness comes only from the ``key``
argument. So ``reset`` and ``step`` are pure functions that can be ``jit``-ed,
``vmap``-ed over keys, states *and* params (scenario sweeps, domain
randomisation) and scanned over time::

    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

``terminated`` (the MDP reached a terminal state: do not bootstrap) and
``truncated`` (the episode was cut, e.g. by a time limit: do bootstrap) are kept
separate. ``step`` does not reset on its own; wrap the environment in
``decisions.core.wrappers.AutoResetEnv`` for that.
"""

from __future__ import annotations

import abc
from typing import Any, Generic, TypeAlias, TypeVar

from jax import Array

from decisions.core.spaces import Box, Discrete, Space

__all__ = ["Box", "Discrete", "Environment", "Info", "PRNGKey", "Space", "StepResult", "TParams", "TState"]

TState = TypeVar("TState")
"""Type of an environment's state (a ``flax.struct`` dataclass)."""
TParams = TypeVar("TParams")
"""Type of an environment's params (a ``flax.struct`` dataclass)."""

PRNGKey: TypeAlias = Array
"""A JAX PRNG key (typed ``jax.random.key`` or raw ``jax.random.PRNGKey``)."""

Info: TypeAlias = dict[str, Array]
"""Per-step diagnostics: a dict of arrays with a fixed structure for a given environment.

``info`` is informational, not a contract: agents and evaluators must not need
any key in it to work. Wrappers add documented keys (``final_obs``,
``returned_episode_return``, ...). Its keys and shapes must not depend on the
state, so that ``step`` stays jit-able and scannable.
"""

StepResult: TypeAlias = tuple[Array, Any, Array, Array, Array, Info]
"""``(obs, state, reward, terminated, truncated, info)`` returned by ``Environment.step``."""


class Environment(abc.ABC, Generic[TState, TParams]):
    """A pure, functional environment: ``reset`` and ``step`` with explicit key, state and params.

    Subclasses implement the five abstract members. Conventions:

    - Constructor arguments are static configuration that fixes shapes;
      physical and economic constants are (traced) fields of ``params``, so
      ``jax.vmap`` over a batch of params works.
    - ``obs`` is an array of the shape and dtype of ``observation_space``;
      ``reward`` is a float32 scalar; ``terminated`` and ``truncated`` are
      bool scalars; ``info`` is a dict of arrays (see ``Info``).
    - No Python control flow on traced values, no side effects, no hidden
      state on ``self``.
    """

    @property
    @abc.abstractmethod
    def default_params(self) -> TParams:
        """The default (reference scenario) params of this environment."""

    @abc.abstractmethod
    def reset(self, key: PRNGKey, params: TParams) -> tuple[Array, TState]:
        """Start an episode.

        Args:
            key: PRNG key for the initial-state distribution.
            params: environment params.

        Returns:
            ``(obs, state)``: the first observation and the initial state.
        """

    @abc.abstractmethod
    def step(
        self, key: PRNGKey, state: TState, action: Array, params: TParams
    ) -> tuple[Array, TState, Array, Array, Array, Info]:
        """Advance the environment by one decision.

        Args:
            key: PRNG key for this transition's randomness.
            state: current state.
            action: an element of ``action_space(params)``.
            params: environment params.

        Returns:
            ``(obs, state, reward, terminated, truncated, info)``: next
            observation and state, the float32 reward of this transition, the
            bool ``terminated`` (terminal MDP state) and ``truncated`` (episode
            cut, e.g. a time limit) flags, and an informational dict of arrays.
        """

    @abc.abstractmethod
    def observation_space(self, params: TParams) -> Space:
        """The space observations lie in.

        Args:
            params: environment params (concrete, not traced).

        Returns:
            A ``Box`` or ``Discrete`` space.
        """

    @abc.abstractmethod
    def action_space(self, params: TParams) -> Space:
        """The space of valid actions.

        Args:
            params: environment params (concrete, not traced).

        Returns:
            A ``Box`` or ``Discrete`` space.
        """

    @property
    def name(self) -> str:
        """A short human-readable name (the class name by default)."""
        return type(self).__name__

    @property
    def unwrapped(self) -> Environment[Any, Any]:
        """The innermost environment (itself for an unwrapped environment)."""
        return self
