"""Composable, pure wrappers around ``Environment``; each is an ``Environment`` and forwards
unknown attributes to the wrapped one. The usual stack::

    env = VmapEnv(EpisodeStatistics(AutoResetEnv(base_env)), num_envs=64)
"""

from __future__ import annotations

from typing import Any, Generic

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey, TState
from decisions.core.spaces import Space

__all__ = ["AutoResetEnv", "EpisodeStatistics", "EpisodeStatisticsState", "VmapEnv", "Wrapper"]


class Wrapper(Environment[Any, Any]):
    """Base class of wrappers: delegates every member to the wrapped environment."""

    def __init__(self, env: Environment[Any, Any]) -> None:
        self.env = env

    def __getattr__(self, name: str) -> Any:
        """Forward attributes this wrapper lacks (e.g. static configuration) to the wrapped environment."""
        if name == "env":  # not yet set: avoid infinite recursion (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self.env, name)

    @property
    def default_params(self) -> Any:
        """The wrapped environment's default params."""
        return self.env.default_params

    def reset(self, key: PRNGKey, params: Any) -> tuple[Array, Any]:
        """Reset the wrapped environment (see ``Environment.reset``)."""
        return self.env.reset(key, params)

    def step(
        self, key: PRNGKey, state: Any, action: Array, params: Any
    ) -> tuple[Array, Any, Array, Array, Array, Info]:
        """Step the wrapped environment (see ``Environment.step``)."""
        return self.env.step(key, state, action, params)

    def observation_space(self, params: Any) -> Space:
        """The wrapped environment's observation space."""
        return self.env.observation_space(params)

    def action_space(self, params: Any) -> Space:
        """The wrapped environment's action space."""
        return self.env.action_space(params)

    @property
    def name(self) -> str:
        """The wrapped environment's name."""
        return self.env.name

    @property
    def unwrapped(self) -> Environment[Any, Any]:
        """The innermost environment."""
        return self.env.unwrapped


def _select(pred: Array, on_true: Any, on_false: Any) -> Any:
    """Leafwise ``where(pred, on_true, on_false)``, ``pred`` selecting along the leading axes of every leaf."""

    def select(a: Array, b: Array) -> Array:
        p = jnp.reshape(pred, jnp.shape(pred) + (1,) * (jnp.ndim(a) - jnp.ndim(pred)))
        return jnp.where(p, a, b)

    return jax.tree.map(select, on_true, on_false)


class AutoResetEnv(Wrapper):
    """Reset automatically when an episode ends.

    After ``terminated | truncated``, ``step`` returns the first observation and state of a new
    episode, with the finished transition's reward and flags; its real last observation is in
    ``info["final_obs"]`` (``obs`` on other steps). The wrapped ``step`` gets a key split from
    the one given, so its draws differ from the unwrapped environment's.
    """

    def step(
        self, key: PRNGKey, state: Any, action: Array, params: Any
    ) -> tuple[Array, Any, Array, Array, Array, Info]:
        """Step, and reset in the same call if the episode ended."""
        key_step, key_reset = jax.random.split(key)
        obs_step, state_step, reward, terminated, truncated, info = self.env.step(
            key_step, state, action, params
        )
        obs_reset, state_reset = self.env.reset(key_reset, params)
        done = terminated | truncated
        obs = _select(done, obs_reset, obs_step)
        state = _select(done, state_reset, state_step)
        return obs, state, reward, terminated, truncated, {**info, "final_obs": obs_step}


@struct.dataclass
class EpisodeStatisticsState(Generic[TState]):
    """State of ``EpisodeStatistics``: the wrapped state plus running and last-finished episode figures."""

    env_state: TState
    episode_return: Array  # () float32, return so far of the running episode
    episode_length: Array  # () int32, steps so far of the running episode
    returned_episode_return: Array  # () float32, return of the last finished episode (0 before any)
    returned_episode_length: Array  # () int32, length of the last finished episode (0 before any)


class EpisodeStatistics(Wrapper):
    """Track episode returns and lengths; place it outside ``AutoResetEnv``.

    ``info`` gains ``"returned_episode"`` (this step ended one), ``"returned_episode_return"``
    and ``"returned_episode_length"`` (of the last finished episode).
    """

    def reset(self, key: PRNGKey, params: Any) -> tuple[Array, EpisodeStatisticsState[Any]]:
        """Reset the wrapped environment and zero the statistics."""
        obs, env_state = self.env.reset(key, params)
        zero_f, zero_i = jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32)
        return obs, EpisodeStatisticsState(env_state, zero_f, zero_i, zero_f, zero_i)

    def step(
        self, key: PRNGKey, state: EpisodeStatisticsState[Any], action: Array, params: Any
    ) -> tuple[Array, EpisodeStatisticsState[Any], Array, Array, Array, Info]:
        """Step the wrapped environment and update the statistics."""
        obs, env_state, reward, terminated, truncated, info = self.env.step(
            key, state.env_state, action, params
        )
        done = terminated | truncated
        new_return = (state.episode_return + reward).astype(jnp.float32)
        new_length = state.episode_length + 1
        returned_return = jnp.where(done, new_return, state.returned_episode_return)
        returned_length = jnp.where(done, new_length, state.returned_episode_length)
        new_state = EpisodeStatisticsState(
            env_state=env_state,
            episode_return=jnp.where(done, 0.0, new_return).astype(jnp.float32),
            episode_length=jnp.where(done, 0, new_length).astype(jnp.int32),
            returned_episode_return=returned_return,
            returned_episode_length=returned_length,
        )
        info = {
            **info,
            "returned_episode": done,
            "returned_episode_return": returned_return,
            "returned_episode_length": returned_length,
        }
        return obs, new_state, reward, terminated, truncated, info


class VmapEnv(Wrapper):
    """A batch of ``num_envs`` independent copies of an environment.

    ``reset`` and ``step`` split one key per copy and vmap the wrapped environment (outputs gain
    a leading ``num_envs`` axis). Params are shared, or carry that axis with ``batched_params``.
    The spaces describe one copy.
    """

    def __init__(self, env: Environment[Any, Any], num_envs: int, *, batched_params: bool = False) -> None:
        if int(num_envs) != num_envs or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, got {num_envs!r}")
        super().__init__(env)
        self.num_envs = int(num_envs)
        self.batched_params = bool(batched_params)

    @property
    def _params_axis(self) -> int | None:
        return 0 if self.batched_params else None

    def _single(self, params: Any) -> Any:
        """Params of the first copy."""
        return jax.tree.map(lambda x: x[0], params) if self.batched_params else params

    @property
    def default_params(self) -> Any:
        """The wrapped default params, broadcast to ``(num_envs, ...)`` if ``batched_params``."""
        params = self.env.default_params
        if not self.batched_params:
            return params
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (self.num_envs, *jnp.shape(x))), params)

    def reset(self, key: PRNGKey, params: Any) -> tuple[Array, Any]:
        """Reset every copy with its own key."""
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self.env.reset, in_axes=(0, self._params_axis))(keys, params)

    def step(
        self, key: PRNGKey, state: Any, action: Array, params: Any
    ) -> tuple[Array, Any, Array, Array, Array, Info]:
        """Step every copy with its own key."""
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self.env.step, in_axes=(0, 0, 0, self._params_axis))(keys, state, action, params)

    def observation_space(self, params: Any) -> Space:
        """The observation space of one copy."""
        return self.env.observation_space(self._single(params))

    def action_space(self, params: Any) -> Space:
        """The action space of one copy."""
        return self.env.action_space(self._single(params))
