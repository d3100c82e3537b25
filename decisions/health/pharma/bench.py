"""``decisions bench pharma``: the figures the pharma chain promises, measured.

One flat dict (printed as JSON by the CLI):

- ``pharma_sens_ms``: best-of-N wall time of the full CQA x CPP Jacobian (``jax.jacrev``,
  jitted, float32) after compilation, at the SNAPO operating point (paper: 20 ICH Q8
  sensitivities in 74.5 ms); ``jacobian_compile_seconds``; in the same run, the speed as ratios
  (``core.timing.bump_and_revalue``, interleaved best-of): ``chain_eval_ms`` (one jitted run of
  the chain, all CQAs), ``jacobian_over_evaluation`` (the Jacobian's cost in chain runs) and
  ``bump_over_jacobian`` (bump-and-revalue of the 7 CPPs, 8 chain runs at its cheaper of a
  loop and one vmapped batch, over the one Jacobian call);
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
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.bench_row import Row
from decisions.core.progress import Progress
from decisions.core.timing import best_of, bump_and_revalue
from decisions.health.pharma import chain, sensitivity
from decisions.health.pharma.design_space import DesignSpaceSettings, probability_grid
from decisions.health.pharma.params import CPP_NAMES, Grid, draw_constants, grid
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.snapo_policy import OptimisedProfiles, OptimiseSettings, Problem, problem
from decisions.health.pharma.spec import BaselineSettings
from decisions.health.pharma.study import Versus, optimise_and_compare

BUMP = 1e-3
"""CPP bump of the bump-and-revalue timing (its values are not used, only its time)."""


def run_bench(
    progress: Progress | None = None,
    *,
    scenario: Scenario | None = None,
    settings: OptimiseSettings | None = None,
    design: DesignSpaceSettings | None = None,
    baseline: BaselineSettings | None = None,
    timing_repeats: int = 20,
) -> dict[str, Any]:
    """Measure every pharma figure on the default (or a given) scenario.

    Args:
        progress: optional ``(task, done, total)`` callback.
        scenario: the scenario (default ``Scenario()``).
        settings: SNAPO settings (default ``OptimiseSettings()``).
        design: design-space settings (default 25 x 25 x 256).
        baseline: best-constant grid search settings (default ``BaselineSettings()``: an
            11 x 11 x 6 grid, 256 draws per candidate, two zoomed passes).
        timing_repeats: interleaved best-of rounds of the Jacobian against bump-and-revalue.

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

    versus = optimise_and_compare(scenario, settings, baseline, report)
    result = versus.result
    figures["train_seconds"] = result.train_seconds

    figures.update(_versus_baseline(versus))
    figures.update(_sensitivity_figures(report, scenario, result, p, g, timing_repeats))
    figures.update(_design_space_figures(report, design, result, p, g))
    return figures


def _versus_baseline(versus: Versus) -> dict[str, Any]:
    """SNAPO's yield, compliance and CPPs beside the best constant baseline's."""
    comparison = versus.comparison
    figures: dict[str, Any] = {"baseline_seconds": versus.baseline_seconds}
    snapo, base = versus.evaluations()["snapo"], comparison.baseline
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

    return figures


def _sensitivity_figures(
    report: Progress, scenario: Scenario, result: OptimisedProfiles, p: Problem, g: Grid, timing_repeats: int
) -> dict[str, Any]:
    """The CQA x CPP Jacobian: its cost against one evaluation and bump-and-revalue, its counts, its FD check."""
    figures: dict[str, Any] = {}
    report("sensitivities", 0, 1)
    cpps = jnp.asarray(result.cpps)
    start = time.perf_counter()
    jacobian = jax.block_until_ready(sensitivity.cqa_jacobian(cpps, result.profiles, p.nominal, g))
    figures["jacobian_compile_seconds"] = time.perf_counter() - start
    figures["pharma_sens_ms"] = 1e3 * best_of(
        lambda: sensitivity.cqa_jacobian(cpps, result.profiles, p.nominal, g), 50
    )
    bumped = bump_and_revalue(  # every CQA feeds the sum, so each revaluation runs the whole chain
        lambda x: jnp.sum(chain.cqas(x, result.profiles, p.nominal, g)),
        cpps,
        bump=BUMP,
        gradient=lambda: sensitivity.cqa_jacobian(cpps, result.profiles, p.nominal, g),
        chunks=(cpps.size + 1,),
        repeats=timing_repeats,
    )
    figures["chain_eval_ms"] = 1e3 * bumped.value_seconds
    figures["jacobian_over_evaluation"] = bumped.grad_cost_ratio
    figures["bump_over_jacobian"] = bumped.speedup
    figures["bump_method"] = bumped.method
    nonzero, cross = sensitivity.count_sensitivities(jacobian)
    figures["n_sensitivities"] = int(np.size(jacobian))
    figures["n_nonzero_sensitivities"] = nonzero
    figures["n_cross_unit_sensitivities"] = cross
    figures["n_structural_zeros"] = int((np.asarray(jacobian) == 0.0).sum())
    figures["fd_max_rel_err"] = sensitivity.fd_check(scenario, result.cpps, result.profiles)[0]
    report("sensitivities", 1, 1)

    return figures


def _design_space_figures(
    report: Progress, design: DesignSpaceSettings, result: OptimisedProfiles, p: Problem, g: Grid
) -> dict[str, Any]:
    """Time and size of the design-space probability map around SNAPO's operating point."""
    figures: dict[str, Any] = {}
    cpps = jnp.asarray(result.cpps)
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
    "timing_repeats": 2,
}
"""A benchmark that runs in seconds (the platform's conformance test)."""


README_ROWS: tuple[Row, ...] = (
    Row(
        "expected yield: SNAPO profiles / best constant temperatures (same fresh draws)",
        "{snapo_yield:.1f}% / {baseline_yield:.1f}% ({eval_samples} draws)",
    ),
    Row(
        "share of draws meeting every specification: SNAPO / best constant",
        "{snapo_compliance:.3f} / {baseline_compliance:.3f} (at nominal constants: {snapo_nominal_meets} / "
        "{baseline_nominal_meets})",
    ),
    Row(
        "full CQA x CPP Jacobian in one reverse-mode call",
        "{n_sensitivities} sensitivities ({n_nonzero_sensitivities} non-zero, {n_cross_unit_sensitivities} across "
        "units) in {pharma_sens_ms:.2f} ms after compile",
    ),
    Row(
        "the same, as ratios measured in the same run",
        "{jacobian_over_evaluation:.1f} chain runs ({chain_eval_ms:.3f} ms each); bump-and-revalue of the 7 CPPs / "
        "the Jacobian: {bump_over_jacobian:.2f}",
    ),
    Row("adjoint vs central finite differences, float64, max relative error", "{fd_max_rel_err:.1e}"),
    Row(
        "design-space probability map",
        "{design_space_points} grid points x {design_space_samples} draws in {design_space_ms:.0f} ms",
    ),
    Row("SNAPO training, compile included", "{train_seconds:.0f} s (best-constant search {baseline_seconds:.0f} s)"),
)
"""The README's pharma table (``decisions bench report``). The paper's figure (20 ICH Q8
sensitivities from 5 adjoint passes in 74.5 ms) is for another process model and machine."""
