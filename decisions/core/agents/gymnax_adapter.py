"""Run a ``gymnax`` environment under the functional ``Environment`` contract: ``GymnaxEnv`` calls
gymnax's ``reset_env`` / ``step_env`` (no auto-reset), splits ``done`` into ``terminated`` and
``truncated`` for gymnax 0.0.x and 1.x, and converts spaces, rewards and observations. Needs
``gymnax`` (the ``peers`` extra); importing this module does not.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.spaces import Box, Discrete, Space

__all__ = ["GymnaxEnv", "NO_TIME_LIMIT"]

# ``max_steps_in_episode`` that lifts the time limit when gymnax 0.0.x is asked whether a state is terminal.
NO_TIME_LIMIT = 2**30


def _space(space: Any) -> Space:
    """The ``core.spaces`` equivalent of a gymnax ``Discrete`` or ``Box`` space.

    Raises:
        TypeError: another kind of gymnax space (``Dict``, ``Tuple``).
    """
    kind = type(space).__name__
    if kind == "Discrete":
        return Discrete(int(space.n), jnp.int32)
    if kind == "Box":
        shape = tuple(int(s) for s in space.shape)
        low = np.broadcast_to(np.asarray(space.low), shape)
        high = np.broadcast_to(np.asarray(space.high), shape)
        return Box(low=low, high=high, shape=shape, dtype=np.dtype(space.dtype))
    raise TypeError(f"unsupported gymnax space {space!r} (only Discrete and Box)")


class GymnaxEnv(Environment[Any, Any]):
    """A gymnax environment as a ``core.env.Environment`` (no auto-reset, terminated/truncated apart),
    with gymnax's state, params (default its own) and ``info``; hashable by identity."""

    def __init__(self, env: Any, params: Any = None) -> None:
        self.gymnax_env = env
        self._params = env.default_params if params is None else params
        self._new_api = hasattr(env, "is_truncated")
        self._obs_dtype = np.dtype(env.observation_space(self._params).dtype)

    @classmethod
    def make(cls, name: str, **params: Any) -> GymnaxEnv:
        """``GymnaxEnv`` of ``gymnax.make(name)`` with its default params (fields overridden by ``params``).

        Raises:
            ModuleNotFoundError: gymnax is not installed.
        """
        import gymnax

        env, env_params = gymnax.make(name)
        return cls(env, env_params.replace(**params) if params else env_params)

    @property
    def default_params(self) -> Any:
        """The gymnax params given at construction (gymnax's defaults unless overridden)."""
        return self._params

    @property
    def name(self) -> str:
        """gymnax's name of the environment, e.g. ``CartPole-v1``."""
        return str(self.gymnax_env.name)

    def reset(self, key: PRNGKey, params: Any) -> tuple[Array, Any]:
        """gymnax's ``reset_env``; the observation in the observation space's dtype."""
        obs, state = self.gymnax_env.reset_env(key, params)
        return jnp.asarray(obs, self._obs_dtype), state

    def step(self, key: PRNGKey, state: Any, action: Array, params: Any) -> tuple[Array, Any, Array, Array, Array, Info]:
        """gymnax's ``step_env`` (no auto-reset), ``done`` split into ``terminated`` and ``truncated``."""
        env = self.gymnax_env
        obs, state, reward, done, info = env.step_env(key, state, action, params)
        if self._new_api:
            terminated = jnp.asarray(done, bool)
            truncated = jnp.asarray(env.is_truncated(state, params), bool) & ~terminated
        else:
            done = jnp.asarray(done, bool)
            terminated = jnp.asarray(
                env.is_terminal(state, params.replace(max_steps_in_episode=NO_TIME_LIMIT)), bool
            ) & done
            truncated = done & ~terminated
        reward = jnp.asarray(reward, jnp.float32).reshape(())
        return jnp.asarray(obs, self._obs_dtype), state, reward, terminated.reshape(()), truncated.reshape(()), dict(info)

    def observation_space(self, params: Any) -> Space:
        """gymnax's observation space as a ``core.spaces`` space."""
        return _space(self.gymnax_env.observation_space(params))

    def action_space(self, params: Any) -> Space:
        """gymnax's action space as a ``core.spaces`` space."""
        return _space(self.gymnax_env.action_space(params))
