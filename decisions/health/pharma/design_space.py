"""ICH Q8 design space: probability of meeting every specification over a grid of two CPPs."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.health.pharma import chain
from decisions.health.pharma.chain import Profiles
from decisions.health.pharma.params import CPP_NAMES, Constants, Grid, SpecLimits, draw_constants, grid
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.snapo_policy import problem
from decisions.health.pharma.spec import DesignSpaceSettings  # defined in the light spec module
from decisions.health.pharma.specs import meets_specs


@partial(jax.jit, static_argnames=("g", "ix", "iy", "batch"))
def probability_grid(
    xs: Array,
    ys: Array,
    cpps: Array,
    profiles: Profiles,
    draws: Constants,
    limits: SpecLimits,
    g: Grid,
    ix: int,
    iy: int,
    batch: int = 8,
) -> Array:
    """Share of draws meeting every specification at each grid point.

    Args:
        xs: values of CPP ``ix`` ``(nx,)``.
        ys: values of CPP ``iy`` ``(ny,)``.
        cpps: operating point ``(7,)`` (the other CPPs).
        draws: constants with a leading draw axis ``(S,)``.
        ix: index of the x CPP in ``CPP_NAMES``.
        iy: index of the y CPP.
        batch: grid points simulated together (``vmap`` over ``batch x S`` chains; chunks of
            a few thousand chains stay in cache and run faster than the whole grid at once).
    """
    points = jnp.stack(jnp.meshgrid(xs, ys, indexing="ij"), axis=-1).reshape(-1, 2)

    def at(point: Array) -> Array:
        operating = cpps.at[ix].set(point[0]).at[iy].set(point[1])
        q = jax.vmap(lambda c: chain.cqas(operating, profiles, c, g))(draws)
        return jnp.mean(meets_specs(q, limits).astype(q.dtype))

    return jax.lax.map(at, points, batch_size=batch).reshape(xs.shape[0], ys.shape[0])


def design_space(
    scenario: Scenario,
    settings: DesignSpaceSettings | None = None,
    cpps: Array | np.ndarray | None = None,
    profiles: Profiles | None = None,
) -> pd.DataFrame:
    """Design-space map of two CPPs under parameter uncertainty.

    Args:
        settings: axes and sampling (default ``DesignSpaceSettings()``).
        cpps: operating point for the other CPPs (default the scenario's).
        profiles: profile shapes (default flat reactor and dryer, linear cooling).

    Returns:
        Tidy DataFrame with columns ``cpp_x, cpp_y, probability`` (one row per grid point;
        ``attrs`` holds the two CPP names).
    """
    settings = DesignSpaceSettings() if settings is None else settings
    g, p = grid(scenario), problem(scenario)
    x = p.cpps if cpps is None else jnp.asarray(cpps, jnp.float32)
    prof = chain.constant_profiles(g) if profiles is None else profiles
    xs = jnp.linspace(settings.x_low, settings.x_high, settings.points, dtype=jnp.float32)
    ys = jnp.linspace(settings.y_low, settings.y_high, settings.points, dtype=jnp.float32)
    draws = draw_constants(jax.random.PRNGKey(settings.seed), p.nominal, p.cv, settings.samples)
    ix, iy = CPP_NAMES.index(settings.cpp_x.value), CPP_NAMES.index(settings.cpp_y.value)
    prob = np.asarray(probability_grid(xs, ys, x, prof, draws, p.limits, g, ix, iy))
    mx, my = np.meshgrid(np.asarray(xs), np.asarray(ys), indexing="ij")
    frame = pd.DataFrame({"cpp_x": mx.ravel(), "cpp_y": my.ravel(), "probability": prob.ravel()})
    frame.attrs.update({"cpp_x": settings.cpp_x.value, "cpp_y": settings.cpp_y.value})
    return frame
