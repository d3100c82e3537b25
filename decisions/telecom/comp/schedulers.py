"""Cell schedulers: how each cell shares its resources among its connected users.

A scheduler maps connections ``conn`` and link capacities ``cap`` (bit/s with all of the
cell's resources, both ``(users, cells)``) to resource shares ``(users, cells)``: non-negative,
zero off the connections, summing to 1 over the users of each cell that serves anyone. A
user's rate is the sum over its links of share x capacity (CoMP: every serving cell
contributes), exactly as mobile-env's ``macro_datarates``.

- ``resource_fair`` (0): equal shares, mobile-env's ``ResourceFair`` (``rate / n``);
- ``rate_fair`` (1): shares inversely proportional to capacity, so the cell's users get
  equal rates ``1 / sum(1 / cap)`` (what mobile-env's ``RateFair`` computes before it fails
  by returning a scalar);
- ``proportional_fair`` (2): shares proportional to ``cap / avg_rate`` with ``avg_rate`` an
  exponential average of each user's past total rate (the classic PF metric);
- ``max_capacity`` (3): the whole cell to its connected user of highest capacity (lowest
  index on ties).

Under joint transmission (``NetworkParams.joint_transmission``) the same schedulers share each
cell, with every serving link's capacity set to the user's joint capacity, and ``joint_rates``
gives the user the smallest of its serving cells' shares of that one joint link.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from decisions.telecom.comp.catalog import SCHEDULERS  # names -> ids, light; re-exported here

__all__ = [
    "SCHEDULERS",
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
    """Equal shares among each cell's connected users (mobile-env's ``ResourceFair``).

    Args:
        conn: ``(users, cells)`` bool connections.
        cap: ``(users, cells)`` link capacities (unused; kept for a common signature).

    Returns:
        ``(users, cells)`` shares.
    """
    del cap
    return _normalise(conn.astype(jnp.float32))


def rate_fair(conn: Array, cap: Array) -> Array:
    """Shares ``(1 / cap) / sum(1 / cap)``: equal rates among each cell's users of positive capacity.

    Args:
        conn: ``(users, cells)`` bool connections.
        cap: ``(users, cells)`` link capacities.

    Returns:
        ``(users, cells)`` shares.
    """
    usable = conn & (cap > 0)
    return _normalise(jnp.where(usable, 1.0 / jnp.where(usable, cap, 1.0), 0.0))


def proportional_fair(conn: Array, cap: Array, avg_rate: Array) -> Array:
    """Shares proportional to the PF metric ``cap / avg_rate`` of each connected user.

    Args:
        conn: ``(users, cells)`` bool connections.
        cap: ``(users, cells)`` link capacities.
        avg_rate: ``(users,)`` exponentially averaged past rates (floored at 1 bit/s).

    Returns:
        ``(users, cells)`` shares.
    """
    metric = cap / jnp.maximum(avg_rate, 1.0)[:, None]
    return _normalise(jnp.where(conn & (cap > 0), metric, 0.0))


def max_capacity(conn: Array, cap: Array) -> Array:
    """All of each cell's resources to its connected user of highest capacity.

    Args:
        conn: ``(users, cells)`` bool connections.
        cap: ``(users, cells)`` link capacities.

    Returns:
        ``(users, cells)`` shares (one-hot per serving cell).
    """
    score = jnp.where(conn, cap, -1.0)
    best = jnp.argmax(score, axis=0)
    onehot = jax.nn.one_hot(best, conn.shape[0], axis=0, dtype=jnp.float32)
    return jnp.where(jnp.any(conn, axis=0, keepdims=True), onehot, 0.0)


def shares(scheduler: Array, conn: Array, cap: Array, avg_rate: Array) -> Array:
    """Shares under the scheduler of id ``scheduler`` (traced; ``lax.switch``).

    Args:
        scheduler: scalar int id of ``SCHEDULERS``.
        conn: ``(users, cells)`` bool connections.
        cap: ``(users, cells)`` link capacities.
        avg_rate: ``(users,)`` averaged past rates (proportional fair only).

    Returns:
        ``(users, cells)`` shares.
    """
    branches = [
        lambda c, r, a: resource_fair(c, r),
        lambda c, r, a: rate_fair(c, r),
        proportional_fair,
        lambda c, r, a: max_capacity(c, r),
    ]
    # A real branch for one network; under vmap over mixed schedulers every branch runs.
    return jax.lax.switch(jnp.clip(scheduler, 0, len(branches) - 1), branches, conn, cap, avg_rate)


def user_rates(share: Array, cap: Array) -> Array:
    """Each user's rate, the sum over its links of share x capacity (CoMP).

    Args:
        share: ``(users, cells)`` shares.
        cap: ``(users, cells)`` link capacities.

    Returns:
        ``(users,)`` rates in bit/s.
    """
    return jnp.sum(share * cap, axis=1)


def joint_rates(share: Array, conn: Array, joint_capacity: Array) -> Array:
    """Each user's rate under joint transmission: its resource share times its joint capacity.

    A joint transmission uses the same resources in every serving cell, so a user gets the
    smallest of its serving cells' shares (``share`` computed with every serving link's capacity
    set to the user's joint capacity); what the other cells granted beyond it is spent without
    use, the resource cost of a large serving set.

    Args:
        share: ``(users, cells)`` shares.
        conn: ``(users, cells)`` bool serving sets.
        joint_capacity: ``(users,)`` capacity in bit/s with all of a cell's resources.

    Returns:
        ``(users,)`` rates in bit/s (0 for a user served by no cell).
    """
    fraction = jnp.min(jnp.where(conn, share, jnp.inf), axis=1)
    return jnp.where(jnp.any(conn, axis=1), fraction * joint_capacity, 0.0)
