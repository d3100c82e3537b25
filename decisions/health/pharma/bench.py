"""``decisions bench pharma``: the figures the pharma chain promises, measured.

One flat dict (printed as JSON by the CLI):

- ``pharma_sens_ms``: best-of-N wall time of the full CQA x CPP Jacobian (``jax.jacrev``,
  jitted, float32) after compilation, at the SNAPO operating point (paper: 20 ICH Q8
  sensitivities in 74.5 ms); ``jacobian_compile_seconds``;
- ``n_sensitivities`` (CQAs x CPPs from that one call), ``n_nonzero_sensitivities``,
  ``n_cross_unit_sensitivities`` (non-zero, CPP upstream of the unit that last changes the
  CQA), ``n_structural_zeros`` (exactly zero: no path from the CPP to the CQA);
- ``fd_max_rel_err``: float64 Jacobian vs float64 central finite differences at the SNAPO
  operating point (``sensitivity.fd_check``: it raises if any value it compares, or any value
  of the traced programs, is not float64, or if the two tables are identical, so the figure
  is a real float64 comparison and never exactly zero, whatever the process compiled before);
- ``snapo_yield`` / ``baseline_yield``: expected yield (%) of the SNAPO profiles and of the best
  constant-temperature grid point, on the same fresh draws; ``*_compliance``: share of those
  draws meeting every specification (hard check); ``*_nominal_meets``: every spec met at the
  nominal constants; ``yield_gain``;
- ``design_space_ms``: best-of-N time of a 25 x 25 grid x 256 draws probability map after
  compilation; ``train_seconds`` (compile included), ``baseline_seconds``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.timing import best_of
from decisions.health.pharma import sensitivity
from decisions.health.pharma.compare import compare_with_baseline
from decisions.health.pharma.design_space import DesignSpaceSettings, probability_grid
from decisions.health.pharma.params import CPP_NAMES, draw_constants, grid
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.snapo_policy import OptimiseSettings, optimise, problem
from decisions.health.pharma.spec import BaselineSettings

ProgressFn = Callable[[str, int, int], None]


def run_bench(
    progress: ProgressFn | None = None,
    *,
    scenario: Scenario | None = None,
    settings: OptimiseSettings | None = None,
    design: DesignSpaceSettings | None = None,
    baseline: BaselineSettings | None = None,
) -> dict[str, Any]:
    """Measure every pharma figure on the default (or a given) scenario.

    Args:
        progress: optional ``(task, done, total)`` callback.
        scenario: the scenario (default ``Scenario()``).
        settings: SNAPO settings (default ``OptimiseSettings()``).
        design: design-space settings (default 25 x 25 x 256).
        baseline: best-constant grid search settings (default ``BaselineSettings()``: an
            11 x 11 x 6 grid, 256 draws per candidate, two zoomed passes).

    Returns:
        A flat dict of figures (floats and ints).
    """
    report = progress or (lambda task, done, total: None)
    scenario = scenario or Scenario()
    settings = settings or OptimiseSettings()
    design = design or DesignSpaceSettings()
    g = grid(scenario)
    p = problem(scenario)
    figures: dict[str, Any] = {"eval_samples": settings.eval_samples}

    report("SNAPO training", 0, 1)
    result = optimise(scenario, settings)
    report("SNAPO training", 1, 1)
    assert result.evaluation is not None
    figures["train_seconds"] = result.train_seconds

    report("best constant baseline", 0, 1)
    start = time.perf_counter()
    comparison = compare_with_baseline(result, baseline)
    figures["baseline_seconds"] = time.perf_counter() - start
    report("best constant baseline", 1, 1)
    snapo, base = result.evaluation, comparison.baseline
    figures.update(
        {
            "snapo_yield": snapo.mean_yield,
            "snapo_compliance": snapo.compliance,
            "snapo_nominal_meets": snapo.nominal_meets,
            "baseline_yield": base.mean_yield,
            "baseline_compliance": base.compliance,
            "baseline_nominal_meets": base.nominal_meets,
            "baseline_feasible": comparison.search.feasible,
            "yield_gain": snapo.mean_yield - base.mean_yield,
        }
    )
    for method, row in comparison.table.iterrows():
        prefix = "snapo" if method == "snapo" else "baseline"
        for name in CPP_NAMES:
            figures[f"{prefix}_{name}"] = float(row[name])

    report("sensitivities", 0, 1)
    cpps = jnp.asarray(result.cpps)
    start = time.perf_counter()
    jacobian = jax.block_until_ready(sensitivity.cqa_jacobian(cpps, result.profiles, p.nominal, g))
    figures["jacobian_compile_seconds"] = time.perf_counter() - start
    figures["pharma_sens_ms"] = 1e3 * best_of(
        lambda: sensitivity.cqa_jacobian(cpps, result.profiles, p.nominal, g), 50
    )
    nonzero, cross = sensitivity.count_sensitivities(jacobian)
    figures["n_sensitivities"] = int(np.size(jacobian))
    figures["n_nonzero_sensitivities"] = nonzero
    figures["n_cross_unit_sensitivities"] = cross
    figures["n_structural_zeros"] = int((np.asarray(jacobian) == 0.0).sum())
    figures["fd_max_rel_err"] = sensitivity.fd_check(scenario, result.cpps, result.profiles)[0]
    report("sensitivities", 1, 1)

    report("design space", 0, 1)
    xs = jnp.linspace(design.x_low, design.x_high, design.points, dtype=jnp.float32)
    ys = jnp.linspace(design.y_low, design.y_high, design.points, dtype=jnp.float32)
    draws = draw_constants(jax.random.PRNGKey(design.seed), p.nominal, p.cv, design.samples)
    ix, iy = CPP_NAMES.index(design.cpp_x.value), CPP_NAMES.index(design.cpp_y.value)

    def run_map() -> jax.Array:
        return probability_grid(xs, ys, cpps, result.profiles, draws, p.limits, g, ix, iy)

    figures["design_space_ms"] = 1e3 * best_of(run_map, 3)
    figures["design_space_points"] = design.points**2
    figures["design_space_samples"] = design.samples
    figures["design_space_max_probability"] = float(jnp.max(run_map()))
    report("design space", 1, 1)
    return figures


if (
    __name__ == "__main__"
):  # pragma: no cover - `python -m decisions.health.pharma.bench` until the CLI has it
    import json
    import sys

    sys.stdout.write(json.dumps(run_bench(), sort_keys=True, indent=1) + "\n")


SMOKE_BUDGET: dict[str, Any] = {
    "settings": OptimiseSettings(steps=5, samples_per_step=4, eval_samples=16, log_every=5),
    "design": DesignSpaceSettings(points=2, samples=4),
    "baseline": BaselineSettings(samples=8, points=(2, 2, 2), refinements=0),
}
"""A benchmark that runs in seconds (the platform's conformance test)."""
