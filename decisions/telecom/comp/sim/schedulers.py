"""Cell schedulers: how each cell shares its resources among its connected users.

A scheduler maps connections and link capacities ``(users, cells)`` to resource shares: non-negative,
zero off the connections, summing to 1 over each serving cell's users; a user's rate sums share x
capacity over its links (mobile-env's ``macro_datarates``). ``resource_fair`` (equal shares),
``rate_fair`` (equal rates), ``proportional_fair`` (``cap / avg_rate``) and ``max_capacity`` (the best
user takes the cell). Under joint transmission ``joint_rates`` gives a user the smallest of its serving
cells' shares of its one joint link.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

__all__ = [
    "max_capacity",
    "proportional_fair",
    "rate_fair",
    "resource_fair",
    "shares",
    "joint_rates",
    "user_rates",
]


def _normalise(weights: Array) -> Array:
    """Divide non-negative ``(users, cells)`` weights by their per-cell sum (0 where the sum is 0)."""
    total = jnp.sum(weights, axis=0, keepdims=True)
    return jnp.where(total > 0, weights / jnp.where(total > 0, total, 1.0), 0.0)


def resource_fair(conn: Array, cap: Array) -> Array:
    """``(users, cells)`` equal shares among each cell's connected users (mobile-env's ``ResourceFair``)."""
    del cap
    return _normalise(conn.astype(jnp.float32))


def rate_fair(conn: Array, cap: Array) -> Array:
    """``(users, cells)`` shares ``(1 / cap) / sum(1 / cap)``: equal rates among a cell's users."""
    usable = conn & (cap > 0)
    return _normalise(jnp.where(usable, 1.0 / jnp.where(usable, cap, 1.0), 0.0))


def proportional_fair(conn: Array, cap: Array, avg_rate: Array) -> Array:
    """``(users, cells)`` shares proportional to the PF metric ``cap / avg_rate``."""
    metric = cap / jnp.maximum(avg_rate, 1.0)[:, None]
    return _normalise(jnp.where(conn & (cap > 0), metric, 0.0))


def max_capacity(conn: Array, cap: Array) -> Array:
    """``(users, cells)`` one-hot shares: each cell to its connected user of highest capacity."""
    score = jnp.where(conn, cap, -1.0)
    best = jnp.argmax(score, axis=0)
    onehot = jax.nn.one_hot(best, conn.shape[0], axis=0, dtype=jnp.float32)
    return jnp.where(jnp.any(conn, axis=0, keepdims=True), onehot, 0.0)


def shares(scheduler: Array, conn: Array, cap: Array, avg_rate: Array) -> Array:
    """``(users, cells)`` shares under the scheduler of (traced) id ``scheduler``."""
    branches = [
        lambda c, r, a: resource_fair(c, r),
        lambda c, r, a: rate_fair(c, r),
        proportional_fair,
        lambda c, r, a: max_capacity(c, r),
    ]
    # A real branch for one network; under vmap over mixed schedulers every branch runs.
    return jax.lax.switch(jnp.clip(scheduler, 0, len(branches) - 1), branches, conn, cap, avg_rate)


def user_rates(share: Array, cap: Array) -> Array:
    """``(users,)`` rates in bit/s: the sum over each user's links of share x capacity."""
    return jnp.sum(share * cap, axis=1)


def joint_rates(share: Array, conn: Array, joint_capacity: Array) -> Array:
    """``(users,)`` joint-transmission rates in bit/s: the smallest of a user's serving cells' shares (each
    computed with the joint capacity) times that capacity; 0 for an unserved user."""
    fraction = jnp.min(jnp.where(conn, share, jnp.inf), axis=1)
    return jnp.where(jnp.any(conn, axis=1), fraction * joint_capacity, 0.0)
