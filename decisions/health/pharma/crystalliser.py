"""Unit 2, the seeded cooling crystalliser, by the method of moments."""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.smooth import smooth_relu
from decisions.health.pharma.integrate import linear_interpolation_matrix, rk4
from decisions.health.pharma.params import (
    GAS_CONSTANT,
    KELVIN,
    CrystalliserConstants,
    arrhenius,
    stack_fractions,
)

COUNT_SCALE = 1.0e6
"""Moments are stored per million crystals (keeps float32 well inside range)."""

SUPERSATURATION_WIDTH = 1.0e-3
"""Width of the softplus that replaces ``max(s, 0)`` in the growth and nucleation laws."""

C_P, C_A, C_I, M0, M1, M2, M3, S_A, S_I = range(9)
"""State indices."""


class CrystalliserOutput(NamedTuple):
    """Crystalliser result."""

    final: Array  # (9,) state at the end
    trajectory: Array  # (n + 1, 9)
    temperature: Array  # (n + 1,) C at each step boundary
    times: Array  # (n + 1,) h
    crystal_mass: Array  # () g/L of P in crystals (seeds included)
    d50: Array  # () um, mass-weighted median


def solubility(temperature: Array, c: CrystalliserConstants) -> Array:
    """Solubility of P (g/L) at ``temperature`` (C), van 't Hoff."""
    inv = 1.0 / (temperature + KELVIN) - 1.0 / (c.reference_temperature + KELVIN)
    return c.solubility * jnp.exp(-c.dissolution_enthalpy / GAS_CONSTANT * inv)


def mass_per_moment(c: CrystalliserConstants) -> Array:
    """Crystal mass (g) per unit of ``m3`` (1e6 um^3): ``rho k_v`` in g/um^3 times ``COUNT_SCALE``."""
    return c.crystal_density * 1e-12 * c.shape_factor * COUNT_SCALE


def supersaturation(y: Array, temperature: Array, c: CrystalliserConstants) -> Array:
    """Relative supersaturation ``(c_P - c*) / c*`` of a state (any leading axes)."""
    sat = solubility(temperature, c)
    return (y[..., C_P] - sat) / sat


def controls(temperature: Array, c: CrystalliserConstants) -> Array:
    """``(solubility, growth constant)`` at ``temperature``: what the profile sets, stacked on a last axis."""
    k_g = arrhenius(c.growth_rate, c.growth_activation, temperature, c.reference_temperature)
    return jnp.stack([solubility(temperature, c), k_g], axis=-1)


def rhs(y: Array, u: Array, c: CrystalliserConstants) -> Array:
    """Time derivative of the crystalliser state; ``u = controls(T)`` (solubility g/L, k_g um/h)."""
    s = smooth_relu((y[C_P] - u[0]) / u[0], SUPERSATURATION_WIDTH)
    log_s = jnp.log(jnp.maximum(s, 1e-30))  # the floor keeps log and its gradient finite far below saturation
    growth = u[1] * jnp.exp(c.growth_order * log_s)  # k_g s+^g
    per_moment = mass_per_moment(c)
    births = c.nucleation_rate * jnp.exp(c.nucleation_order * log_s) * per_moment * y[M3] / COUNT_SCALE
    ln = c.nucleus_size
    dm0 = births
    dm1 = growth * y[M0] + births * ln
    dm2 = 2.0 * growth * y[M1] + births * ln**2
    dm3 = 3.0 * growth * y[M2] + births * ln**3
    dmass = per_moment * dm3
    d_sub = c.segregation_substrate * y[C_A] / y[C_P] * dmass
    d_imp = c.segregation_impurity * y[C_I] / y[C_P] * dmass
    return jnp.stack([-dmass, -d_sub, -d_imp, dm0, dm1, dm2, dm3, d_sub, d_imp])


def initial_state(feed: Array, c: CrystalliserConstants) -> Array:
    """State at seeding: dissolved ``feed = (c_P, c_A, c_I)`` g/L and monodisperse seeds."""
    count = c.seed_loading / (mass_per_moment(c) * c.seed_size**3)  # millions of seeds per L
    moments = count * c.seed_size ** jnp.arange(4, dtype=feed.dtype)
    zero = jnp.zeros((2,), feed.dtype)
    return jnp.concatenate([feed, moments, zero])


def d50_from_moments(m1: Array, m2: Array, m3: Array) -> Array:
    """Mass-weighted median size ``d32 sqrt(d32 / d21)`` (lognormal fit to ``mu_1..mu_3``)."""
    d32 = m3 / m2
    d21 = m2 / m1
    return d32 * jnp.sqrt(d32 / d21)


@lru_cache(maxsize=16)
def _interpolation(n_knots: int, steps: int) -> np.ndarray:
    """``(n, 3, n_knots)`` weights of the RK4 stage temperatures on the profile knots."""
    fractions = stack_fractions(n_knots - 1, steps)
    return linear_interpolation_matrix(n_knots, fractions)


def run(
    knots: Array, cooling_time: Array, feed: Array, c: CrystalliserConstants, steps: int
) -> CrystalliserOutput:
    """Integrate the crystalliser along a piecewise-linear cooling profile.

    Args:
        knots: temperatures ``(K,)`` (C) at equally spaced times ``0 .. cooling_time``;
            ``knots[0]`` is the seeding temperature.
        feed: dissolved ``(P, A, I)`` at seeding, g/L.
        steps: RK4 steps per profile segment.
    """
    weights = _interpolation(knots.shape[0], steps)
    stages = jnp.asarray(weights, knots.dtype) @ knots  # (n, 3)
    n = stages.shape[0]
    dt = cooling_time / n
    y0 = initial_state(feed, c)
    final, traj = rk4(lambda y, u: rhs(y, u, c), y0, controls(stages, c), dt)  # controls outside the loop
    temperature = jnp.concatenate([stages[:1, 0], stages[:, 2]])
    return CrystalliserOutput(
        final=final,
        trajectory=traj,
        temperature=temperature,
        times=dt * jnp.arange(n + 1),
        crystal_mass=mass_per_moment(c) * final[M3],
        d50=d50_from_moments(final[M1], final[M2], final[M3]),
    )
