"""The four units in series, from CPPs and profile shapes to CQAs."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.health.pharma import crystalliser, dryer, filtration, reactor
from decisions.health.pharma.params import Constants, Grid

CQA_NAMES: tuple[str, ...] = ("yield", "purity", "impurity", "degradant", "d50", "residual_solvent")
"""CQA order of every CQA vector (and of sensitivity table rows)."""

CQA_UNITS: dict[str, str] = {
    "yield": "%",
    "purity": "%",
    "impurity": "%",
    "degradant": "%",
    "d50": "um",
    "residual_solvent": "ppm",
}


@struct.dataclass
class Profiles:
    """Profile shapes around the CPP means (held fixed by the CQA x CPP Jacobian)."""

    reactor_offsets: Array  # (Sr,) K around the mean reactor temperature, mean zero
    cooling_fractions: Array  # (Sc + 1,) share of the cooling done at each knot: 0, ..., 1, non-decreasing
    dryer_offsets: Array  # (Sd,) K around the mean dryer temperature, mean zero


class ChainResult(NamedTuple):
    """Everything ``simulate`` computes."""

    cqas: Array  # (6,) in CQA_NAMES order
    reactor: reactor.ReactorOutput
    crystalliser: crystalliser.CrystalliserOutput
    filtration: filtration.FiltrationOutput
    dryer: dryer.DryerOutput


def constant_profiles(grid: Grid, dtype: jnp.dtype = jnp.float32) -> Profiles:
    """Flat reactor and dryer temperatures and a linear cooling ramp."""
    return Profiles(
        reactor_offsets=jnp.zeros((grid.reactor_segments,), dtype),
        cooling_fractions=jnp.linspace(0.0, 1.0, grid.cooling_segments + 1, dtype=dtype),
        dryer_offsets=jnp.zeros((grid.dryer_segments,), dtype),
    )


def temperatures(cpps: Array, profiles: Profiles, start_temperature: Array) -> tuple[Array, Array, Array]:
    """``(reactor segments, cooling knots, dryer segments)`` in C from CPPs and shapes."""
    reactor_profile = cpps[0] + profiles.reactor_offsets
    knots = start_temperature - (start_temperature - cpps[2]) * profiles.cooling_fractions
    dryer_profile = cpps[5] + profiles.dryer_offsets
    return reactor_profile, knots, dryer_profile


def simulate(cpps: Array, profiles: Profiles, constants: Constants, grid: Grid) -> ChainResult:
    """Run the four units in series.

    Args:
        cpps: CPP vector ``(7,)`` in ``params.CPP_NAMES`` order.
        constants: model constants (scalar leaves; ``vmap`` for batches of draws).

    Returns:
        The ``ChainResult`` with the CQAs and every unit's output.
    """
    cc = constants.crystalliser
    reactor_profile, knots, dryer_profile = temperatures(cpps, profiles, cc.start_temperature)
    rx = reactor.run(reactor_profile, cpps[1], constants.reactor, grid.reactor_steps)
    feed = rx.final[jnp.asarray([1, 0, 2])] * constants.reactor.molar_mass  # (P, A, I) g/L
    cr = crystalliser.run(knots, cpps[3], feed, cc, grid.crystalliser_steps)
    fin = cr.final
    crystals = jnp.stack([cr.crystal_mass, fin[crystalliser.S_A], fin[crystalliser.S_I]])
    liquor = fin[jnp.asarray([crystalliser.C_P, crystalliser.C_A, crystalliser.C_I])]
    wash_solubility = crystalliser.solubility(constants.filtration.wash_temperature, cc)
    cake = filtration.run(crystals, liquor, cr.d50, cpps[4], wash_solubility, constants.filtration)
    solids = cake.product + cake.substrate + cake.impurity  # conserved through the dryer (P -> D)
    loading = dryer.initial_loading(cake.liquid, solids, constants.dryer)
    dr = dryer.run(dryer_profile, cpps[6], loading, cake.product, constants.dryer, grid.dryer_steps)
    product, degradant = dr.final[1], dr.final[2]
    theoretical = constants.reactor.substrate * constants.reactor.molar_mass
    cqas = jnp.stack(
        [
            100.0 * (product - cc.seed_loading) / theoretical,
            100.0 * product / solids,
            100.0 * cake.impurity / solids,
            100.0 * degradant / solids,
            cr.d50,
            dr.residual_solvent,
        ]
    )
    return ChainResult(cqas=cqas, reactor=rx, crystalliser=cr, filtration=cake, dryer=dr)


def cqas(cpps: Array, profiles: Profiles, constants: Constants, grid: Grid) -> Array:
    """The CQA vector ``(6,)`` (``CQA_NAMES`` order) of one chain run."""
    return simulate(cpps, profiles, constants, grid).cqas
