"""The pharma study: SNAPO against the best constant operation, sensitivities and the design space, with the
chain trajectories of every operating point."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.core.pytrees import cast_leaves
from decisions.core.timing import best_of
from decisions.health.pharma import sensitivity
from decisions.health.pharma.chain import Profiles, constant_profiles
from decisions.health.pharma.compare import Comparison, compare_with_baseline
from decisions.health.pharma.design_space import design_space
from decisions.health.pharma.evaluation import Evaluation, evaluate
from decisions.health.pharma.params import CPP_NAMES, cpp_vector, grid, spec_limits
from decisions.health.pharma.report import PharmaTables, sensitivity_long
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.snapo_policy import (
    OptimisedProfiles,
    evaluation_key,
    optimise,
    problem,
    profile_frame,
)
from decisions.health.pharma.spec import BaselineSettings, DesignSpaceSettings, Method, OptimiseSettings
from decisions.health.pharma.trajectories import simulate_chain


@dataclass(kw_only=True)
class Study(PharmaTables):
    """What one study found: its tables (``PharmaTables``) and the fields below.

    Attributes:
        figures: the flat figures, timings included (``metrics()``).
        result: SNAPO's ``OptimisedProfiles`` when it ran.
    """

    figures: dict[str, float] = field(default_factory=dict)
    result: OptimisedProfiles | None = None

    def metrics(self) -> dict[str, float]:
        """The headline figures: each operating point's yield and compliance, the gain, counts and timings."""
        return dict(self.figures)


@dataclass(frozen=True)
class Versus:
    """SNAPO trained and evaluated, and the best constant operation evaluated on the same fresh draws.

    Attributes:
        result: SNAPO's result, with its hard evaluation.
        comparison: the baseline's grid search and evaluation (``compare.compare_with_baseline``).
        baseline_seconds: wall time of the baseline's search and evaluation.
    """

    result: OptimisedProfiles
    comparison: Comparison
    baseline_seconds: float

    def points(self) -> dict[str, tuple[np.ndarray, Profiles]]:
        """Each method's operating point (CPP vector, profiles): ``snapo``, then ``best_constant``."""
        search = self.comparison.search
        return {"snapo": (np.asarray(self.result.cpps), self.result.profiles),
                "best_constant": (np.asarray(search.cpps), search.profiles)}

    def evaluations(self) -> dict[str, Evaluation]:
        """Each method's hard evaluation on the common draws, in ``points``' order."""
        assert self.result.evaluation is not None
        return {"snapo": self.result.evaluation, "best_constant": self.comparison.baseline}

    def figures(self) -> dict[str, float]:
        """Training and baseline times, each method's yield, compliance and nominal check, the gain."""
        figures = {"train_seconds": float(self.result.train_seconds), "baseline_seconds": self.baseline_seconds}
        for method, ev in self.evaluations().items():
            figures[f"{method}_yield"] = float(ev.mean_yield)
            figures[f"{method}_compliance"] = float(ev.compliance)
            figures[f"{method}_nominal_meets"] = float(ev.nominal_meets)
        figures["best_constant_feasible"] = float(self.comparison.search.feasible)
        figures["yield_gain"] = figures["snapo_yield"] - figures["best_constant_yield"]
        return figures


