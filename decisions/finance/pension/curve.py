"""The zero curve: linear interpolation of key rates, Nelson-Siegel factor shocks, OU factors."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

ArrayLike = Array | np.ndarray | float


def nelson_siegel_loadings(tenors: ArrayLike, decay: ArrayLike) -> Array:
    """Nelson-Siegel loadings (level, slope, curvature) at ``tenors``.

    Args:
        tenors: ``(Q,)`` tenors in years (> 0).
        decay: decay ``lambda`` in years (> 0); ``x = tenor / lambda``.

    Returns:
        ``(Q, 3)``: ``[1, (1 - e^-x) / x, (1 - e^-x) / x - e^-x]``.
    """
    x = jnp.asarray(tenors) / decay
    ex = jnp.exp(-x)
    slope = -jnp.expm1(-x) / x
    return jnp.stack([jnp.ones_like(x), slope, slope - ex], axis=-1)


def zero_rates(query: ArrayLike, tenors: ArrayLike, key_rates: Array) -> Array:
    """Zero rates at ``query`` tenors: linear interpolation of the key rates, flat outside.

    Args:
        query: ``(Q,)`` tenors in years.
        tenors: ``(K,)`` increasing key tenors.
        key_rates: ``(K,)`` zero rates at the key tenors (continuous compounding).
    """
    key_rates = jnp.asarray(key_rates)
    return jnp.interp(jnp.asarray(query, key_rates.dtype), jnp.asarray(tenors, key_rates.dtype), key_rates)


def shocked_key_rates(tenors: ArrayLike, key_rates: Array, factors: Array, decay: ArrayLike) -> Array:
    """Key rates after the factor shock ``r + B f``.

    Args:
        tenors: ``(K,)`` key tenors.
        key_rates: ``(K,)`` initial key rates.
        factors: ``(..., 3)`` level, slope and curvature factors.
    """
    loadings = nelson_siegel_loadings(jnp.asarray(tenors, key_rates.dtype), decay)  # (K, 3)
    return key_rates + factors @ loadings.T


def discount_factors(times: ArrayLike, tenors: ArrayLike, key_rates: Array) -> Array:
    """Discount factors ``exp(-z(t) t)`` on the interpolated curve.

    Args:
        times: ``(Q,)`` payment times in years (>= 0).
        tenors: ``(K,)`` key tenors.
        key_rates: ``(K,)`` key rates.
    """
    t = jnp.asarray(times, key_rates.dtype)
    return jnp.exp(-zero_rates(t, tenors, key_rates) * t)


class Interpolation(NamedTuple):
    """Static linear-interpolation weights from K knots to Q query tenors (flat outside the knots)."""

    lo: np.ndarray  # (Q,) int index of the knot at or below the query
    hi: np.ndarray  # (Q,) int index of the knot above (equal to lo outside the knots)
    weight: np.ndarray  # (Q,) weight of ``hi``; ``1 - weight`` goes to ``lo``


def interpolation(query: np.ndarray, tenors: np.ndarray | tuple[float, ...]) -> Interpolation:
    """Interpolation weights for static (numpy) query tenors and knots.

    Args:
        query: ``(Q,)`` tenors.
        tenors: ``(K,)`` increasing knots.

    Returns:
        The ``Interpolation``; ``interpolate(weights, values)`` equals ``jnp.interp(query, tenors, values)``.
    """
    knots = np.asarray(tenors, dtype=float)
    q = np.clip(np.asarray(query, dtype=float), knots[0], knots[-1])
    hi = np.clip(np.searchsorted(knots, q, side="right"), 1, len(knots) - 1)
    lo = hi - 1
    weight = (q - knots[lo]) / (knots[hi] - knots[lo]) if len(knots) > 1 else np.zeros_like(q)
    if len(knots) == 1:
        lo = hi = np.zeros_like(lo)
    return Interpolation(lo=lo, hi=hi, weight=weight)


def interpolate(weights: Interpolation, values: Array) -> Array:
    """Apply static interpolation weights to knot values ``(K, ...)`` -> ``(Q, ...)``."""
    w = jnp.asarray(weights.weight, values.dtype).reshape((-1,) + (1,) * (values.ndim - 1))
    return values[weights.lo] * (1.0 - w) + values[weights.hi] * w


class AffineRates(NamedTuple):
    """Zero rates at fixed tenors as affine functions of the factors: ``z = base + load @ f``."""

    base: Array  # (Q,) rate at f = 0 (today's curve)
    load: Array  # (Q, 3) sensitivity of the rate to each factor

    def take(self, start: int, stop: int) -> AffineRates:
        """The maps of query tenors ``start .. stop - 1``."""
        return AffineRates(self.base[start:stop], self.load[start:stop])


def affine_rates(query: np.ndarray, tenors: np.ndarray | tuple[float, ...], key_rates: Array, decay: Array) -> AffineRates:
    """The affine map from factors to zero rates at static ``query`` tenors.

    Args:
        query: ``(Q,)`` tenors (static numpy: the interpolation weights are precomputed).
        tenors: ``(K,)`` key tenors (static).
        key_rates: ``(K,)`` key rates (traced).

    Returns:
        ``AffineRates(base (Q,), load (Q, 3))``.
    """
    weights = interpolation(query, tenors)
    knot_loadings = nelson_siegel_loadings(jnp.asarray(tenors, key_rates.dtype), decay)  # (K, 3)
    return AffineRates(base=interpolate(weights, key_rates), load=interpolate(weights, knot_loadings))


def ou_coefficients(speed: Array, volatility: Array, dt: float) -> tuple[Array, Array]:
    """Exact monthly transition of independent OU factors ``df = -speed f dt + vol dW``.

    Args:
        speed: ``(3,)`` mean-reversion speeds (per year, > 0).
        volatility: ``(3,)`` volatilities (per sqrt(year)).
    """
    decay = jnp.exp(-speed * dt)
    std = volatility * jnp.sqrt(-jnp.expm1(-2.0 * speed * dt) / (2.0 * speed))
    return decay, std


def zero_coupon_price(maturity: ArrayLike, tenors: ArrayLike, key_rates: Array) -> Array:
    """Price of a unit zero-coupon bond of ``maturity`` years on the curve of ``key_rates``."""
    return discount_factors(jnp.atleast_1d(jnp.asarray(maturity)), tenors, key_rates)[0]
