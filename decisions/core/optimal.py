"""Exact baselines: solve pyomo LP/MILP models with HiGHS and read their duals.

Uses pyomo's current solver interface (``pyomo.contrib.solver``, the ``highs``
solver built on ``highspy``). ``solve`` loads the primal solution into the
model's variables and, for LPs, the constraint duals into an import suffix
named ``dual`` (added when the model has none); ``duals`` reads them back as a
numpy array. A model without an optimal or feasible solution raises
``InfeasibleError``, ``UnboundedError`` or ``SolveError`` naming the model.

Dual convention (HiGHS through pyomo): the dual of a constraint is the rate of
change of the optimal objective per unit increase of its right-hand side, so
a binding ``<=`` capacity in a maximisation has a non-negative dual.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.util import NoDualsError, NoReducedCostsError
from pyomo.contrib.solver.solvers.highs import Highs


class SolveError(RuntimeError):
    """The solver ended without a usable solution."""


class InfeasibleError(SolveError):
    """The model is infeasible (or HiGHS could not tell infeasible from unbounded)."""


class UnboundedError(SolveError):
    """The model's objective is unbounded."""


class SolveStatus(enum.Enum):
    """Quality of the solution ``solve`` loaded into the model."""

    OPTIMAL = "optimal"
    """Proven optimal (within HiGHS's tolerances and, for a MILP, its gap)."""
    FEASIBLE = "feasible"
    """Feasible but not proven optimal: a time or iteration limit stopped the solver."""


@dataclass(frozen=True)
class SolveResult:
    """What ``solve`` returns (the solution itself is loaded into the model)."""

    status: SolveStatus
    """Optimal, or feasible when a limit was hit."""
    objective: float
    """Objective value of the loaded solution."""
    solve_seconds: float
    """Wall time of the solver call (model hand-over included)."""
    bound: float | None = None
    """Best proven bound on the objective (equals ``objective`` for a solved LP), if known."""


_LIMITS = {
    TerminationCondition.maxTimeLimit,
    TerminationCondition.iterationLimit,
    TerminationCondition.objectiveLimit,
    TerminationCondition.interrupted,
}


def _is_mip(model: pyo.Block) -> bool:
    return any(not v.is_continuous() for v in model.component_data_objects(pyo.Var, active=True))


def solve(model: pyo.ConcreteModel, *, tee: bool = False, time_limit: float | None = None) -> SolveResult:
    """Solve a pyomo model with HiGHS and load the solution (and LP duals) into it.

    Args:
        model: a concrete LP or MILP with one active objective.
        tee: stream the HiGHS log to stdout.
        time_limit: wall-clock limit in seconds (None: no limit). When it is hit
            with a feasible incumbent, that incumbent is loaded with status FEASIBLE.

    Returns:
        ``SolveResult(status, objective, solve_seconds, bound)``.

    Raises:
        ValueError: ``time_limit`` is not positive.
        InfeasibleError: the model is infeasible (or infeasible-or-unbounded).
        UnboundedError: the objective is unbounded.
        SolveError: HiGHS is unavailable, failed, or stopped without a feasible solution.
    """
    if time_limit is not None and not time_limit > 0:
        raise ValueError(f"time_limit: must be positive, got {time_limit!r}")
    solver = Highs()
    if not solver.available():
        raise SolveError("HiGHS is not available (install highspy)")
    name = model.name
    is_lp = not _is_mip(model)
    if is_lp and model.component("dual") is None:
        model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    results = solver.solve(
        model,
        tee=tee,
        time_limit=time_limit,
        load_solutions=False,
        raise_exception_on_nonoptimal_result=False,
    )
    term = results.termination_condition
    if term in (TerminationCondition.provenInfeasible, TerminationCondition.locallyInfeasible):
        raise InfeasibleError(f"model {name!r} is infeasible")
    if term == TerminationCondition.infeasibleOrUnbounded:
        raise InfeasibleError(f"model {name!r} is infeasible or unbounded")
    if term == TerminationCondition.unbounded:
        raise UnboundedError(f"model {name!r} is unbounded")
    has_solution = results.solution_status in (SolutionStatus.optimal, SolutionStatus.feasible)
    if term == TerminationCondition.convergenceCriteriaSatisfied and has_solution:
        status = SolveStatus.OPTIMAL
    elif term in _LIMITS and has_solution:
        status = SolveStatus.FEASIBLE
    else:
        raise SolveError(f"model {name!r}: HiGHS stopped with {term.name} and no usable solution")
    results.solution_loader.load_vars()
    if is_lp:
        try:
            results.solution_loader.load_import_suffixes()
        except (NoDualsError, NoReducedCostsError):
            pass  # no valid duals (e.g. stopped at a limit); suffixes stay empty
    return SolveResult(
        status=status,
        objective=float(results.incumbent_objective),
        solve_seconds=float(results.timing_info.wall_time),
        bound=None if results.objective_bound is None else float(results.objective_bound),
    )


def duals(model: pyo.ConcreteModel, constraint: pyo.Constraint) -> np.ndarray:
    """Duals of a (scalar or indexed) constraint after ``solve``, in index order.

    Args:
        model: the solved LP (its ``dual`` suffix was filled by ``solve``).
        constraint: a constraint component of ``model``.

    Returns:
        Float array of shape ``(len(constraint),)``, one dual per index in the
        order of ``constraint.keys()`` (a single entry for a scalar constraint).

    Raises:
        ValueError: the model has no ``dual`` suffix, or a dual is missing (a MILP,
            or a model not solved by ``solve``).
    """
    suffix = model.component("dual")
    if not isinstance(suffix, pyo.Suffix) or not suffix.import_enabled():
        raise ValueError(f"model {model.name!r} has no import suffix 'dual'; solve it with solve() first")
    out = []
    for index in constraint.keys():
        value = suffix.get(constraint[index])
        if value is None:
            raise ValueError(
                f"model {model.name!r}: no dual for {constraint[index].name} (a MILP, or not solved yet)"
            )
        out.append(float(value))
    return np.asarray(out, dtype=np.float64)
