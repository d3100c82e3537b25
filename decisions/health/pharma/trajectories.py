"""Per-unit trajectories of one chain run as tidy DataFrames, for plots and reports."""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.health.pharma import chain, crystalliser
from decisions.health.pharma.chain import CQA_NAMES, CQA_UNITS, ChainResult, Profiles
from decisions.health.pharma.params import Constants, Grid, constants, cpp_vector, grid
from decisions.health.pharma.scenario import Scenario


class ChainFrames(NamedTuple):
    """One chain run, unit by unit.

    Attributes:
        reactor: ``time_h, temperature, substrate, product, impurity`` (mol/L).
        crystalliser: ``time_h, temperature, solubility, concentration`` (g/L),
            ``supersaturation``, ``crystal_mass`` (g/L), ``d50`` (um, from the moments so far).
        filtration: one row: ``product, substrate, impurity`` (g per L of batch), ``liquid``
            (L), ``liquor_left``, ``wash_loss`` (g).
        dryer: ``time_h, temperature, solvent_loading`` (kg/kg), ``residual_solvent`` (ppm),
            ``product, degradant`` (g per L of batch).
        cqas: ``cqa, unit, value``.
    """

    reactor: pd.DataFrame
    crystalliser: pd.DataFrame
    filtration: pd.DataFrame
    dryer: pd.DataFrame
    cqas: pd.DataFrame


@partial(jax.jit, static_argnames=("g",))
def _simulate(cpps: Array, profiles: Profiles, c: Constants, g: Grid) -> ChainResult:
    return chain.simulate(cpps, profiles, c, g)


def simulate_chain(
    scenario: Scenario, cpps: Array | np.ndarray | None = None, profiles: Profiles | None = None
) -> ChainFrames:
    """Run the chain once at nominal constants and return every unit's trajectory.

    Args:
        cpps: CPP vector (default the scenario's).
        profiles: profile shapes (default flat reactor and dryer, linear cooling).
    """
    g = grid(scenario)
    x = cpp_vector(scenario) if cpps is None else jnp.asarray(cpps, jnp.float32)
    prof = chain.constant_profiles(g) if profiles is None else profiles
    c = constants(scenario)
    r = jax.device_get(_simulate(x, prof, c, g))
    reactor_profile, _, dryer_profile = (
        np.asarray(a) for a in chain.temperatures(x, prof, c.crystalliser.start_temperature)
    )

    rx = np.asarray(r.reactor.trajectory)
    reactor = pd.DataFrame(
        {
            "time_h": np.asarray(r.reactor.times),
            "temperature": _segment_values(reactor_profile, len(rx)),
            "substrate": rx[:, 0],
            "product": rx[:, 1],
            "impurity": rx[:, 2],
        }
    )

    cr = np.asarray(r.crystalliser.trajectory)
    temp = np.asarray(r.crystalliser.temperature)
    sat = np.asarray(crystalliser.solubility(jnp.asarray(temp), c.crystalliser))
    per_moment = float(crystalliser.mass_per_moment(c.crystalliser))
    d50 = np.asarray(
        crystalliser.d50_from_moments(cr[:, crystalliser.M1], cr[:, crystalliser.M2], cr[:, crystalliser.M3])
    )
    cryst = pd.DataFrame(
        {
            "time_h": np.asarray(r.crystalliser.times),
            "temperature": temp,
            "solubility": sat,
            "concentration": cr[:, crystalliser.C_P],
            "supersaturation": np.asarray(
                crystalliser.supersaturation(jnp.asarray(cr), jnp.asarray(temp), c.crystalliser)
            ),
            "crystal_mass": per_moment * cr[:, crystalliser.M3],
            "d50": d50,
        }
    )

    filtration = pd.DataFrame({name: [float(v)] for name, v in r.filtration._asdict().items()})

    dr = np.asarray(r.dryer.trajectory)
    dryer = pd.DataFrame(
        {
            "time_h": np.asarray(r.dryer.times),
            "temperature": _segment_values(dryer_profile, len(dr)),
            "solvent_loading": dr[:, 0],
            "residual_solvent": 1.0e6 * dr[:, 0] / (1.0 + dr[:, 0]),
            "product": dr[:, 1],
            "degradant": dr[:, 2],
        }
    )
    cqas = pd.DataFrame(
        {
            "cqa": list(CQA_NAMES),
            "unit": [CQA_UNITS[n] for n in CQA_NAMES],
            "value": np.asarray(r.cqas, float),
        }
    )
    return ChainFrames(reactor=reactor, crystalliser=cryst, filtration=filtration, dryer=dryer, cqas=cqas)


def _segment_values(profile: np.ndarray, n_points: int) -> np.ndarray:
    """Temperature of a piecewise-constant profile at ``n_points`` step boundaries (left-continuous at the end)."""
    steps = n_points - 1
    index = np.minimum((np.arange(n_points) * len(profile)) // steps, len(profile) - 1)
    return profile[index]
