"""From outcomes to the two objectives, and the two scalarisations that turn them into one number.

Outcomes per request are (success, hides, revenue); the objectives are engagement = success -
hide_cost * hides (primary) and revenue (secondary), both to maximise. A scalarisation parameter
``lam`` in [0, 1] weighs them after dividing each by its scale (its standard deviation in the
training logs), so lam = 0.5 means "one standard deviation of each is worth the same":

- linear: ``(1 - lam) e / s_e + lam r / s_r``. In a one-step problem the greedy policy of the
  linear scalarisation of a vector Q is exactly optimal for that utility; it reaches only the
  convex part of a front;
- Chebyshev (augmented): ``-max_k w_k (z_k - o_k) - rho * sum_k w_k (z_k - o_k)`` with ``w = (1 -
  lam, lam)`` and ``z`` the ideal point (per request: the best of each objective over the
  actions), which can also pick points in concave parts of a front.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.errors import InputError

CHEBYSHEV_RHO = 0.01
"""Weight of the augmentation term that keeps Chebyshev choices from being weakly dominated."""


class Scales(NamedTuple):
    """What one unit of each objective is worth before the scalarisation weighs them."""

    engagement: float
    revenue: float

    def array(self) -> Array:
        """``(2,)`` array of the scales."""
        return jnp.asarray([self.engagement, self.revenue], jnp.float32)


def check_lambda(lam: float | np.ndarray, field: str = "lambda") -> np.ndarray:
    """Refuse scalarisation values outside [0, 1] (or not finite) with a one-line ``InputError``."""
    values = np.atleast_1d(np.asarray(lam, dtype=np.float64))
    bad = ~np.isfinite(values) | (values < 0.0) | (values > 1.0)
    if bad.any():
        raise InputError(field, f"must lie in [0, 1], got {values[bad][0]!r}")
    return values


def objectives(outcomes: Array, hide_cost: float) -> Array:
    """(..., 3) outcomes (success, hides, revenue) -> (..., 2) objectives (engagement, revenue)."""
    return jnp.stack([outcomes[..., 0] - hide_cost * outcomes[..., 1], outcomes[..., 2]], axis=-1)


def scales_from_logs(rewards: np.ndarray, hide_cost: float) -> Scales:
    """Each objective's standard deviation over logged requests (a floor keeps it positive)."""
    obj = np.asarray(objectives(jnp.asarray(rewards), hide_cost))
    spread = np.maximum(obj.std(axis=0), 1e-6)
    return Scales(float(spread[0]), float(spread[1]))


def preference(lam: Array | float) -> Array:
    """The weights ``(1 - lam, lam)`` of the two objectives, shape (..., 2)."""
    lam = jnp.asarray(lam, jnp.float32)
    return jnp.stack([1.0 - lam, lam], axis=-1)


def linear(values: Array, lam: Array | float, scales: Array) -> Array:
    """Linear scalarisation of (..., 2) objective values: (...,)."""
    return jnp.sum(preference(lam) * values / scales, axis=-1)


def chebyshev(values: Array, lam: Array | float, scales: Array, ideal: Array) -> Array:
    """Augmented Chebyshev scalarisation (higher is better) of (..., 2) values against ``ideal``."""
    shortfall = preference(lam) * (ideal - values) / scales
    return -jnp.max(shortfall, axis=-1) - CHEBYSHEV_RHO * jnp.sum(shortfall, axis=-1)


def scalarise(values: Array, lam: Array | float, scales: Array, method: str) -> Array:
    """Scalarise (n, A, 2) action values for each request, the ideal point per request for Chebyshev."""
    if method == "linear":
        return linear(values, lam, scales)
    if method == "chebyshev":
        return chebyshev(values, lam, scales, jnp.max(values, axis=-2, keepdims=True))
    raise ValueError(f"unknown scalarisation {method!r}: use 'linear' or 'chebyshev'")
