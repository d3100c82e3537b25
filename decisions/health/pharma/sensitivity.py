"""ICH Q8 sensitivities: the CQA x CPP Jacobian of the chain in one jitted ``jax.jacrev`` call.

``cqa_jacobian`` differentiates the six CQAs with respect to the seven CPPs with the profile
shapes held (a CPP column shifts or stretches its whole profile). The reverse pass runs back
through dryer, filter, crystalliser and reactor, so cross-unit terms (``d residual_solvent /
d reactor_temperature`` via crystal size and cake retention, ``d d50 / d reaction_time`` via
the crystalliser feed) come out of the same call as the local ones, and terms no path can
carry (a dryer CPP on the impurity or on d50) are exactly zero.

``fd_check`` compares the Jacobian with central finite differences in float64 (x64 enabled
only inside the check).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.core.pytrees import cast_leaves
from decisions.health.pharma import chain
from decisions.health.pharma.chain import CQA_NAMES, Profiles
from decisions.health.pharma.params import CPP_NAMES, Constants, Grid, constants, cpp_vector, grid
from decisions.health.pharma.scenario import Scenario

CPP_UNIT: dict[str, int] = {
    "reactor_temperature": 0,
    "reaction_time": 0,
    "cooling_end_temperature": 1,
    "cooling_time": 1,
    "wash_ratio": 2,
    "dryer_temperature": 3,
    "dryer_time": 3,
}
"""Unit (0 reactor, 1 crystalliser, 2 filter/wash, 3 dryer) each CPP belongs to."""

CQA_UNIT: dict[str, int] = {
    "yield": 3,
    "purity": 3,
    "impurity": 2,
    "degradant": 3,
    "d50": 1,
    "residual_solvent": 3,
}
"""Last unit that changes each CQA (the dryer degrades P; I is fixed once the cake is washed;
the dryer and filter do not change crystal size)."""

UNIT_NAMES = ("reactor", "crystalliser", "filtration", "dryer")


@partial(jax.jit, static_argnames=("g",))
def cqa_jacobian(cpps: Array, profiles: Profiles, c: Constants, g: Grid) -> Array:
    """``d CQA / d CPP`` ``(6, 7)`` from one jitted reverse-mode call (``jax.jacrev``).

    Args:
        cpps: CPP vector ``(7,)``.
        profiles: profile shapes (held fixed).
        c: constants (nominal).
        g: discretisation.

    Returns:
        The Jacobian, rows ``CQA_NAMES``, columns ``CPP_NAMES``.
    """
    return jax.jacrev(chain.cqas)(cpps, profiles, c, g)


def table(jacobian: Array | np.ndarray) -> pd.DataFrame:
    """The Jacobian as a DataFrame: rows CQAs, columns CPPs (CQA units per CPP unit)."""
    return pd.DataFrame(np.asarray(jacobian, float), index=list(CQA_NAMES), columns=list(CPP_NAMES))


def sensitivity_table(
    scenario: Scenario, cpps: Array | np.ndarray | None = None, profiles: Profiles | None = None
) -> pd.DataFrame:
    """ICH Q8 sensitivity table at an operating point, nominal constants.

    Args:
        scenario: validated scenario.
        cpps: CPP vector (default: the scenario's).
        profiles: profile shapes (default: flat reactor and dryer, linear cooling); pass
            ``OptimisedProfiles.cpps`` / ``.profiles`` for the SNAPO operating point.

    Returns:
        DataFrame, rows CQAs (``chain.CQA_NAMES``), columns CPPs (``params.CPP_NAMES``).
    """
    g = grid(scenario)
    x = cpp_vector(scenario) if cpps is None else jnp.asarray(cpps, jnp.float32)
    prof = chain.constant_profiles(g) if profiles is None else cast_leaves(profiles, jnp.float32)
    return table(cqa_jacobian(x, prof, constants(scenario), g))


def cross_unit_mask() -> np.ndarray:
    """``(6, 7)`` True where the CPP's unit is upstream of the unit that last changes the CQA."""
    return np.array([[CPP_UNIT[p] < CQA_UNIT[q] for p in CPP_NAMES] for q in CQA_NAMES])


def structural_zero_mask() -> np.ndarray:
    """``(6, 7)`` True where the CPP's unit is downstream of the CQA's: no path, exactly zero."""
    return np.array([[CPP_UNIT[p] > CQA_UNIT[q] for p in CPP_NAMES] for q in CQA_NAMES])


def count_sensitivities(jacobian: Array | np.ndarray) -> tuple[int, int]:
    """``(non-zero sensitivities, non-zero cross-unit sensitivities)`` of a Jacobian."""
    nonzero = np.asarray(jacobian) != 0.0
    return int(nonzero.sum()), int((nonzero & cross_unit_mask()).sum())


def fd_check(
    scenario: Scenario,
    cpps: Array | np.ndarray | None = None,
    profiles: Profiles | None = None,
    *,
    relative_step: float = 1e-6,
) -> tuple[float, pd.DataFrame, pd.DataFrame]:
    """Jacobian against central finite differences, in float64 (x64 scoped to this call).

    The step of CPP ``j`` is ``relative_step x max(|x_j|, 1)``. The error of an entry is
    ``|J - FD| / max(|J|, |FD|, 1e-6 x max |row|)``: relative, with a floor at a millionth
    of the row's largest sensitivity so that entries that are zero (or nearly) are judged
    against the row's scale.

    Args:
        scenario: validated scenario.
        cpps: CPP vector (default the scenario's).
        profiles: profile shapes (default flat / linear).
        relative_step: relative finite-difference step.

    Returns:
        ``(max relative error, adjoint table, finite-difference table)``.
    """
    g = grid(scenario)
    with jax.enable_x64(True):
        x = jnp.asarray(cpp_vector(scenario) if cpps is None else cpps, jnp.float64)
        prof = cast_leaves(chain.constant_profiles(g) if profiles is None else profiles, jnp.float64)
        c = constants(scenario, jnp.float64)
        adjoint = np.asarray(cqa_jacobian(x, prof, c, g))
        f = jax.jit(lambda v: chain.cqas(v, prof, c, g))
        fd = np.zeros_like(adjoint)
        for j in range(x.shape[0]):
            h = relative_step * max(abs(float(x[j])), 1.0)
            e = jnp.zeros_like(x).at[j].set(h)
            fd[:, j] = (np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2.0 * h)
    floor = 1e-6 * np.max(np.abs(adjoint), axis=1, keepdims=True)
    err = np.abs(adjoint - fd) / np.maximum(np.maximum(np.abs(adjoint), np.abs(fd)), floor)
    return float(np.max(err)), table(adjoint), table(fd)
