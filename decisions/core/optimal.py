"""Exact baselines: solve pyomo LP/MILP models with HiGHS and read their duals.

Uses pyomo's current solver interface (``pyomo.contrib.solver``, the ``highs``
solver built on ``highspy``). ``solve`` loads the primal solution into the
model's variables and, for LPs, the constraint duals into an import suffix
named ``dual`` (added when the model has none); ``duals`` reads them back as a
numpy array. A model without an optimal or feasible solution raises
``InfeasibleError``, ``UnboundedError`` or ``SolveError`` naming the model.

Safety: HiGHS runs silent (``output_flag`` off unless ``tee``) and under a time limit
(``DEFAULT_TIME_LIMIT``, 120 s, unless the caller gives one). Before the hand-over every
number of the model (variable bounds and fixed values, constraint bounds, coefficients
and constants) must be finite and at most ``MODEL_NUMBER_MAX`` in magnitude, else
``SolveError`` names the model and the component. That matters beyond tidiness: pyomo
captures HiGHS's console through a pipe while the model is handed over, and a model
full of NaN bounds makes HiGHS write one error line per row into that pipe; past the
pipe's capacity the process blocks for good.

Dual convention (HiGHS through pyomo): the dual of a constraint is the rate of
change of the optimal objective per unit increase of its right-hand side, so
a binding ``<=`` capacity in a maximisation has a non-negative dual.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo
from pyomo.contrib.solver.common.results import SolutionStatus, TerminationCondition
from pyomo.contrib.solver.common.util import NoDualsError, NoReducedCostsError
from pyomo.contrib.solver.solvers.highs import Highs
from pyomo.repn.standard_repn import generate_standard_repn

DEFAULT_TIME_LIMIT = 120.0
"""Wall-clock limit of a solve, seconds, when the caller gives none (``math.inf``: no limit)."""

MODEL_NUMBER_MAX = 1e15
"""Largest magnitude of a bound, coefficient or constant handed to HiGHS (its
``large_matrix_value``; bounds of 1e20 and beyond would silently read as infinite)."""


class SolveError(RuntimeError):
    """The solver ended without a usable solution (or the model cannot be handed to it)."""


class InfeasibleError(SolveError):
    """The model is infeasible (or HiGHS could not tell infeasible from unbounded)."""


class UnboundedError(SolveError):
    """The model's objective is unbounded."""


class SolveStatus(enum.Enum):
    """Quality of the solution ``solve`` loaded into the model."""

    OPTIMAL = "optimal"
    """Proven optimal (within HiGHS's tolerances and, for a MILP, its gap)."""
    FEASIBLE = "feasible"
    """Feasible but not proven optimal: a time or iteration limit stopped the solver (a MILP only)."""


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


