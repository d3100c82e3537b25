"""The SNAPO policy: free, bounded per-segment temperatures of the three profiles."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.health.pharma.chain import Profiles
from decisions.health.pharma.params import Grid
from decisions.health.pharma.scenario import Scenario

PolicyParams = dict[str, Array]


@struct.dataclass
class Bounds:
    """Temperature ranges the policy maps into (C)."""

    reactor: Array  # (2,) low, high
    cooling_end: Array  # (2,)
    dryer: Array  # (2,)


def bounds(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> Bounds:
    """The scenario's operating ranges as ``Bounds``."""
    r = scenario.ranges

    def pair(rng: Any) -> Array:
        return jnp.asarray([rng.low, rng.high], dtype)

    return Bounds(
        reactor=pair(r.reactor_temperature),
        cooling_end=pair(r.cooling_end_temperature),
        dryer=pair(r.dryer_temperature),
    )


def _to_range(logit: Array, rng: Array) -> Array:
    return rng[0] + (rng[1] - rng[0]) * jax.nn.sigmoid(logit)


def _from_range(value: Array, rng: Array) -> Array:
    frac = jnp.clip((value - rng[0]) / (rng[1] - rng[0]), 1e-3, 1 - 1e-3)
    return jnp.log(frac) - jnp.log1p(-frac)


def init_params(
    grid: Grid, b: Bounds, *, reactor: float, cooling_end: float, dryer: float, dtype: jnp.dtype = jnp.float32
) -> PolicyParams:
    """Parameters of constant reactor and dryer temperatures and a linear cooling ramp.

    Args:
        reactor: reactor temperature, C (clipped into its range).
        cooling_end: cooling end temperature, C.
        dryer: dryer temperature, C.
    """
    return {
        "reactor": jnp.full(
            (grid.reactor_segments,), _from_range(jnp.asarray(reactor, dtype), b.reactor), dtype
        ),
        "cooling_end": jnp.asarray(_from_range(jnp.asarray(cooling_end, dtype), b.cooling_end), dtype),
        "cooling": jnp.zeros((grid.cooling_segments,), dtype),
        "dryer": jnp.full((grid.dryer_segments,), _from_range(jnp.asarray(dryer, dtype), b.dryer), dtype),
    }


def profiles_of(params: PolicyParams, b: Bounds) -> tuple[Array, Array, Array, Array]:
    """``(reactor segments, cooling end, cooling fractions (Sc + 1,), dryer segments)`` in C."""
    reactor = _to_range(params["reactor"], b.reactor)
    end = _to_range(params["cooling_end"], b.cooling_end)
    shares = jax.nn.softmax(params["cooling"])
    fractions = jnp.concatenate([jnp.zeros((1,), shares.dtype), jnp.cumsum(shares)])
    fractions = fractions.at[-1].set(1.0)  # exactly the end temperature at the end
    dryer = _to_range(params["dryer"], b.dryer)
    return reactor, end, fractions, dryer


def operating_point(params: PolicyParams, base_cpps: Array, b: Bounds) -> tuple[Array, Profiles]:
    """CPP vector and profile shapes of the policy.

    Args:
        base_cpps: the scenario's CPP vector (times and wash ratio are taken from it).

    Returns:
        ``(cpps (7,), profiles)``; ``chain.temperatures(cpps, profiles, ...)`` gives back the
        policy's profiles exactly.
    """
    reactor, end, fractions, dryer = profiles_of(params, b)
    r_mean, d_mean = jnp.mean(reactor), jnp.mean(dryer)
    cpps = base_cpps.at[0].set(r_mean).at[2].set(end).at[5].set(d_mean)
    return cpps, Profiles(
        reactor_offsets=reactor - r_mean, cooling_fractions=fractions, dryer_offsets=dryer - d_mean
    )
