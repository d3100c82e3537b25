"""Smooth surrogates of hard constraints: each tends to its hard counterpart as the temperature
``tau -> 0`` (in the units of the arguments) and is infinitely differentiable for ``tau > 0``;
all broadcast.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

ArrayLike = Array | float


def smooth_relu(x: ArrayLike, tau: ArrayLike) -> Array:
    """Softplus approximation of ``max(x, 0)``: ``tau * log(1 + exp(x / tau))``, above it by at
    most ``tau * log 2``."""
    return tau * jax.nn.softplus(x / tau)


def smooth_max(a: ArrayLike, b: ArrayLike, tau: ArrayLike) -> Array:
    """Log-sum-exp approximation of ``max(a, b)`` (an upper bound, error <= ``tau log 2``)."""
    return tau * jnp.logaddexp(a / tau, b / tau)


def smooth_min(a: ArrayLike, b: ArrayLike, tau: ArrayLike) -> Array:
    """Log-sum-exp approximation of ``min(a, b)`` (a lower bound, error <= ``tau log 2``)."""
    return -tau * jnp.logaddexp(-a / tau, -b / tau)


def smooth_clip(x: ArrayLike, lo: ArrayLike, hi: ArrayLike, tau: ArrayLike) -> Array:
    """Smooth, strictly monotone clip of ``x`` to ``[lo, hi]``: ``lo + sp(x - lo) - sp(x - hi)``.

    For ``lo <= hi`` the result stays inside ``[lo, hi]`` and is within ``tau * log 2`` of
    ``clip(x, lo, hi)``; in floating point monotone up to one rounding of ``max(|lo|, |hi|)``.
    """
    # Two exact rewritings of the same function (softplus(z) = z + softplus(-z)):
    # each branch adds only terms of order (hi - lo) at most, so there is no
    # cancellation of two O(|x|) softplus values, which in float32 broke
    # monotonicity and the bounds by a few ulps of |x| far outside [lo, hi].
    below = lo + smooth_relu(x - lo, tau) - smooth_relu(x - hi, tau)
    above = hi - smooth_relu(hi - x, tau) + smooth_relu(lo - x, tau)
    y = jnp.where(x <= 0.5 * (lo + hi), below, above)
    return jnp.clip(y, lo, hi)  # guards the bounds against the last ulp of rounding


def smooth_box(x: Array, lower: Array, upper: Array, tau: ArrayLike) -> Array:
    """Smooth projection of a vector onto the box ``[lower, upper]`` (elementwise ``smooth_clip``)."""
    return smooth_clip(x, lower, upper, tau)


def softplus_barrier(x: ArrayLike, limit: ArrayLike, tau: ArrayLike, *, upper: bool = True) -> Array:
    """Non-negative smooth penalty for violating ``x <= limit`` (``x >= limit`` with ``upper=False``),
    tending to the hinge as ``tau -> 0``."""
    excess = x - limit if upper else limit - x
    return smooth_relu(excess, tau)


def smooth_step(x: ArrayLike, tau: ArrayLike) -> Array:
    """Logistic approximation of the indicator ``1[x > 0]``."""
    return jax.nn.sigmoid(x / tau)


def smooth_abs(x: ArrayLike, tau: ArrayLike) -> Array:
    """``sqrt(x^2 + tau^2) - tau``: a smooth ``|x|`` that is exact at 0 and tends to ``|x|``."""
    return jnp.sqrt(jnp.square(x) + jnp.square(tau)) - tau


def hard_clip(x: ArrayLike, lo: ArrayLike, hi: ArrayLike, tau: ArrayLike | None = None) -> Array:
    """The hard clip with the same signature as ``smooth_clip`` (``tau`` ignored).

    Lets a simulator switch between its smooth (training) and hard
    (evaluation) rules by passing one function or the other.
    """
    del tau
    return jnp.clip(x, lo, hi)
