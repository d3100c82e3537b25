"""Flax linen building blocks for policies and value functions: ``MLP``, the ``CategoricalHead``
and ``GaussianHead`` policy heads, and pure sample, log-probability and entropy helpers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax import Array

__all__ = [
    "MLP",
    "CategoricalHead",
    "GaussianHead",
    "categorical_entropy",
    "categorical_log_prob",
    "categorical_sample",
    "gaussian_entropy",
    "gaussian_log_prob",
    "gaussian_sample",
]

Activation = Callable[[Array], Array]

_LOG_2PI = math.log(2.0 * math.pi)


class MLP(nn.Module):
    """A multilayer perceptron ``x -> act(W_k ... act(W_1 x)) -> W_out`` over any leading axes.

    Kernels are orthogonal with gain ``hidden_scale`` (hidden) and ``out_scale`` (output: ~0.01
    for policy logits, 1.0 for values); biases start at zero; ``hidden`` may be empty.
    """

    hidden: Sequence[int]
    out: int
    activation: Activation = nn.tanh
    final_activation: Activation | None = None
    hidden_scale: float = math.sqrt(2.0)
    out_scale: float = 1.0

    @nn.compact
    def __call__(self, x: Array) -> Array:
        """``(..., in_features) -> (..., out)``."""
        for width in self.hidden:
            x = nn.Dense(width, kernel_init=nn.initializers.orthogonal(self.hidden_scale))(x)
            x = self.activation(x)
        x = nn.Dense(self.out, kernel_init=nn.initializers.orthogonal(self.out_scale))(x)
        if self.final_activation is not None:
            x = self.final_activation(x)
        return x


class CategoricalHead(nn.Module):
    """Linear head giving ``num_actions`` logits (small ``kernel_scale``: a near-uniform initial policy)."""

    num_actions: int
    kernel_scale: float = 0.01

    @nn.compact
    def __call__(self, features: Array) -> Array:
        """``(..., F) -> (..., num_actions)`` logits."""
        return nn.Dense(self.num_actions, kernel_init=nn.initializers.orthogonal(self.kernel_scale))(features)


class GaussianHead(nn.Module):
    """Head giving the mean and log standard deviation of a diagonal Gaussian.

    The log-std is a learned parameter, or a second linear output with ``state_dependent_std``,
    clipped to ``[log_std_min, log_std_max]``.
    """

    action_dim: int
    kernel_scale: float = 0.01
    log_std_init: float = 0.0
    state_dependent_std: bool = False
    log_std_min: float = -20.0
    log_std_max: float = 2.0

    @nn.compact
    def __call__(self, features: Array) -> tuple[Array, Array]:
        """``(..., F) -> (mean, log_std)``, both ``(..., action_dim)``."""
        init = nn.initializers.orthogonal(self.kernel_scale)
        mean = nn.Dense(self.action_dim, kernel_init=init, name="mean")(features)
        if self.state_dependent_std:
            log_std = nn.Dense(
                self.action_dim,
                kernel_init=init,
                bias_init=nn.initializers.constant(self.log_std_init),
                name="log_std",
            )(features)
        else:
            log_std = self.param("log_std", nn.initializers.constant(self.log_std_init), (self.action_dim,))
            log_std = jnp.broadcast_to(log_std, mean.shape)
        return mean, jnp.clip(log_std, self.log_std_min, self.log_std_max)


def categorical_sample(key: Array, logits: Array) -> Array:
    """int32 actions ``(...)`` sampled from logits ``(..., n)``."""
    return jax.random.categorical(key, logits).astype(jnp.int32)


def categorical_log_prob(logits: Array, action: Array) -> Array:
    """Log probability ``(...)`` of integer ``action`` under ``softmax(logits)``."""
    log_p = jax.nn.log_softmax(logits)
    return jnp.take_along_axis(log_p, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def categorical_entropy(logits: Array) -> Array:
    """Entropy (nats) of ``softmax(logits)``, ``(...)``."""
    log_p = jax.nn.log_softmax(logits)
    return -jnp.sum(jnp.exp(log_p) * log_p, axis=-1)


def gaussian_sample(key: Array, mean: Array, log_std: Array) -> Array:
    """Samples ``(..., d)`` of a diagonal Gaussian (``log_std`` broadcasts with ``mean``)."""
    return mean + jnp.exp(log_std) * jax.random.normal(key, jnp.shape(mean), jnp.result_type(mean))


def gaussian_log_prob(mean: Array, log_std: Array, x: Array) -> Array:
    """Log density of ``x`` under a diagonal Gaussian, summed over the last axis."""
    z = (x - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * z**2 - log_std - 0.5 * _LOG_2PI, axis=-1)


def gaussian_entropy(log_std: Array) -> Array:
    """Entropy (nats) of a diagonal Gaussian, summed over the last axis."""
    return jnp.sum(log_std + 0.5 * (1.0 + _LOG_2PI), axis=-1)
