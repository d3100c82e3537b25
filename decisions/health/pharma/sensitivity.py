"""ICH Q8 sensitivities: the CQA x CPP Jacobian of the chain in one jitted ``jax.jacrev`` call."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.core.float64_check import float64_array, require_float64_program
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

JacobianFn = Callable[[Array, Profiles, Constants, Grid], Array]
"""``jacobian(cpps, profiles, constants, grid) -> (6, 7)``, the signature of ``cqa_jacobian``."""


@partial(jax.jit, static_argnames=("g",))
def cqa_jacobian(cpps: Array, profiles: Profiles, c: Constants, g: Grid) -> Array:
    """``d CQA / d CPP`` ``(6, 7)`` from one jitted reverse-mode call (``jax.jacrev``).

    Args:
        cpps: CPP vector ``(7,)``.

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
    jacobian: JacobianFn | None = None,
) -> tuple[float, pd.DataFrame, pd.DataFrame]:
    """Jacobian against central finite differences, in float64 (x64 scoped to this call).

    Args:
        cpps: CPP vector (default the scenario's).
        profiles: profile shapes (default flat / linear).
        jacobian: the Jacobian under test, called as ``jacobian(cpps, profiles, constants, grid)``
            inside the float64 scope (default ``cqa_jacobian``).

    Returns:
        ``(max relative error, adjoint table, finite-difference table)``.

    Raises:
        FloatingPointError: the comparison would not be a float64 one, or not a comparison.
    """
    jac = cqa_jacobian if jacobian is None else jacobian
    g = grid(scenario)
    with jax.enable_x64(True):
        x = jnp.asarray(cpp_vector(scenario) if cpps is None else cpps, jnp.float64)
        prof = cast_leaves(chain.constant_profiles(g) if profiles is None else profiles, jnp.float64)
        c = constants(scenario, jnp.float64)
        f = jax.jit(lambda v: chain.cqas(v, prof, c, g))
        require_float64_program("the traced Jacobian", jac, x, prof, c, g, static_argnums=(3,))
        require_float64_program("the traced CQA function", f, x)
        adjoint = float64_array("the Jacobian", jac(x, prof, c, g))
        fd = central_differences(f, np.asarray(x), relative_step)
    return max_relative_error(adjoint, fd), table(adjoint), table(fd)


def central_differences(f: Callable[[Array], Array], x: np.ndarray, relative_step: float) -> np.ndarray:
    """``(m, n)`` central differences of ``f: (n,) -> (m,)`` at ``x``, in float64 (call under x64).

    Args:
        x: the point ``(n,)``, float64.
        relative_step: the step of entry ``j`` is ``relative_step x max(|x_j|, 1)``.

    Returns:
        Column ``j``: ``(f(x + h e_j) - f(x - h e_j)) / (2 h)``, with ``2 h`` the step taken.
    """
    x = float64_array("the finite-difference point", x)
    columns = []
    for j in range(x.shape[0]):
        h = relative_step * max(abs(float(x[j])), 1.0)
        up, down = x.copy(), x.copy()
        up[j] += h
        down[j] -= h
        step = up[j] - down[j]  # exact in float64: the step actually taken
        if not step > 0.0:
            raise FloatingPointError(f"finite-difference step {h:g} vanishes at x[{j}] = {x[j]:g}")
        high = float64_array("f(x + h)", f(jnp.asarray(up)))
        low = float64_array("f(x - h)", f(jnp.asarray(down)))
        columns.append((high - low) / step)
    return np.stack(columns, axis=1)


def max_relative_error(adjoint: np.ndarray, fd: np.ndarray) -> float:
    """Largest relative gap between a Jacobian and its finite differences (both float64).

    Raises:
        FloatingPointError: an array not float64, a value not finite, or the two tables
            identical (no sensitivity at all, or one quantity compared with itself: an
            error of exactly zero would prove nothing).
    """
    adjoint = float64_array("the Jacobian", adjoint)
    fd = float64_array("the finite differences", fd)
    if adjoint.shape != fd.shape:
        raise ValueError(f"Jacobian {adjoint.shape} and finite differences {fd.shape} differ in shape")
    if not (np.isfinite(adjoint).all() and np.isfinite(fd).all()):
        raise FloatingPointError("the Jacobian or its finite differences are not finite")
    if np.array_equal(adjoint, fd):
        raise FloatingPointError(
            "the Jacobian and its finite differences are bitwise identical: both sides are the same "
            "numbers (or all zero), so the check compared nothing"
        )
    floor = 1e-6 * np.max(np.abs(adjoint), axis=1, keepdims=True)
    denominator = np.maximum(np.maximum(np.abs(adjoint), np.abs(fd)), floor)
    both_zero = (adjoint == 0.0) & (fd == 0.0)  # the only entries where the denominator can be 0
    err = np.divide(np.abs(adjoint - fd), denominator, out=np.zeros_like(adjoint), where=~both_zero)
    return float(np.max(err))