def run_study(
    scenario: Scenario,
    method: Method,
    settings: OptimiseSettings,
    baseline: BaselineSettings,
    design: DesignSpaceSettings,
    *,
    progress: Progress = silent,
) -> Study:
    """Run what ``method`` asks for: SNAPO against the best constant operation (or the scenario's own
    operating point evaluated), then the sensitivities and the design space at the first operating point,
    then the chain trajectories of every operating point."""
    figures: dict[str, float] = {}
    result: OptimisedProfiles | None = None
    training_curve: pd.DataFrame | None = None
    if method.optimises:
        versus = optimise_and_compare(scenario, settings, baseline, progress)
        result, points, evaluations = versus.result, versus.points(), versus.evaluations()
        figures.update(versus.figures())
        training_curve = result.curve()
    else:
        points = {"nominal": (np.asarray(cpp_vector(scenario)), constant_profiles(grid(scenario)))}
        evaluations = {"nominal": _evaluate_nominal(scenario, settings, progress)}
    headline_cpps, headline_profiles = next(iter(points.values()))
    figures["nominal_meets"] = float(next(iter(evaluations.values())).nominal_meets)

    sens = pd.DataFrame(columns=["cqa", "cpp", "value", "scaled", "cross_unit", "structural_zero"])
    if method.sensitivities:
        sens = _sensitivities(scenario, headline_cpps, headline_profiles, progress, figures)
    space = pd.DataFrame(columns=[design.cpp_x.value, design.cpp_y.value, "probability"])
    if method.design_space:
        space = _design_space(
            scenario, design, settings.compliance_target, headline_cpps, headline_profiles, progress, figures
        )

    progress("chain trajectories", 0, len(points))
    tables = _operating_point_tables(scenario, points, evaluations, progress)
    return Study(**tables, sensitivity=sens, design_space=space, training_curve=training_curve, figures=figures,
                 result=result)


def optimise_and_compare(
    scenario: Scenario, settings: OptimiseSettings, baseline: BaselineSettings | None, progress: Progress = silent
) -> Versus:
    """SNAPO training and the best constant operation (``baseline``, default ``BaselineSettings()``) on the
    same fresh draws."""

    def training(done: int, total: int, value: float) -> None:
        progress("SNAPO training", done, total)
        if done == total:  # the hard re-evaluation on fresh draws follows inside ``optimise``
            progress("evaluation", 0, 1)

    result = optimise(scenario, settings, progress=training)
    progress("evaluation", 1, 1)
    assert result.evaluation is not None
    progress("best constant baseline", 0, 1)
    start = time.perf_counter()
    comparison = compare_with_baseline(result, baseline)
    seconds = time.perf_counter() - start
    progress("best constant baseline", 1, 1)
    return Versus(result, comparison, seconds)


def _evaluate_nominal(scenario: Scenario, settings: OptimiseSettings, progress: Progress) -> Evaluation:
    """Hard evaluation of the scenario's own operating point (flat profiles, linear cooling) on
    ``settings``' evaluation draws."""
    progress("evaluation", 0, 1)
    g, p = grid(scenario), problem(scenario)
    ev = evaluate(
        p.cpps,
        constant_profiles(g),
        p.nominal,
        p.cv,
        p.limits,
        g,
        key=evaluation_key(settings),
        samples=settings.eval_samples,
    )
    progress("evaluation", 1, 1)
    return ev


def _sensitivities(
    scenario: Scenario, cpps: np.ndarray, profiles: Profiles, progress: Progress, metrics: dict[str, float]
) -> pd.DataFrame:
    """The CQA x CPP Jacobian in long format; its counts and timing go into ``metrics``."""
    progress("sensitivities", 0, 1)
    g, p = grid(scenario), problem(scenario)
    x = jnp.asarray(cpps, jnp.float32)
    prof = cast_leaves(profiles, jnp.float32)
    start = time.perf_counter()
    jacobian = np.asarray(jax.block_until_ready(sensitivity.cqa_jacobian(x, prof, p.nominal, g)))
    metrics["sens_compile_seconds"] = time.perf_counter() - start
    metrics["sens_ms"] = 1e3 * best_of(lambda: sensitivity.cqa_jacobian(x, prof, p.nominal, g), 10, warmup=0)
    nonzero, cross = sensitivity.count_sensitivities(jacobian)
    metrics["n_sensitivities"] = float(np.size(jacobian))
    metrics["n_nonzero_sensitivities"] = float(nonzero)
    metrics["n_cross_unit_sensitivities"] = float(cross)
    progress("sensitivities", 1, 1)
    return sensitivity_long(
        sensitivity.table(jacobian), sensitivity.cross_unit_mask(), sensitivity.structural_zero_mask()
    )


