"""Composable, pure wrappers around ``Environment``.

Each wrapper is itself an ``Environment``, so they stack. The usual training
stack is::

    env = VmapEnv(EpisodeStatistics(AutoResetEnv(base_env)), num_envs=64)

- ``AutoResetEnv`` starts a new episode as soon as one ends, so a ``lax.scan``
  over time never has to branch on episode boundaries.
- ``EpisodeStatistics`` (outside ``AutoResetEnv``) reports the return and
  length of each finished episode.
- ``VmapEnv`` (outermost) runs a batch of independent environments.

All wrappers forward unknown attribute look-ups to the wrapped environment.
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
    """Base class of wrappers: delegates every member to the wrapped environment.

    Args:
        env: the environment to wrap.
    """

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
    """Leafwise ``where(pred, on_true, on_false)`` over two pytrees of the same structure.

    ``pred`` (shape ``B``) selects along the leading axes ``B`` of every leaf, so
    a batch of flags works on batched leaves of any rank.
    """

    def select(a: Array, b: Array) -> Array:
        p = jnp.reshape(pred, jnp.shape(pred) + (1,) * (jnp.ndim(a) - jnp.ndim(pred)))
        return jnp.where(p, a, b)

    return jax.tree.map(select, on_true, on_false)


class AutoResetEnv(Wrapper):
    """Reset automatically when an episode ends.

    When ``terminated | truncated``, ``step`` returns the first observation
    and state of a new episode (drawn with a fresh key) instead of the final
    ones, and passes the flags and reward of the finished transition through
    unchanged. The observation the finished transition really produced is in
    ``info["final_obs"]`` (use it to bootstrap a value on truncation); on other
    steps ``info["final_obs"]`` equals ``obs``.

    The state is the wrapped environment's state. Both branches are computed
    and selected with ``where`` so the wrapper stays jit/vmap/scan friendly;
    batched flags select per copy, so it also works outside a ``VmapEnv``
    (inside is cheaper: only the copies that ended are reset).
    Note the wrapped ``step`` receives a key split from the one given, so its
    draws differ from those of the unwrapped environment with the same key.

    Args:
        env: the environment to wrap.
    """

    def step(
        self, key: PRNGKey, state: Any, action: Array, params: Any
    ) -> tuple[Array, Any, Array, Array, Array, Info]:
        """Step, and reset in the same call if the episode ended.

        Args:
            key: PRNG key (split into a step key and a reset key).
            state: current state of the wrapped environment.
            action: action to take.
            params: environment params.

        Returns:
            ``(obs, state, reward, terminated, truncated, info)`` where ``obs``
            and ``state`` start a new episode if this step ended one, and
            ``info`` gains ``"final_obs"``.
        """
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
    """Track episode returns and lengths and report them in ``info``.

    ``info`` gains, at every step:

    - ``"returned_episode"``: bool, whether this step ended an episode;
    - ``"returned_episode_return"``: float32, return of the last finished
      episode (this one if ``returned_episode``);
    - ``"returned_episode_length"``: int32, its length in steps.

    The running figures restart after ``terminated | truncated``. Place it
    *outside* ``AutoResetEnv`` (``EpisodeStatistics(AutoResetEnv(env))``):
    inside, an auto-reset would also reset the statistics.

    Args:
        env: the environment to wrap.
    """

    def reset(self, key: PRNGKey, params: Any) -> tuple[Array, EpisodeStatisticsState[Any]]:
        """Reset the wrapped environment and zero the statistics.

        Args:
            key: PRNG key.
            params: environment params.

        Returns:
            ``(obs, state)`` with ``state`` an ``EpisodeStatisticsState``.
        """
        obs, env_state = self.env.reset(key, params)
        zero_f, zero_i = jnp.zeros((), jnp.float32), jnp.zeros((), jnp.int32)
        return obs, EpisodeStatisticsState(env_state, zero_f, zero_i, zero_f, zero_i)

    def step(
        self, key: PRNGKey, state: EpisodeStatisticsState[Any], action: Array, params: Any
    ) -> tuple[Array, EpisodeStatisticsState[Any], Array, Array, Array, Info]:
        """Step the wrapped environment and update the statistics.

        Args:
            key: PRNG key.
            state: an ``EpisodeStatisticsState``.
            action: action to take.
            params: environment params.

        Returns:
            ``(obs, state, reward, terminated, truncated, info)`` with the
            statistics keys added to ``info``.
        """
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

    ``reset`` and ``step`` take a single key, split it into one key per copy,
    and ``vmap`` the wrapped environment over keys, states and actions (every
    output gains a leading ``num_envs`` axis). Params are shared by all copies,
    or, with ``batched_params=True``, carry a leading ``num_envs`` axis (one
    scenario per copy: sweeps and domain randomisation).

    ``observation_space`` and ``action_space`` describe *one* copy (what a
    policy network sees), taking the first copy's params if batched.

    Args:
        env: the environment to batch.
        num_envs: number of copies (static, >= 1).
        batched_params: whether params carry a leading ``num_envs`` axis.
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
        """Reset every copy with its own key.

        Args:
            key: one PRNG key (split ``num_envs`` ways).
            params: shared or batched params.

        Returns:
            ``(obs, state)``, each with a leading ``num_envs`` axis.
        """
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self.env.reset, in_axes=(0, self._params_axis))(keys, params)

    def step(
        self, key: PRNGKey, state: Any, action: Array, params: Any
    ) -> tuple[Array, Any, Array, Array, Array, Info]:
        """Step every copy with its own key.

        Args:
            key: one PRNG key (split ``num_envs`` ways).
            state: batched state, leading axis ``num_envs``.
            action: batched actions, ``(num_envs, *action_shape)``.
            params: shared or batched params.

        Returns:
            ``(obs, state, reward, terminated, truncated, info)``, each with a
            leading ``num_envs`` axis.
        """
        keys = jax.random.split(key, self.num_envs)
        return jax.vmap(self.env.step, in_axes=(0, 0, 0, self._params_axis))(keys, state, action, params)

    def observation_space(self, params: Any) -> Space:
        """The observation space of one copy."""
        return self.env.observation_space(self._single(params))

    def action_space(self, params: Any) -> Space:
        """The action space of one copy."""
        return self.env.action_space(self._single(params))
