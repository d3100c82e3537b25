"""Unit 1, the batch reactor: ``A -> P`` (main, ``k_main``) then ``P -> I`` (side, ``k_side``)."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from decisions.health.pharma.integrate import rk4_piecewise_constant
from decisions.health.pharma.params import ReactorConstants, arrhenius


class ReactorOutput(NamedTuple):
    """Reactor result; concentrations in mol/L."""

    final: Array  # (3,) A, P, I at the end
    trajectory: Array  # (n + 1, 3) A, P, I at each RK4 step boundary
    times: Array  # (n + 1,) h


def rates(temperature: Array, c: ReactorConstants) -> tuple[Array, Array]:
    """``(k_main, k_side)`` in 1/h at ``temperature`` (C)."""
    k1 = arrhenius(c.k_main, c.activation_main, temperature, c.reference_temperature)
    k2 = arrhenius(c.k_side, c.activation_side, temperature, c.reference_temperature)
    return k1, k2


def rhs(y: Array, k: Array) -> Array:
    """``d(A, P, I)/dt`` with rate constants ``k = (k_main, k_side)`` (1/h)."""
    main, side = k[0] * y[0], k[1] * y[1]
    return jnp.stack([-main, main - side, side])


def run(profile: Array, reaction_time: Array, c: ReactorConstants, steps: int) -> ReactorOutput:
    """Integrate the reactor over a piecewise-constant temperature profile.

    Args:
        profile: segment temperatures ``(S,)``, C, each held for ``reaction_time / S``.
    """
    y0 = jnp.stack([c.substrate, jnp.zeros_like(c.substrate), jnp.zeros_like(c.substrate)])
    final, traj, times = rk4_piecewise_constant(
        rhs, y0, profile, reaction_time, steps, lambda t: jnp.stack(rates(t, c), axis=-1)  # (n, 3, 2)
    )
    return ReactorOutput(final=final, trajectory=traj, times=times)


def isothermal(temperature: Array, t: Array, c: ReactorConstants) -> Array:
    """Closed-form ``(A, P, I)`` at times ``t`` for a constant temperature (``k_main != k_side``)."""
    k1, k2 = rates(temperature, c)
    a = c.substrate * jnp.exp(-k1 * t)
    p = c.substrate * k1 / (k2 - k1) * (jnp.exp(-k1 * t) - jnp.exp(-k2 * t))
    return jnp.stack([a, p, c.substrate - a - p], axis=-1)