def _number_problem(value: object) -> str | None:
    """Why a number cannot go to HiGHS (not finite, or beyond ``MODEL_NUMBER_MAX``), or None."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return f"{value!r} is not a number"
    if not math.isfinite(number):
        return f"{number} is not finite"
    if abs(number) > MODEL_NUMBER_MAX:
        return f"{number:g} exceeds {MODEL_NUMBER_MAX:g} in magnitude"
    return None


def _linear_problem(expr: object) -> str | None:
    """The first bad coefficient or constant of a linear expression, or None."""
    repn = generate_standard_repn(expr, quadratic=False, compute_values=True)
    for var, coef in zip(repn.linear_vars, repn.linear_coefs, strict=True):
        problem = _number_problem(coef)
        if problem is not None:
            return f"coefficient of {var.name}: {problem}"
    problem = _number_problem(repn.constant)
    return None if problem is None else f"constant: {problem}"


def _bound_problem(value: object) -> str | None:
    """Why a bound cannot go to HiGHS; None (no bound) and an infinite bound are fine."""
    if value is None or (isinstance(value, float) and math.isinf(value)):
        return None
    return _number_problem(value)


def check_model_numbers(model: pyo.Block) -> None:
    """Check every number HiGHS would receive from a model, before it is handed over.

    Variable bounds and fixed values, constraint bounds, and the coefficients and constants
    of the constraints and active objectives must be finite and at most ``MODEL_NUMBER_MAX``
    in magnitude (an absent or infinite bound is fine: it means no bound).

    Args:
        model: the pyomo model (or block).

    Raises:
        SolveError: naming the model and the first bad component.
    """
    name = model.name

    def fail(component: str, problem: str) -> SolveError:
        return SolveError(
            f"model {name!r}: {component}: {problem} (the model's numbers come from the inputs: "
            f"each must be finite and at most {MODEL_NUMBER_MAX:g} in magnitude)"
        )

    def bounds(component: pyo.Var | pyo.Constraint) -> dict[str, object]:
        try:
            return {"lower bound": component.lb, "upper bound": component.ub}
        except ValueError as exc:  # pyomo refuses a NaN bound when it evaluates it
            raise fail(component.name, str(exc)) from None

    for var in model.component_data_objects(pyo.Var, active=True, descend_into=True):
        if var.fixed:
            if (problem := _number_problem(var.value)) is not None:
                raise fail(f"fixed value of {var.name}", problem)
            continue
        for what, value in bounds(var).items():
            if (problem := _bound_problem(value)) is not None:
                raise fail(f"{what} of {var.name}", problem)
    for con in model.component_data_objects(pyo.Constraint, active=True, descend_into=True):
        for what, value in bounds(con).items():
            if (problem := _bound_problem(value)) is not None:
                raise fail(f"{what} of {con.name}", problem)
        if (problem := _linear_problem(con.body)) is not None:
            raise fail(con.name, problem)
    for obj in model.component_data_objects(pyo.Objective, active=True, descend_into=True):
        if (problem := _linear_problem(obj.expr)) is not None:
            raise fail(f"objective {obj.name}", problem)


def solve(
    model: pyo.ConcreteModel, *, tee: bool = False, time_limit: float | None = None
) -> SolveResult:
    """Solve a pyomo model with HiGHS and load the solution (and LP duals) into it.

    HiGHS runs silent unless ``tee`` and under a time limit; the model's numbers are
    checked first (``check_model_numbers``).

    Args:
        model: a concrete LP or MILP with one active objective.
        tee: stream the HiGHS log to stdout (off: HiGHS writes nothing).
        time_limit: wall-clock limit in seconds; None: ``DEFAULT_TIME_LIMIT`` (read at call
            time), ``math.inf``: no limit. When a MILP hits it with a feasible incumbent, that
            incumbent is loaded with status FEASIBLE; an LP stopped by it is a ``SolveError``
            (a basis that is not optimal is no answer, and it has no valid duals).

    Returns:
        ``SolveResult(status, objective, solve_seconds, bound)``.

    Raises:
        ValueError: ``time_limit`` is not positive.
        InfeasibleError: the model is infeasible (or infeasible-or-unbounded).
        UnboundedError: the objective is unbounded.
        SolveError: a number of the model is NaN, infinite or huge; HiGHS is unavailable,
            failed, or stopped (e.g. at the time limit) without a usable solution.
    """
    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    if not limit > 0:
        raise ValueError(f"time_limit: must be positive, got {time_limit!r}")
    solver = Highs()
    if not solver.available():
        raise SolveError("HiGHS is not available (install highspy)")
    name = model.name
    check_model_numbers(model)
    is_lp = not _is_mip(model)
    if is_lp and model.component("dual") is None:
        model.dual = pyo.Suffix(direction=pyo.Suffix.IMPORT)
    results = solver.solve(
        model,
        tee=tee,
        time_limit=None if math.isinf(limit) else float(limit),
        solver_options={"output_flag": bool(tee), "log_to_console": bool(tee)},
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
    elif term in _LIMITS and has_solution and not is_lp:
        status = SolveStatus.FEASIBLE
    elif term == TerminationCondition.maxTimeLimit:
        raise SolveError(
            f"model {name!r}: HiGHS hit the time limit of {limit:g} s "
            f"without {'an optimal' if is_lp else 'a feasible'} solution"
        )
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
