"""Expose a functional ``Environment`` as a stateful ``gymnasium.Env`` for gymnasium tools; training
in this project uses the functional environment directly.
"""

from __future__ import annotations

import functools
from typing import Any, SupportsFloat

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from gymnasium.envs.registration import EnvSpec

from decisions.core.env import Environment
from decisions.core.spaces import Discrete

__all__ = ["GymnasiumEnv"]


def _to_numpy(x: Any) -> Any:
    """A writable numpy copy of every array leaf of ``x``."""
    return jax.tree.map(lambda leaf: np.array(leaf), x)


class GymnasiumEnv(gymnasium.Env):
    """A ``gymnasium.Env`` view of a functional ``Environment`` (not ``VmapEnv`` or ``AutoResetEnv``).

    Outputs are numpy arrays and Python scalars; no auto-reset. A JAX key seeded with ``seed``
    (or ``reset(seed=...)``) is split at every call, so a seeded episode reproduces.

    Raises:
        ValueError: if ``render_mode`` is not ``None``.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(
        self,
        env: Environment[Any, Any],
        params: Any = None,
        seed: int = 0,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None:
            raise ValueError(
                f"GymnasiumEnv implements no rendering; render_mode must be None, got {render_mode!r}"
            )
        self.env = env
        self.params = env.default_params if params is None else params
        self.render_mode = None
        self._space = env.observation_space(self.params)
        self._action_space = env.action_space(self.params)
        self.observation_space = self._space.to_gymnasium()
        self.action_space = self._action_space.to_gymnasium()
        self._key = jax.random.key(seed)
        self._state: Any = None
        self._reset_fn = jax.jit(env.reset)
        self._step_fn = jax.jit(env.step)
        # A spec lets check_env (and gymnasium.make) rebuild the environment.
        self.spec = EnvSpec(
            id=f"decisions/{env.name}-v0",
            entry_point=functools.partial(GymnasiumEnv, env, params),
            kwargs={"seed": seed},
            nondeterministic=False,
            disable_env_checker=True,
        )

    def _next_key(self) -> jax.Array:
        self._key, sub = jax.random.split(self._key)
        return sub

    def _obs(self, obs: jax.Array) -> Any:
        """Convert an observation to the declared numpy dtype."""
        if isinstance(self._space, Discrete):
            return np.int64(obs)
        return np.array(obs, dtype=self.observation_space.dtype)

    def _valid_action(self, action: np.ndarray) -> bool:
        """Whether ``action`` (before any cast) has the right shape and lies in the action space."""
        space = self.action_space
        if action.shape != space.shape or not np.issubdtype(action.dtype, np.number):
            return False
        if np.issubdtype(space.dtype, np.integer) and not np.all(action == np.round(action)):
            return False
        if isinstance(space, gymnasium.spaces.Discrete):
            return bool(0 <= action < space.n)
        return bool(np.all(action >= space.low) and np.all(action <= space.high))

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start a new episode, re-seeding with ``seed`` if given: ``(obs, {})``."""
        super().reset(seed=seed)
        if seed is not None:
            self._key = jax.random.key(seed)
        obs, self._state = self._reset_fn(self._next_key(), self.params)
        return self._obs(obs), {}

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Take one action: ``(obs, reward, terminated, truncated, info)``.

        Raises:
            RuntimeError: if called before ``reset``.
            ValueError: if ``action`` is not in ``action_space``.
        """
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if not self._valid_action(np.asarray(action)):
            raise ValueError(f"action {action!r} is not in the action space {self.action_space}")
        jax_action = jnp.asarray(action, dtype=self._action_space.dtype)
        obs, self._state, reward, terminated, truncated, info = self._step_fn(
            self._next_key(), self._state, jax_action, self.params
        )
        return self._obs(obs), float(reward), bool(terminated), bool(truncated), _to_numpy(info)
