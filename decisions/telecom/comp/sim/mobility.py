"""Random waypoint mobility, as mobile-env's ``RandomWaypointMovement``.

Each user walks ``velocity`` metres a step in a straight line towards a waypoint drawn
uniformly over the area; when it is at most ``velocity`` away it lands on the waypoint.
mobile-env draws the next waypoint lazily at the following step; drawing it on arrival (as
here) gives the same trajectories in distribution. Initial positions are uniform.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

__all__ = ["random_points", "start_points", "waypoint_step"]


def random_points(key: Array, n: int, size: Array) -> Array:
    """``n`` points uniform over ``[0, width] x [0, height]``.

    Returns:
        ``(n, 2)`` points.
    """
    return jax.random.uniform(key, (n, 2)) * size


def start_points(key: Array, n: int, size: Array, home: Array, spread: Array) -> Array:
    """``n`` users' start points: uniform over ``[0, width] x [0, height]`` (``random_points``) where
    ``spread`` is negative, else uniform over the square of half-side ``spread`` about ``home``, kept
    inside the area (``spread`` 0: exactly at ``home``).

    Returns:
        ``(n, 2)`` points.
    """
    u = jax.random.uniform(key, (n, 2))
    near = jnp.clip(home + (2.0 * u - 1.0) * spread[:, None], 0.0, size)
    return jnp.where(spread[:, None] < 0.0, u * size, near)


def waypoint_step(
    key: Array, pos: Array, waypoint: Array, velocity: Array, size: Array
) -> tuple[Array, Array]:
    """Move every user one step towards its waypoint; users that arrive get a new waypoint.

    Returns:
        ``(pos, waypoint)`` after the step.
    """
    delta = waypoint - pos
    dist = jnp.sqrt(jnp.sum(delta * delta, axis=-1))
    arrive = dist <= velocity
    step = velocity / jnp.where(arrive, 1.0, dist)
    moved = jnp.where(arrive[:, None], waypoint, pos + step[:, None] * delta)
    fresh = random_points(key, pos.shape[0], size)
    return moved, jnp.where(arrive[:, None], fresh, waypoint)
