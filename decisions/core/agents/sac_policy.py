"""SAC's networks and its deterministic policy (``sac`` trains them).

- ``SquashedGaussianActor``: a tanh-squashed diagonal Gaussian (state-dependent log-std clipped
  to ``[-5, 2]``); ``squashed_sample`` draws from it with the tanh-corrected log-density.
- ``critic_network``: one Q critic on ``(normalised obs, u)``.
- ``SACPolicy``: the deterministic policy ``scale(tanh(mean))``, its squashed actions scaled
  affinely to the (finite) action bounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents.offpolicy import NetworkPolicy
from decisions.core.nets import MLP, GaussianHead, gaussian_log_prob

__all__ = ["KIND", "SACPolicy", "SquashedGaussianActor", "critic_network", "squashed_sample"]

PyTree = Any
# Tag of SAC's checkpoints and policy files.
KIND = "sac"
LOG_STD_MIN = -5.0
LOG_STD_MAX = 2.0
_LOG_2 = math.log(2.0)


class SquashedGaussianActor(nn.Module):
    """ReLU MLP trunk (at least one layer) and a state-dependent Gaussian head; actions are ``tanh`` of a sample."""

    hidden: Sequence[int]
    action_dim: int

    @nn.compact
    def __call__(self, obs: Array) -> tuple[Array, Array]:
        """``(mean, log_std)`` of the pre-tanh Gaussian, each ``(..., action_dim)``."""
        features = MLP(
            hidden=tuple(self.hidden[:-1]),
            out=self.hidden[-1],
            activation=nn.relu,
            final_activation=nn.relu,
            out_scale=math.sqrt(2.0),
        )(obs)
        head = GaussianHead(
            self.action_dim, state_dependent_std=True, log_std_min=LOG_STD_MIN, log_std_max=LOG_STD_MAX
        )
        return head(features)


def critic_network(hidden: tuple[int, ...]) -> MLP:
    """One Q critic: a ReLU MLP from ``concat(obs, u)`` to a value."""
    return MLP(hidden=hidden, out=1, activation=nn.relu)


def squashed_sample(mean: Array, log_std: Array, key: Array) -> tuple[Array, Array]:
    """Sample ``u = tanh(x)``, ``x ~ N(mean, exp(log_std))``, and its log-density (tanh-corrected).

    Returns:
        ``(u, log_prob)`` with shapes ``(..., d)`` and ``(...)``.
    """
    x = mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)
    # log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x)), stable for large |x|.
    log_det = jnp.sum(2.0 * (_LOG_2 - x - jax.nn.softplus(-2.0 * x)), axis=-1)
    return jnp.tanh(x), gaussian_log_prob(mean, log_std, x) - log_det


@dataclass(frozen=True)
class SACPolicy(NetworkPolicy):
    """The deterministic SAC policy ``scale(tanh(mean(normalised obs)))``, hashable; ``params =
    {"actor", "obs_stats"}``, leading observation axes kept, ``key`` unused."""

    kind: ClassVar[str] = KIND
    params_key: ClassVar[str] = "actor"

    obs_shape: tuple[int, ...]
    action_shape: tuple[int, ...]
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    hidden: tuple[int, ...]

    @property
    def action_dim(self) -> int:
        """Dimension of the flattened action."""
        return len(self.action_low)

    @property
    def network(self) -> SquashedGaussianActor:
        """The actor module (its weights are the params' ``"actor"``)."""
        return SquashedGaussianActor(self.hidden, self.action_dim)

    def to_env(self, u: Array) -> Array:
        """Squashed actions ``(..., action_dim)`` in ``[-1, 1]`` to env actions ``(..., *action_shape)``."""
        low = jnp.asarray(self.action_low, jnp.float32)
        high = jnp.asarray(self.action_high, jnp.float32)
        action = jnp.clip(low + 0.5 * (u + 1.0) * (high - low), low, high)
        return action.reshape((*u.shape[:-1], *self.action_shape))

    def __call__(self, params: PyTree, obs: Array, key: Array) -> Array:
        """The mean action(s), inside the action bounds."""
        del key
        mean, _ = self.network.apply(params["actor"], self.features(params, obs))
        return self.to_env(jnp.tanh(mean))

