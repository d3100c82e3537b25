"""The actor-critic policy: its static description, observation encoding and action distributions.

Categorical heads for ``Discrete`` and (one per component) ``MultiDiscrete`` actions; a diagonal
Gaussian for ``Box`` actions, acting in a normalised space where ``[-1, 1]`` maps onto
``[low, high]``, clipped (not squashed) before the environment, the log-probability that of
the unclipped sample. Dimensions with an infinite bound pass unscaled.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core import nets
from decisions.core.agents.common import check_int, initial_stats
from decisions.core.agents.onpolicy.config import OnPolicyConfig
from decisions.core.agents.onpolicy.networks import ActorCritic, SetActorCritic
from decisions.core.agents.policy_file import PolicyDescription
from decisions.core.env import Environment
from decisions.core.spaces import Box, Discrete, MultiDiscrete

__all__ = ["ActorCriticPolicy"]

PyTree = Any


@dataclass(frozen=True)
class ActorCriticPolicy(PolicyDescription):
    """Static, hashable description of an actor-critic policy, callable as ``policy(params, obs, key)``
    on one observation or any leading axes; ``params = {"net", "obs_stats"}``.

    ``obs_categories`` is a ``Discrete`` observation's size (one-hot encoded), else 0;
    ``num_actions`` the width of the logits (0 for ``Box``); ``action_low``/``high`` a ``Box``'s
    flattened bounds; ``unit_width`` > 0 for set networks.
    """

    obs_shape: tuple[int, ...]
    obs_categories: int
    num_actions: int
    action_shape: tuple[int, ...]
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    action_dtype: str
    hidden: tuple[int, ...]
    activation: str
    log_std_init: float
    deterministic: bool = True
    action_nvec: tuple[int, ...] = ()
    unit_width: int = 0

    @classmethod
    def from_env(
        cls, env: Environment[Any, Any], env_params: Any, config: OnPolicyConfig
    ) -> ActorCriticPolicy:
        """Describe the policy for ``env``'s spaces (read from concrete params) and ``config``."""
        obs_space, action_space = env.observation_space(env_params), env.action_space(env_params)
        obs_categories = obs_space.n if isinstance(obs_space, Discrete) else 0
        nvec: tuple[int, ...] = ()
        if isinstance(action_space, Discrete):
            num_actions, low, high = action_space.n, (), ()
        elif isinstance(action_space, MultiDiscrete):
            nvec = action_space.nvec
            num_actions, low, high = sum(nvec), (), ()
        elif isinstance(action_space, Box):
            num_actions = 0
            low = tuple(
                float(v) for v in np.broadcast_to(np.asarray(action_space.low), action_space.shape).ravel()
            )
            high = tuple(
                float(v) for v in np.broadcast_to(np.asarray(action_space.high), action_space.shape).ravel()
            )
        else:
            raise TypeError(f"unsupported action space {action_space!r}")
        if config.unit_width:
            features = obs_categories or int(np.prod(obs_space.shape, dtype=int))
            if not nvec or len(set(nvec)) != 1:
                raise ValueError("unit_width: set networks need a MultiDiscrete action with equal components")
            if len(nvec) * config.unit_width > features:
                raise ValueError(
                    f"unit_width: {len(nvec)} units x {config.unit_width} exceed the {features} observation features"
                )
        return cls(
            obs_shape=tuple(obs_space.shape),
            obs_categories=obs_categories,
            num_actions=num_actions,
            action_shape=tuple(action_space.shape),
            action_low=low,
            action_high=high,
            action_dtype=np.dtype(action_space.dtype).name,
            hidden=tuple(config.hidden),
            activation=config.activation,
            log_std_init=float(config.log_std_init),
            action_nvec=nvec,
            unit_width=int(config.unit_width),
        )

    @classmethod
    def for_shapes(
        cls, config: OnPolicyConfig, *, obs_shape: tuple[int, ...], num_actions: int
    ) -> ActorCriticPolicy:
        """Describe a policy for float observations of ``obs_shape`` and ``num_actions`` discrete actions
        (as ``from_env`` would for such spaces), for environments that are not an ``Environment``.

        Raises:
            ValueError: ``num_actions`` is not a positive integer, or ``config.unit_width`` is set.
        """
        check_int("num_actions", num_actions, 1)
        if config.unit_width:
            raise ValueError("unit_width: set networks need a MultiDiscrete action, not a Discrete one")
        return cls(
            obs_shape=tuple(int(d) for d in obs_shape),
            obs_categories=0,
            num_actions=int(num_actions),
            action_shape=(),
            action_low=(),
            action_high=(),
            action_dtype="int32",
            hidden=tuple(config.hidden),
            activation=config.activation,
            log_std_init=float(config.log_std_init),
        )

    @property
    def discrete(self) -> bool:
        """Whether actions are categorical."""
        return self.num_actions > 0

    @property
    def features(self) -> int:
        """Width of the encoded observation fed to the networks."""
        return self.obs_categories or int(np.prod(self.obs_shape, dtype=int))

    @property
    def network(self) -> ActorCritic | SetActorCritic:
        """The flax module."""
        if self.unit_width:
            units = len(self.action_nvec)
            return SetActorCritic(self.hidden, self.activation, units, self.unit_width, self.action_nvec[0])
        dim = int(np.prod(self.action_shape, dtype=int))
        return ActorCritic(self.hidden, self.activation, self.num_actions, dim, self.log_std_init)

    def stochastic(self) -> ActorCriticPolicy:
        """The same policy sampling its actions instead of taking the greedy one."""
        return dataclasses.replace(self, deterministic=False)

    def init(self, key: Array, normalize_obs: bool = True) -> PyTree:
        """Fresh params: random network weights and empty (or identity) observation statistics."""
        net = self.network.init(key, jnp.zeros((self.features,), jnp.float32))
        return {"net": net, "obs_stats": initial_stats((self.features,), normalize_obs)}

    def encode(self, obs: Array) -> Array:
        """Observations ``(..., *obs_shape)`` as float features ``(..., features)``."""
        if self.obs_categories:
            return jax.nn.one_hot(obs, self.obs_categories, dtype=jnp.float32)
        lead = obs.shape[: obs.ndim - len(self.obs_shape)]
        return jnp.reshape(obs, (*lead, self.features)).astype(jnp.float32)

    def _components(self, logits: Array) -> list[Array]:
        """The logits of each ``MultiDiscrete`` component, split off the concatenated head."""
        bounds = np.cumsum(self.action_nvec)[:-1].tolist()
        return jnp.split(logits, bounds, axis=-1)

    def sample(self, dist: Any, key: Array) -> Array:
        """Draw raw actions (integers, or unclipped normalised Gaussian samples): ``sample_with`` on
        ``sample_noise``'s draw from ``key``."""
        batch_shape = (dist if self.discrete else dist[0]).shape[:-1]
        return self.sample_with(dist, self.sample_noise(key, batch_shape))

    def sample_noise(self, key: Array, batch_shape: tuple[int, ...]) -> Any:
        """The random draw ``sample`` makes from ``key`` for a batch of ``batch_shape`` decisions (Gumbel
        noise per logit, or standard normals), so that draws can be made ahead of time:
        ``sample_with(dist, sample_noise(key, batch_shape))`` equals ``sample(dist, key)`` bit for bit."""
        if self.action_nvec:
            keys = jax.random.split(key, len(self.action_nvec))
            return [jax.random.gumbel(k, (*batch_shape, n), jnp.float32)
                    for k, n in zip(keys, self.action_nvec, strict=True)]
        if self.discrete:
            return jax.random.gumbel(key, (*batch_shape, self.num_actions), jnp.float32)
        return jax.random.normal(key, (*batch_shape, int(np.prod(self.action_shape, dtype=int))), jnp.float32)

    def sample_with(self, dist: Any, noise: Any) -> Array:
        """Raw actions from ``dist`` and ``sample_noise``'s draw: the Gumbel-max of each categorical
        (``jax.random.categorical``'s own rule), or the Gaussian's mean plus its scaled noise."""
        if self.action_nvec:
            parts = [_gumbel_max(lg, g) for lg, g in zip(self._components(dist), noise, strict=True)]
            return jnp.stack(parts, axis=-1)
        if self.discrete:
            return _gumbel_max(dist, noise)
        mean, log_std = dist
        return mean + jnp.exp(log_std) * noise

    def mode(self, dist: Any) -> Array:
        """The most likely raw action (argmax per component, or the Gaussian mean)."""
        if self.action_nvec:
            return jnp.stack([jnp.argmax(lg, axis=-1) for lg in self._components(dist)], axis=-1).astype(jnp.int32)
        return jnp.argmax(dist, axis=-1).astype(jnp.int32) if self.discrete else dist[0]

    def log_prob(self, dist: Any, raw_action: Array) -> Array:
        """Log-probability of raw actions (summed over ``MultiDiscrete`` components)."""
        if self.action_nvec:
            parts = [
                nets.categorical_log_prob(lg, raw_action[..., i]) for i, lg in enumerate(self._components(dist))
            ]
            return sum(parts[1:], parts[0])
        if self.discrete:
            return nets.categorical_log_prob(dist, raw_action)
        return nets.gaussian_log_prob(*dist, raw_action)

    def entropy(self, dist: Any) -> Array:
        """Entropy of the action distribution (summed over components; normalised units for Gaussians)."""
        if self.action_nvec:
            parts = [nets.categorical_entropy(lg) for lg in self._components(dist)]
            return sum(parts[1:], parts[0])
        return nets.categorical_entropy(dist) if self.discrete else nets.gaussian_entropy(dist[1])

    def mask_logits(self, dist: Any, mask: Array) -> Array:
        """Logits with the invalid actions' (``mask`` False) set to the dtype's minimum, not ``-inf``, so
        ``log_prob`` and ``entropy`` stay finite with zero gradients there.

        Raises:
            ValueError: the policy is continuous (``Box`` actions have no mask).
        """
        if not self.discrete:
            raise ValueError("mask: action masks need discrete actions, this policy's are continuous")
        return jnp.where(mask, dist, jnp.finfo(dist.dtype).min)

    def to_env(self, raw_action: Array) -> Array:
        """Map raw actions to environment actions: the index, or the clipped and rescaled Gaussian draw."""
        if self.discrete:
            return raw_action.astype(self.action_dtype)
        low = np.asarray(self.action_low, np.float32)
        high = np.asarray(self.action_high, np.float32)
        finite = np.isfinite(low) & np.isfinite(high)
        low_f, high_f = np.where(finite, low, 0.0), np.where(finite, high, 0.0)
        mid = ((low_f + high_f) / 2).astype(np.float32)
        half = ((high_f - low_f) / 2).astype(np.float32)
        scaled = mid + jnp.clip(raw_action, -1.0, 1.0) * half
        action = jnp.where(finite, scaled, jnp.clip(raw_action, low, high))
        action = jnp.reshape(action, (*raw_action.shape[:-1], *self.action_shape))
        if np.issubdtype(np.dtype(self.action_dtype), np.integer):
            action = jnp.round(action)
        return action.astype(self.action_dtype)

    def __call__(self, params: PyTree, obs: Array, key: Array, mask: Array | None = None) -> Array:
        """Action for ``obs``: greedy if ``deterministic``, else sampled with ``key``.

        With ``mask`` (bool ``(..., num_actions)``, discrete policies) only among the valid actions.
        """
        x = params["obs_stats"].normalize(self.encode(obs))
        dist = self.network.apply(params["net"], x, method="actor")
        if mask is not None:
            dist = self.mask_logits(dist, mask)
        raw = self.mode(dist) if self.deterministic else self.sample(dist, key)
        return self.to_env(raw)

    def value(self, params: PyTree, obs: Array) -> Array:
        """The critic's value of ``obs`` (in learning units: rewards scaled and normalised)."""
        x = params["obs_stats"].normalize(self.encode(obs))
        return self.network.apply(params["net"], x, method="value")


def _gumbel_max(logits: Array, gumbel: Array) -> Array:
    """int32 ``argmax(gumbel + logits)`` over the last axis: a categorical draw from its Gumbel noise."""
    return jnp.argmax(gumbel + logits, axis=-1).astype(jnp.int32)
