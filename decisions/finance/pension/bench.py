"""The figures the pension ALM slice promises, measured.

``run_bench(progress)`` returns them as a flat dict; ``python -m
decisions.finance.pension.bench`` prints them as one JSON object (progress on stderr):

- ``speedup_K10`` ... ``speedup_K1000``: with K key-rate risk factors, the time of K + 1
  revaluations (bump and revalue: the base and one bump per key rate, each a full
  jitted valuation of the SNAPO objective with the trained policy on the same paths)
  over the time of one ``jax.value_and_grad`` pass over *all* inputs (which also gives
  every other sensitivity). Bump-and-revalue is costed at its fastest measured rate:
  a loop of jitted single valuations or a jitted ``vmap`` over chunks of bumped curves,
  whichever is cheaper per valuation (``bump_method_K*``). Compilation is excluded and
  every time is the best of repeated calls, taken in turn (shared, noisy CPUs only ever
  make a call slower, so best-of timing is fair to both sides). The timing uses 8192
  paths: with ~1000 paths XLA runs a single valuation (and the adjoint pass) on one
  core while a vmapped chunk of bumped curves is large enough to use every core, which
  would compare one core against all of them.
- ``fd_max_rel_err``: adjoint against central finite differences in float64 (x64 enabled
  only inside ``jax.enable_x64``) on a subset of inputs, on the smooth SNAPO objective;
  ``fd_max_rel_err_hard``: the same on the hard objective (piecewise smooth: diagnostic).
- ``snapo_objective`` / ``fixed_mix_objective`` with their standard errors and the paired
  ``snapo_minus_fixed_mix`` (+ ``_stderr``) on fresh evaluation paths; the fixed mix is
  the best of a grid and a SNAPO-trained constant policy, chosen on training paths.
  ``snapo_curve_blind_*``: the same network trained seeing only the funding ratio and
  time, not the curve factors: how much of the gain is funding-ratio management and
  how much is timing the (mean-reverting, hence predictable) curve.
- ``train_seconds`` (SNAPO, compile included), ``n_sensitivities`` (inputs of the default
  scenario differentiated in one pass; ``n_sensitivities_K1000`` with 1000 key rates).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.bench_row import Row
from decisions.core.evaluate import compare
from decisions.core.float64_check import require_float64_program
from decisions.core.progress import Progress
from decisions.core.timing import VMAP_CHUNKS, bump_and_revalue
from decisions.finance.pension import baselines
from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.params import PensionParams
from decisions.finance.pension.policy import FUNDING_AND_TIME
from decisions.finance.pension.scenario import Scenario, YieldCurve
from decisions.finance.pension.sensitivity import count_sensitivities
from decisions.finance.pension.simulator import draw_normals, rollout

KEY_RATE_COUNTS: tuple[int, ...] = (10, 50, 200, 1000)
BUMP = 1e-4
"""Key-rate bump of bump-and-revalue (1 bp)."""


def run_bench(
    progress: Progress | None = None,
    *,
    scenario: Scenario | None = None,
    settings: sp.PensionSnapoSettings | None = None,
    eval_paths: int = 2048,
    timing_paths: int = 8192,
    key_rate_counts: tuple[int, ...] = KEY_RATE_COUNTS,
    seed: int = 0,
) -> dict[str, Any]:
    """Measure every pension figure on the default (or a given) scenario: a flat dict (floats, ints, strings).

    SNAPO (``settings``) meets the fixed mix on ``eval_paths`` fresh common paths drawn from ``seed``;
    the speedups time a valuation on ``timing_paths`` paths (enough to use every core) for each of
    ``key_rate_counts`` key rates.
    """
    report = progress or (lambda task, done, total: None)
    scenario = scenario or Scenario()
    settings = settings or sp.PensionSnapoSettings()
    key_train, key_fixed, key_eval, key_time = jax.random.split(jax.random.PRNGKey(seed), 4)
    params = to_params(scenario)
    figures: dict[str, Any] = {"horizon_years": scenario.horizon_years, "eval_paths": eval_paths}

    report("SNAPO training", 0, settings.steps)
    trained = sp.train_policy(params, settings, key=key_train, progress=lambda d, t, v: report("SNAPO training", d, t))
    figures["train_seconds"] = trained.train_seconds
    report("fixed-mix search", 0, 1)
    fixed = baselines.best_fixed_mix(params, settings, key=key_fixed)
    report("fixed-mix search", 1, 1)
    figures["fixed_mix_choice"] = fixed.name

    report("SNAPO training (curve-blind)", 0, settings.steps)
    blind = sp.train_policy(
        params,
        settings,
        state_gate=FUNDING_AND_TIME,
        key=key_train,
        progress=lambda d, t, v: report("SNAPO training (curve-blind)", d, t),
    )

    normals = draw_normals(key_eval, eval_paths, params.months, params.n_shocks)
    values = {
        "snapo": np.asarray(sp.evaluate(trained, params, normals)),
        "snapo_curve_blind": np.asarray(sp.evaluate(blind, params, normals)),
        "fixed_mix": np.asarray(sp.evaluate(fixed.policy, params, normals)),
    }
    table = compare(values, reference="fixed_mix")
    figures["snapo_objective"] = float(table.loc["snapo", "mean"])
    figures["snapo_objective_stderr"] = float(table.loc["snapo", "stderr"])
    figures["fixed_mix_objective"] = float(table.loc["fixed_mix", "mean"])
    figures["fixed_mix_objective_stderr"] = float(table.loc["fixed_mix", "stderr"])
    figures["snapo_minus_fixed_mix"] = float(table.loc["snapo", "diff_mean"])
    figures["snapo_minus_fixed_mix_stderr"] = float(table.loc["snapo", "diff_stderr"])
    figures["snapo_curve_blind_objective"] = float(table.loc["snapo_curve_blind", "mean"])
    figures["snapo_curve_blind_minus_fixed_mix"] = float(table.loc["snapo_curve_blind", "diff_mean"])
    figures["snapo_curve_blind_minus_fixed_mix_stderr"] = float(table.loc["snapo_curve_blind", "diff_stderr"])
    figures["n_sensitivities"] = sp.sensitivities(trained, params, normals).count
    figures["timing_paths"] = timing_paths

    timing_normals = draw_normals(key_time, timing_paths, params.months, params.n_shocks)
    for i, k in enumerate(key_rate_counts):
        report("bump-and-revalue timing", i, len(key_rate_counts))
        figures.update(key_rate_timing(trained, with_key_rates(scenario, k), timing_normals, k))
    report("bump-and-revalue timing", len(key_rate_counts), len(key_rate_counts))

    report("finite-difference check", 0, 1)
    figures.update(fd_errors(trained, scenario))
    report("finite-difference check", 1, 1)
    return figures


def with_key_rates(scenario: Scenario, k: int) -> Scenario:
    """The scenario on a curve of ``k`` key rates from 3 months to 60 years (geometric spacing)."""
    tenors = np.geomspace(0.25, 60.0, k)
    x = tenors / 2.0
    slope = (1 - np.exp(-x)) / x
    rates = 0.035 - 0.015 * slope + 0.01 * (slope - np.exp(-x))
    curve = YieldCurve(
        tenors=tenors.tolist(),
        rates=rates.tolist(),
        ns_decay=scenario.curve.ns_decay,
        speeds=scenario.curve.speeds,
        volatilities=scenario.curve.volatilities,
    )
    return scenario.model_copy(update={"curve": curve})


def key_rate_timing(
    trained: sp.TrainedPensionPolicy,
    scenario: Scenario,
    normals: jax.Array,
    k: int,
    *,
    chunks: tuple[int, ...] = VMAP_CHUNKS,
) -> dict[str, Any]:
    """Bump-and-revalue (vectorised in ``chunks``) against one adjoint pass with ``k`` key rates, on the
    common ``(P, N, S)`` ``normals``: ``speedup_K{k}`` (bump over adjoint seconds), ``bump_method_K{k}``,
    ``bump_seconds_K{k}``, ``seconds_per_revaluation_K{k}`` (each method), ``value_seconds_K{k}``,
    ``value_and_grad_seconds_K{k}``, ``grad_cost_ratio_K{k}``, ``n_sensitivities_K{k}``.
    """
    params = to_params(scenario)
    policy_params = sp.cast(trained.params, params)
    tau = trained.settings.temperature_end

    def objective(inputs: PensionParams) -> jax.Array:
        outcome, _ = rollout(trained.policy, policy_params, inputs, normals, tau=tau, smooth=True)
        return jnp.mean(outcome.value)

    grad_fn = jax.jit(jax.value_and_grad(objective))
    timing = bump_and_revalue(
        lambda rates: objective(params.replace(key_rates=rates)),
        params.key_rates,
        bump=BUMP,
        gradient=lambda: grad_fn(params),
        chunks=chunks,
    )
    _, grads = grad_fn(params)
    out: dict[str, Any] = {
        f"speedup_K{k}": timing.speedup,
        f"bump_method_K{k}": timing.method,
        f"bump_seconds_K{k}": timing.bump_seconds,
        f"value_seconds_K{k}": timing.value_seconds,
        f"value_and_grad_seconds_K{k}": timing.gradient_seconds,
        f"grad_cost_ratio_K{k}": timing.grad_cost_ratio,
        f"n_sensitivities_K{k}": count_sensitivities(grads),
    }
    for name, seconds in timing.seconds_per_revaluation.items():
        out[f"seconds_per_revaluation_K{k}_{name}"] = seconds
    return out


FD_CHECKS: tuple[tuple[str, int | None], ...] = (
    ("key_rates", 0),
    ("key_rates", -1),
    ("risky_mean", 0),
    ("risky_vol", -1),
    ("correlation", 0),
    ("correlation", -1),
    ("factor_vol", 0),
    ("mortality_scale", None),
    ("initial_assets", None),
    ("contribution_min", None),
    ("contribution_max", None),
    ("floor", None),
)
"""``(input, index)`` pairs checked against finite differences (plus key rates at a third and two
thirds of the curve); indices past the end of a leaf are skipped."""


def _fd_checks(params: PensionParams) -> list[tuple[str, int | None]]:
    k = len(params.tenors)
    checks = list(FD_CHECKS) + [("key_rates", k // 3), ("key_rates", (2 * k) // 3)]
    out = []
    for field, index in checks:
        size = int(np.size(getattr(params, field)))
        if index is None:
            out.append((field, None))
        elif -size <= index < size:
            out.append((field, index % size))
    return sorted(set(out), key=lambda c: (c[0], -1 if c[1] is None else c[1]))


def fd_errors(
    trained: sp.TrainedPensionPolicy, scenario: Scenario, *, horizon_years: int = 5, paths: int = 64, seed: int = 7
) -> dict[str, float]:
    """Largest relative gap between adjoint and central finite differences, in float64.

    Returns:
        ``fd_max_rel_err`` (smooth SNAPO objective at the final temperature) and
        ``fd_max_rel_err_hard`` (hard hinge).
    """
    short = scenario.model_copy(update={"horizon_years": horizon_years})
    out: dict[str, float] = {}
    with jax.enable_x64(True):
        params = to_params(short, dtype=jnp.float64)
        policy_params = sp.cast(trained.params, params)
        normals = draw_normals(jax.random.PRNGKey(seed), paths, params.months, params.n_shocks, jnp.float64)
        tau = trained.settings.temperature_end
        floor = 1e-9 * float(params.initial_assets)
        for smooth, name in ((True, "fd_max_rel_err"), (False, "fd_max_rel_err_hard")):

            def value(p: PensionParams, smooth: bool = smooth) -> jax.Array:
                outcome, _ = rollout(trained.policy, policy_params, p, normals, tau=tau, smooth=smooth)
                return jnp.mean(outcome.value)

            require_float64_program("the pension objective", value, params)
            value_fn = jax.jit(value)
            grads = jax.jit(jax.grad(value))(params)
            worst = 0.0
            for field, index in _fd_checks(params):
                adjoint = float(getattr(grads, field) if index is None else getattr(grads, field)[index])
                fd = central_difference(value_fn, params, field, index)
                worst = max(worst, abs(adjoint - fd) / max(abs(adjoint), abs(fd), floor))
            out[name] = worst
    return out


def central_difference(
    value: Callable[[PensionParams], jax.Array],
    params: PensionParams,
    field: str,
    index: int | None,
    *,
    rel_step: float = 1e-5,
    min_scale: float = 0.1,
) -> float:
    """Richardson-extrapolated central finite difference of ``value`` in one input.

    Args:
        field: the ``PensionParams`` leaf.
        index: the entry of the leaf (None for a scalar leaf).
        rel_step: step relative to the input's size.
        min_scale: smallest size used for the step.
    """
    base = getattr(params, field)
    size = float(jnp.abs(base if index is None else base[index]))
    step = rel_step * max(size, min_scale)

    def shifted(delta: float) -> PensionParams:
        leaf = base + delta if index is None else base.at[index].add(delta)
        return params.replace(**{field: leaf})

    def central(h: float) -> float:
        return (float(value(shifted(h))) - float(value(shifted(-h)))) / (2 * h)

    return (4.0 * central(step / 2) - central(step)) / 3.0


def main() -> None:
    """Print the figures as JSON (progress on stderr)."""
    import sys

    def show(task: str, done: int, total: int) -> None:
        print(f"{task}: {done}/{total}", file=sys.stderr, flush=True)

    print(json.dumps(run_bench(show), indent=2))


if __name__ == "__main__":
    main()


SMOKE_BUDGET: dict[str, Any] = {
    "scenario": Scenario.model_validate({"horizon_years": 2}),
    "settings": sp.PensionSnapoSettings(steps=10, paths_per_step=32, width=8, log_every=5),
    "eval_paths": 64,
    "timing_paths": 64,
    "key_rate_counts": (5,),
}
"""A benchmark that runs in seconds (the platform's conformance test): two years, one curve size."""


README_ROWS: tuple[Row, ...] = (
    Row(
        "K + 1 bump-and-revalue valuations / one value-and-gradient pass, K = 10 / 50 / 200 / 1000 key rates",
        "{speedup_K10:.1f} / {speedup_K50:.1f} / {speedup_K200:.0f} / {speedup_K1000:.0f} ({timing_paths:,} paths; "
        "one pass {value_and_grad_seconds_K1000:.3f} s at K = 1000, bump-and-revalue {bump_seconds_K1000:.1f} s)",
    ),
    Row("inputs differentiated in that one pass, K = 1000", "{n_sensitivities_K1000:,}"),
    Row("adjoint vs central finite differences, float64, max relative error", "{fd_max_rel_err:.1e}"),
    Row(
        "SNAPO policy minus the best fixed mix, objective on fresh paths",
        "{snapo_minus_fixed_mix:,.0f} (paired s.e. {snapo_minus_fixed_mix_stderr:,.0f}; {eval_paths:,} paths)",
    ),
    Row(
        "the same network seeing only funding ratio and time, minus the best fixed mix",
        "{snapo_curve_blind_minus_fixed_mix:,.0f} (paired s.e. {snapo_curve_blind_minus_fixed_mix_stderr:,.0f})",
    ),
    Row("SNAPO training, compile included", "{train_seconds:.0f} s"),
)
"""The README's pension table (``decisions bench report``)."""
