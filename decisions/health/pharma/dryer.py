"""Unit 4, the dryer: solvent evaporation and solid-state degradation ``P -> D``."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from decisions.health.pharma.integrate import rk4_piecewise_constant
from decisions.health.pharma.params import DryerConstants, arrhenius


class DryerOutput(NamedTuple):
    """Dryer result."""

    final: Array  # (3,) X (kg/kg), P (g/L batch), D (g/L batch)
    trajectory: Array  # (n + 1, 3)
    times: Array  # (n + 1,) h
    residual_solvent: Array  # () ppm


def rates(temperature: Array, c: DryerConstants) -> tuple[Array, Array]:
    """``(k_dry, k_deg)`` in 1/h at ``temperature`` (C)."""
    k_dry = arrhenius(c.drying_rate, c.drying_activation, temperature, c.reference_temperature)
    k_deg = arrhenius(c.degradation_rate, c.degradation_activation, temperature, c.reference_temperature)
    return k_dry, k_deg


def rhs(y: Array, k: Array, c: DryerConstants) -> Array:
    """``d(X, P, D)/dt`` with rate constants ``k = (k_dry, k_deg)`` (1/h)."""
    degradation = k[1] * (1.0 + c.moisture_acceleration * y[0]) * y[1]
    return jnp.stack([-k[0] * y[0], -degradation, degradation])


def ppm(loading: Array) -> Array:
    """Residual solvent in ppm of the product from a loading in kg per kg of solids."""
    return 1.0e6 * loading / (1.0 + loading)


def initial_loading(liquid: Array, solids: Array, c: DryerConstants) -> Array:
    """Solvent loading (kg/kg) of a cake holding ``liquid`` L and ``solids`` g (per L of batch)."""
    return liquid * c.solvent_density / (solids / 1000.0)


def run(
    profile: Array, drying_time: Array, loading: Array, product: Array, c: DryerConstants, steps: int
) -> DryerOutput:
    """Integrate the dryer over a piecewise-constant temperature profile.

    Args:
        profile: segment temperatures ``(S,)``, C.
        loading: initial solvent loading, kg/kg.
        product: P in the cake, g per L of batch.
    """
    y0 = jnp.stack([loading, product, jnp.zeros_like(product)])
    final, traj, times = rk4_piecewise_constant(
        lambda y, u: rhs(y, u, c), y0, profile, drying_time, steps, lambda t: jnp.stack(rates(t, c), axis=-1)
    )
    return DryerOutput(final=final, trajectory=traj, times=times, residual_solvent=ppm(final[0]))


def isothermal(temperature: Array, t: Array, loading: Array, product: Array, c: DryerConstants) -> Array:
    """Closed-form ``(X, P, D)`` at times ``t`` for a constant temperature."""
    k_dry, k_deg = rates(temperature, c)
    x = loading * jnp.exp(-k_dry * t)
    p = product * jnp.exp(-k_deg * (t + c.moisture_acceleration * loading * (-jnp.expm1(-k_dry * t)) / k_dry))
    return jnp.stack([x, p, product - p], axis=-1)
