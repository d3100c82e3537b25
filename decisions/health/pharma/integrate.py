"""Fixed-step classical Runge-Kutta (RK4) in ``lax.scan``: differentiable, compiled once per shape."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

Rhs = Callable[[Array, Array], Array]
"""``rhs(y, u) -> dy/dt`` with ``y`` the state ``(d,)`` and ``u`` the controls ``(m,)`` at that time."""


def rk4(rhs: Rhs, y0: Array, stage_controls: Array, dt: Array, *, unroll: int = 1) -> tuple[Array, Array]:
    """Integrate ``dy/dt = rhs(y, u(t))`` over ``n`` steps of length ``dt``.

    Args:
        y0: initial state ``(d,)``.
        stage_controls: ``(n, 3, ...)`` controls at each step's start, middle and end.
        dt: step length (scalar, may be traced: a time CPP divided by ``n``).
        unroll: scan unrolling (1 compiles fastest and, measured on CPU, also runs fastest here).

    Returns:
        ``(y_final, trajectory)`` with ``trajectory`` of shape ``(n + 1, d)`` including ``y0``.
    """
    half = 0.5 * dt

    def step(y: Array, u: Array) -> tuple[Array, Array]:
        k1 = rhs(y, u[0])
        k2 = rhs(y + half * k1, u[1])
        k3 = rhs(y + half * k2, u[1])
        k4 = rhs(y + dt * k3, u[2])
        y_next = y + (dt / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return y_next, y_next

    y_final, ys = jax.lax.scan(step, y0, stage_controls, unroll=unroll)
    return y_final, jnp.concatenate([y0[None], ys], axis=0)


def piecewise_constant_stages(values: Array, steps: int) -> Array:
    """Stage controls of a piecewise-constant profile with ``steps`` RK4 steps per segment.

    Args:
        values: segment values ``(S,)``.
    """
    per_step = jnp.repeat(values, steps)
    return jnp.stack([per_step, per_step, per_step], axis=-1)


def rk4_piecewise_constant(
    rhs: Rhs,
    y0: Array,
    profile: Array,
    duration: Array,
    steps: int,
    controls: Callable[[Array], Array],
) -> tuple[Array, Array, Array]:
    """Integrate over a piecewise-constant temperature profile held ``duration / S`` per segment.

    Args:
        y0: initial state ``(d,)``.
        profile: segment temperatures ``(S,)``.
        duration: total time (may be traced).
        controls: the controls (rate constants) at stage temperatures ``(n, 3) -> (n, 3, ...)``,
            evaluated once outside the loop.

    Returns:
        ``(y_final, trajectory, times)``: ``trajectory`` ``(n + 1, d)`` including ``y0`` at
        ``times`` ``(n + 1,)``, ``n = S * steps``.
    """
    n = profile.shape[0] * steps
    dt = duration / n
    final, trajectory = rk4(rhs, y0, controls(piecewise_constant_stages(profile, steps)), dt)
    return final, trajectory, dt * jnp.arange(n + 1)


def linear_interpolation_matrix(n_knots: int, fractions: np.ndarray) -> np.ndarray:
    """Static weights ``W`` with ``W @ knots`` the piecewise-linear profile at ``fractions``.

    Args:
        n_knots: knots at equally spaced fractions ``0, 1/(K-1), ..., 1`` of the duration.
        fractions: query points in ``[0, 1]``, any shape.

    Returns:
        ``fractions.shape + (n_knots,)`` weights (two non-zeros per row, summing to one).
    """
    x = np.clip(np.asarray(fractions, float), 0.0, 1.0) * (n_knots - 1)
    left = np.minimum(np.floor(x).astype(int), n_knots - 2)
    w_right = x - left
    eye = np.eye(n_knots)
    return eye[left] * (1.0 - w_right)[..., None] + eye[left + 1] * w_right[..., None]
