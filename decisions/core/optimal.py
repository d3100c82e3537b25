"""Exact baselines: solve pyomo LP/MILP models with HiGHS (``solve``) and read their duals (``duals``).

A model is checked before the hand-over (``check_model_numbers``) and solved silent under a
time limit; no usable solution raises ``InfeasibleError``, ``UnboundedError`` or ``SolveError``.
A dual is the rate of change of the optimal objective per unit increase of the constraint's
right-hand side. Why the checks matter: ``docs/notes/core.md``.
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

# Wall-clock limit of a solve, seconds, when the caller gives none (``math.inf``: no limit).
DEFAULT_TIME_LIMIT = 120.0

MODEL_NUMBER_MAX = 1e15  # largest magnitude of a number handed to HiGHS (its large_matrix_value)


class SolveError(RuntimeError):
    """The solver ended without a usable solution (or the model cannot be handed to it)."""


class InfeasibleError(SolveError):
    """The model is infeasible (or HiGHS could not tell infeasible from unbounded)."""


class UnboundedError(SolveError):
    """The model's objective is unbounded."""


class SolveStatus(enum.Enum):
    """Quality of the solution ``solve`` loaded into the model."""

    # Proven optimal (within HiGHS's tolerances and, for a MILP, its gap).
    OPTIMAL = "optimal"
    # Feasible but not proven optimal: a time or iteration limit stopped the solver (a MILP only).
    FEASIBLE = "feasible"


@dataclass(frozen=True)
class SolveResult:
    """What ``solve`` returns (the solution itself is loaded into the model)."""

    # Optimal, or feasible when a limit was hit.
    status: SolveStatus
    # Objective value of the loaded solution.
    objective: float
    # Wall time of the solver call (model hand-over included).
    solve_seconds: float
    # Best proven bound on the objective (equals ``objective`` for a solved LP), if known.
    bound: float | None = None


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
    """Check that every bound, fixed value, coefficient and constant HiGHS would receive from a model
    is finite and at most ``MODEL_NUMBER_MAX`` in magnitude (an absent or infinite bound is fine).

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
    """Solve a pyomo LP or MILP with HiGHS and load the solution (and LP duals) into it.

    The model's numbers are checked first; HiGHS runs silent unless ``tee``. ``time_limit`` None
    is ``DEFAULT_TIME_LIMIT``, ``math.inf`` none; a MILP stopped by it with an incumbent is
    FEASIBLE, an LP stopped by it is a ``SolveError``.

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
    """Float64 duals of a (scalar or indexed) constraint after ``solve``, in ``constraint.keys()`` order.

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