def _design_space(
    scenario: Scenario,
    settings: DesignSpaceSettings,
    compliance_target: float,
    cpps: np.ndarray,
    profiles: Profiles,
    progress: Progress,
    metrics: dict[str, float],
) -> pd.DataFrame:
    """The design-space map, its columns named after the two CPPs; its figures (share of points
    meeting ``compliance_target``) go into ``metrics``."""
    progress("design space", 0, 1)
    start = time.perf_counter()
    frame = design_space(scenario, settings, cpps, profiles)
    metrics["design_space_seconds"] = time.perf_counter() - start
    probability = frame["probability"].to_numpy()
    metrics["design_space_max_probability"] = float(probability.max())
    metrics["design_space_share_meeting_target"] = float(np.mean(probability >= compliance_target))
    progress("design space", 1, 1)
    out = frame.rename(columns={"cpp_x": settings.cpp_x.value, "cpp_y": settings.cpp_y.value})
    out.attrs = {}
    return out


def _operating_point_tables(
    scenario: Scenario,
    points: Mapping[str, tuple[np.ndarray, Profiles]],
    evaluations: Mapping[str, Evaluation],
    progress: Progress,
) -> dict[str, pd.DataFrame]:
    """Comparison, CQA, profile, trajectory and filtration tables of every operating point."""
    limits = spec_limits(scenario)
    start_temperature = scenario.physics.crystalliser.start_temperature
    rows, cqas, profiles, trajectories, filtration = [], [], [], [], []
    for done, (method, (cpps, prof)) in enumerate(points.items(), start=1):
        ev = evaluations[method]
        row = {"method": method, "mean_yield": ev.mean_yield, "compliance": ev.compliance,
               "nominal_meets": ev.nominal_meets}
        row.update({name: float(v) for name, v in zip(CPP_NAMES, np.asarray(cpps), strict=True)})
        rows.append(row)
        cqas.append(ev.cqa_table(limits).assign(method=method))
        profiles.append(profile_frame(cpps, prof, start_temperature).assign(method=method))
        frames = simulate_chain(scenario, cpps, prof)
        trajectories.append(chain_long(frames, np.asarray(cpps)).assign(method=method))
        filtration.append(frames.filtration.assign(method=method))
        progress("chain trajectories", done, len(points))
    return {
        "comparison": pd.DataFrame(rows).set_index("method"),
        "cqa": _method_first(pd.concat(cqas, ignore_index=True)),
        "profiles": _method_first(pd.concat(profiles, ignore_index=True)),
        "trajectories": _method_first(pd.concat(trajectories, ignore_index=True)),
        "filtration": _method_first(pd.concat(filtration, ignore_index=True)),
    }


def chain_long(frames: Any, cpps: np.ndarray) -> pd.DataFrame:
    """Reactor, crystalliser and dryer trajectories in long format on one batch clock.

    Args:
        frames: ``trajectories.ChainFrames`` of one chain run.
        cpps: its CPP vector (the reaction and cooling times place the units on the clock;
            filtration takes no time).

    Returns:
        ``unit, time_h, batch_time_h, variable, value``.
    """
    offsets = {
        "reactor": 0.0,
        "crystalliser": float(cpps[CPP_NAMES.index("reaction_time")]),
        "dryer": float(cpps[CPP_NAMES.index("reaction_time")] + cpps[CPP_NAMES.index("cooling_time")]),
    }
    parts = []
    for unit, frame in (("reactor", frames.reactor), ("crystalliser", frames.crystalliser), ("dryer", frames.dryer)):
        long = frame.melt(id_vars="time_h", var_name="variable", value_name="value")
        long.insert(0, "unit", unit)
        long.insert(2, "batch_time_h", long["time_h"] + offsets[unit])
        parts.append(long)
    return pd.concat(parts, ignore_index=True)


def _method_first(frame: pd.DataFrame) -> pd.DataFrame:
    """Move the ``method`` column to the front."""
    return frame[["method", *(c for c in frame.columns if c != "method")]]
