"""Quality of experience: mobile-env's bounded log utility, QoE in [0, 1], Jain's index and rate figures."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import Array

__all__ = ["EDGE_PERCENTILE", "RATE_COLUMNS", "RATE_FLOOR_MBPS", "bounded_log_utility", "jain_index", "qoe",
           "rate_figures", "scale_utility"]

EDGE_PERCENTILE = 5.0
"""The cell-edge rate's percentile of the users' mean rates."""

RATE_FLOOR_MBPS = 1.0
"""The rate floor of ``below_floor`` unless another is given (Mbit/s)."""

RATE_COLUMNS = ("mean_rate_mbps", "edge_rate_mbps", "below_floor")
"""``rate_figures``' names, in order."""


def bounded_log_utility(rate: Array, bounds: Array, coeffs: Array) -> Array:
    """mobile-env's raw ``BoundedLogUtility.utility`` of each rate.

    Returns:
        Utilities in ``[lower, upper]`` (``lower`` where ``rate <= 0``).
    """
    lower, upper = bounds[0], bounds[1]
    w1, w2, w3 = coeffs[0], coeffs[1], coeffs[2]
    positive = rate > 0
    arg = jnp.where(positive, w2 + rate, 1.0)
    util = jnp.clip(w1 * jnp.log(arg) / jnp.log(w3), lower, upper)
    return jnp.where(positive, util, lower)


def scale_utility(util: Array, bounds: Array) -> Array:
    """mobile-env's ``BoundedLogUtility.scale``: raw utility to ``[-1, 1]``.

    Returns:
        ``2 (util - lower) / (upper - lower) - 1``.
    """
    return 2.0 * (util - bounds[0]) / (bounds[1] - bounds[0]) - 1.0


def qoe(rate: Array, bounds: Array, coeffs: Array) -> Array:
    """QoE in ``[0, 1]``: the bounded log utility of ``rate`` normalised by its bounds.

    Returns:
        ``(util - lower) / (upper - lower)``.
    """
    util = bounded_log_utility(rate, bounds, coeffs)
    return (util - bounds[0]) / (bounds[1] - bounds[0])


def jain_index(x: Array, mask: Array | None = None) -> Array:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` over the entries of ``mask``.

    It is 1 when all (masked-in) entries are equal, ``1 / n`` when one entry holds all;
    defined as 1 when all entries are zero.

    Returns:
        The index over the last axis.
    """
    mask = jnp.ones(x.shape, bool) if mask is None else mask
    x = jnp.where(mask, x, 0.0)
    n = jnp.sum(mask, axis=-1)
    s1 = jnp.sum(x, axis=-1)
    s2 = jnp.sum(x * x, axis=-1)
    denom = n * s2
    return jnp.where(denom > 0, s1 * s1 / jnp.where(denom > 0, denom, 1.0), 1.0)


def rate_figures(user_rate: np.ndarray, user_mask: np.ndarray, floor_mbps: float = RATE_FLOOR_MBPS) -> dict[str, float]:
    """The operators' rate figures of a policy's episodes.

    Returns:
        ``mean_rate_mbps`` (mean over real users and steps), ``edge_rate_mbps`` (the
        ``EDGE_PERCENTILE``-th percentile, pooled over episodes, of each user's mean rate over its
        episode) and ``below_floor`` (the share of user-steps below ``floor_mbps``).
    """
    rates = np.asarray(user_rate, np.float64)[:, :, np.asarray(user_mask, bool)] / 1e6
    values = (rates.mean(), np.percentile(rates.mean(axis=1).ravel(), EDGE_PERCENTILE), np.mean(rates < floor_mbps))
    return {name: float(v) for name, v in zip(RATE_COLUMNS, values, strict=True)}
