"""SNAPO profiles next to the best constant-temperature baseline, on the same fresh draws."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import pandas as pd

from decisions.health.pharma import baselines
from decisions.health.pharma.evaluation import Evaluation, evaluate
from decisions.health.pharma.params import CPP_NAMES, grid
from decisions.health.pharma.snapo_policy import OptimisedProfiles, evaluation_key, problem
from decisions.health.pharma.spec import BaselineSettings


@dataclass(frozen=True)
class Comparison:
    """SNAPO vs the best constant operation.

    Attributes:
        table: one row per method (``snapo``, ``best_constant``): mean_yield (%), compliance,
            nominal_meets and the CPPs.
        search: the baseline grid search.
        baseline: the baseline's hard evaluation on SNAPO's evaluation draws.
    """

    table: pd.DataFrame
    search: baselines.GridSearch
    baseline: Evaluation


def compare_with_baseline(
    result: OptimisedProfiles,
    baseline: BaselineSettings | None = None,
) -> Comparison:
    """Find the best constant operation and evaluate it where SNAPO was evaluated.

    Args:
        result: a SNAPO result with its evaluation (from ``optimise``).
        baseline: the grid search's draws per candidate, grid points and zoomed passes
            (default ``BaselineSettings()``: 256 draws, an 11 x 11 x 6 grid, two zooms).
    """
    if result.evaluation is None:
        raise ValueError("result has no evaluation (loaded profiles): run optimise")
    settings, scenario = result.settings, result.scenario
    baseline = baseline or BaselineSettings()
    g = grid(scenario)
    p = problem(scenario)
    search = baselines.best_constant(
        p.cpps,
        p.nominal,
        p.cv,
        p.limits,
        p.bounds,
        g,
        key=jax.random.PRNGKey(settings.seed + 1),
        samples=baseline.samples,
        points=baseline.points,
        required_compliance=settings.training_compliance,
        refinements=baseline.refinements,
    )
    base = evaluate(
        jnp.asarray(search.cpps, jnp.float32),
        search.profiles,
        p.nominal,
        p.cv,
        p.limits,
        g,
        key=evaluation_key(settings) if result.eval_key is None else result.eval_key,
        samples=settings.eval_samples,
    )
    rows = []
    for name, ev, cpps in (("snapo", result.evaluation, result.cpps), ("best_constant", base, search.cpps)):
        row = {
            "method": name,
            "mean_yield": ev.mean_yield,
            "compliance": ev.compliance,
            "nominal_meets": ev.nominal_meets,
        }
        row.update({cpp: float(v) for cpp, v in zip(CPP_NAMES, cpps, strict=True)})
        rows.append(row)
    return Comparison(table=pd.DataFrame(rows).set_index("method"), search=search, baseline=base)
