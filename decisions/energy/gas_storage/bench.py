"""``decisions bench gas-storage``: the figures the gas storage slice promises, measured.

Printed as one JSON object by ``decisions bench gas-storage --json``:

- ``snapo_vs_lp_deterministic``: SNAPO value on the deterministic curve over the LP intrinsic value;
- ``snapo_vs_rolling_intrinsic`` / ``snapo_vs_lsmc`` / ``snapo_vs_intrinsic``: on the default
  stochastic scenario, SNAPO's out-of-sample mean over each baseline's, on the same evaluation
  paths (with the paired standard errors of the differences); ``value_lsmc`` (``lsmc_paths``,
  the default regression paths) is out of sample, its in-sample estimate beside it as ``lsmc_in_sample``;
- ``lsmc_<n>_value`` (out of sample), ``lsmc_<n>_in_sample`` (in sample, labelled) and
  ``lsmc_<n>_seconds`` for LSMC on n = 4k, 16k and 64k regression paths; the best n on 4096
  validation paths (``lsmc_best_paths``) meets SNAPO on 4096 further test paths:
  ``snapo_vs_lsmc_best``, ``snapo_minus_lsmc_best`` with its paired standard error;
- ``value_cv_<method>``, ``stderr_cv_<method>``, ``variance_reduction_<method>``: the same
  values with control variates (``controls.storage_controls``: the trading gain on each day's
  unexpected price move, mean zero); every paired ``snapo_minus_*_stderr`` uses them (the plain
  one is ``..._stderr_raw``, the factor ``..._variance_reduction``);
- ``expou_*``: QuantLib's exponential-OU storage test (one year daily, capacity 50, rate 1, gas
  left worth the spot) solved by LSMC at 4k-64k paths (out of sample, in sample labelled),
  rolling intrinsic and SNAPO on the same test paths, with QuantLib's finite-difference value
  and every method's value and time ratio to it where QuantLib is installed (``expou_study``);
- ``train_seconds``: SNAPO training on the default scenario, compile included;
- ``n_sensitivities``: inputs differentiated in one reverse pass; ``grad_cost_ratio``:
  value-and-gradient time over value time; ``bump_speedup``: 366 revaluations (base + one
  bump per forward day) over one adjoint pass, same paths, both best-of-n and interleaved,
  bump-and-revalue at the cheaper of a jitted loop and jitted ``vmap`` chunks (``bump_method``;
  see ``_timing``: headline figures for the SNAPO objective, ``*_hard`` for the hard-rule delta);
- ``fd_max_rel_err``: adjoint against central finite differences in float64 (see ``fd_errors``);
- ``lp_sensitivity_rel_l1``: relative L1 gap between SNAPO's decision-held dV/dF and the LP's
  on the deterministic curve.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.bench_row import Row
from decisions.core.evaluate import compare
from decisions.core.float64_check import require_float64_program
from decisions.core.progress import Progress
from decisions.core.pytrees import cast_leaves
from decisions.core.timing import bump_and_revalue
from decisions.energy.gas_storage import baselines, intrinsic, snapo_policy
from decisions.energy.gas_storage.controls import storage_controls
from decisions.energy.gas_storage.expou_study import exponential_ou_figures
from decisions.energy.gas_storage.lsmc_study import (
    PATH_COUNTS,
    lsmc_by_paths,
    lsmc_figures,
)
from decisions.energy.gas_storage.params import GasStorageParams, to_params
from decisions.energy.gas_storage.prices import draw_normals
from decisions.energy.gas_storage.scenario import DeterministicPrices, Scenario
from decisions.energy.gas_storage.simulator import rollout
from decisions.energy.gas_storage.snapo_policy import SnapoSettings, TrainedPolicy
from decisions.energy.gas_storage.spec import DEFAULT_LSMC_PATHS

FD_SCALARS = (
    "injection_cost",
    "withdrawal_cost",
    "discount_rate",
    "mean_reversion",
    "volatility",
    "max_inventory",
)
FD_DAYS = (0, 37, 90, 150, 200, 260, 300, 364)
BUMP = 0.01
"""Forward-price bump of bump-and-revalue."""
BUMP_CHUNKS = (2, 8, 32)
"""Bumped curves per jitted ``vmap`` call tried by bump-and-revalue (a 512-path hard-rule
valuation is too small to keep both cores busy: chunks of 32 revalue about 5x cheaper per curve
than single calls; the smooth objective gains ~20% and saturates near 8)."""


def run_bench(
    progress: Progress | None = None,
    *,
    scenario: Scenario | None = None,
    settings: SnapoSettings | None = None,
    eval_paths: int = 512,
    seed: int = 0,
    ppo: bool = True,
    comparison_paths: int = 4096,
    lsmc_path_counts: Sequence[int] = PATH_COUNTS,
    checks: bool = True,
    exponential_ou: bool = True,
    timing_repeats: int = 10,
    bump_chunks: Sequence[int] = BUMP_CHUNKS,
) -> dict[str, Any]:
    """Measure every gas storage figure on the default (or a given) scenario.

    Args:
        progress: optional ``(task, done, total)`` callback.
        scenario: the stochastic scenario (default: ``Scenario()``).
        settings: SNAPO settings (default: ``SnapoSettings()``).
        seed: seed of training and evaluation draws.
        ppo: also train black-box PPO (3M steps, a few minutes) on the default scenario and
            score it against SNAPO on the same paths (``ppo_vs_snapo_*`` figures).
        comparison_paths: validation paths, and as many test paths, of the SNAPO vs LSMC comparison.
        lsmc_path_counts: LSMC regression paths tried in that comparison (the best on the
            validation paths meets SNAPO on the test paths).
        exponential_ou: also solve QuantLib's exponential-OU storage test by every method
            (``expou_study``; ``expou_*`` figures), with QuantLib's own engine beside them
            where the ``peers`` extra is installed.
        checks: also run the finite-difference check of the sensitivities and the
            deterministic training against the LP optimum (``fd_*`` and ``det_*`` figures).
        timing_repeats: timed calls (best of) of the sensitivity timing.
        bump_chunks: bumped curves per jitted ``vmap`` call tried by that timing's bump-and-revalue.

    Returns:
        A flat dict of figures (floats and ints).
    """
    report = progress or (lambda task, done, total: None)
    scenario = scenario or Scenario()
    settings = settings or SnapoSettings()
    key_train, key_eval, key_lsmc, key_det = jax.random.split(jax.random.PRNGKey(seed), 4)
    figures: dict[str, Any] = {"eval_paths": eval_paths, "horizon_days": scenario.horizon}

    # Stochastic default scenario first, so train_seconds includes compilation.
    report("SNAPO training (stochastic)", 0, 1)
    trained = snapo_policy.train_policy(scenario, settings, key=key_train)
    report("SNAPO training (stochastic)", 1, 1)
    figures["train_seconds"] = trained.train_seconds
    params = to_params(scenario)
    normals = draw_normals(key_eval, eval_paths, scenario.horizon)
    headline, hedge = _headline(report, trained, scenario, params, normals, key_lsmc)
    figures.update(headline)
    figures.update(_stage(report, "SNAPO vs LSMC at 4k-64k paths, out of sample", lambda: lsmc_comparison(
        trained, scenario, key_lsmc, jax.random.fold_in(key_eval, 1), paths=comparison_paths,
        path_counts=lsmc_path_counts, hedge=hedge)))
    if exponential_ou:
        figures.update(exponential_ou_figures(report, paths=comparison_paths, seed=seed, settings=settings))
    figures.update(_stage(report, "sensitivity timing", lambda: _timing(
        trained, params, normals, repeats=timing_repeats, chunks=bump_chunks)))
    if checks:
        figures.update(_stage(report, "finite-difference check", lambda: fd_errors(trained, scenario, paths=64, seed=seed)))
        figures.update(_stage(report, "SNAPO training (deterministic)", lambda: _deterministic(scenario, settings, key_det)))
    if ppo:
        from decisions.energy.gas_storage.rl import ppo_vs_snapo

        figures.update(ppo_vs_snapo(progress=report))
    return figures


def _stage(report: Progress, task: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``work()``'s figures, reported as ``task`` started and done."""
    report(task, 0, 1)
    found = work()
    report(task, 1, 1)
    return found


def _headline(
    report: Progress,
    trained: TrainedPolicy,
    scenario: Scenario,
    params: GasStorageParams,
    normals: jax.Array,
    key_lsmc: jax.Array,
) -> tuple[dict[str, Any], jax.Array | None]:
    """SNAPO against every baseline on the common paths, raw and with control variates.

    Returns:
        The figures and the intrinsic LP's net injection (the control variates' hedge; None
        when the LP did not run).
    """
    snapo_values, snapo_moves = snapo_policy.values_and_moves(trained, normals, params)
    values = {"snapo": np.asarray(snapo_values)}
    report("baselines", 0, 1)
    found = baselines.run_baselines(scenario, normals, key=key_lsmc)
    report("baselines", 1, 1)
    values.update({str(name): np.asarray(v) for name, v in found.values.items()})
    actions = {"snapo": snapo_moves}
    actions.update({str(name): jnp.asarray(a) for name, a in found.actions.items()})
    hedge = jnp.asarray(found.intrinsic.net_injection, normals.dtype) if found.intrinsic is not None else None
    controls = {name: np.asarray(storage_controls(a, normals, params, hedge)) for name, a in actions.items()}
    raw = compare(values, reference="snapo")
    table = compare(values, reference="snapo", controls=controls)  # control variates: same means, less noise
    lp_value = float(found.intrinsic.value) if found.intrinsic is not None else float("nan")
    figures: dict[str, Any] = {
        "intrinsic_value": lp_value,
        "lsmc_paths": DEFAULT_LSMC_PATHS,
        "lsmc_in_sample": found.lsmc_in_sample,  # in sample: the fit's own paths (biased upwards)
    }
    for name in table.index:
        figures[f"value_{name}"] = float(raw.loc[name, "mean"])
        figures[f"stderr_{name}"] = float(raw.loc[name, "stderr"])
        figures[f"value_cv_{name}"] = float(table.loc[name, "mean"])
        figures[f"stderr_cv_{name}"] = float(table.loc[name, "stderr"])
        figures[f"variance_reduction_{name}"] = float(table.loc[name, "variance_reduction"])
    for name in ("rolling_intrinsic", "lsmc"):
        figures[f"snapo_vs_{name}"] = float(values["snapo"].mean() / values[name].mean())
        figures[f"snapo_minus_{name}_stderr"] = float(table.loc[name, "diff_stderr"])
        figures[f"snapo_minus_{name}_stderr_raw"] = float(raw.loc[name, "diff_stderr"])
        figures[f"snapo_minus_{name}_variance_reduction"] = float(table.loc[name, "diff_variance_reduction"])
    figures["snapo_vs_intrinsic"] = float(values["snapo"].mean() / lp_value)
    return figures, hedge


def lsmc_comparison(
    trained: TrainedPolicy,
    scenario: Scenario,
    key_lsmc: jax.Array,
    key_paths: jax.Array,
    paths: int = 4096,
    path_counts: Sequence[int] = PATH_COUNTS,
    hedge: jax.Array | None = None,
) -> dict[str, float | int]:
    """SNAPO against the best of LSMC at ``path_counts`` regression paths, out of sample."""
    key_val, key_test = jax.random.split(key_paths)
    test = draw_normals(key_test, paths, scenario.horizon)
    params = to_params(scenario)
    if hedge is None:
        hedge = jnp.asarray(intrinsic.solve_intrinsic(params).net_injection, test.dtype)
    fits = lsmc_by_paths(
        scenario, path_counts, key=key_lsmc, validation=draw_normals(key_val, paths, scenario.horizon), test=test,
        hedge=hedge,
    )
    snapo_values, moves = snapo_policy.values_and_moves(trained, test, params)
    controls = np.asarray(storage_controls(moves, test, params, hedge), np.float64)
    return lsmc_figures(fits, np.asarray(snapo_values, np.float64), controls)


def _timing(
    trained: TrainedPolicy,
    params: GasStorageParams,
    normals: jax.Array,
    *,
    repeats: int = 10,
    chunks: Sequence[int] = BUMP_CHUNKS,
) -> dict[str, Any]:
    """Cost of the adjoint pass against the value alone and against bump-and-revalue, same paths."""
    rate_scale = jnp.maximum(jnp.max(params.injection_rates), jnp.max(params.withdrawal_rates))
    tau = trained.settings.temperature_end * rate_scale

    def objective(policy_params: Any, inputs: GasStorageParams) -> jax.Array:
        return jnp.mean(rollout(trained.policy, policy_params, inputs, normals, tau=tau, smooth=True)[0])

    grad_fn = jax.jit(jax.value_and_grad(objective, argnums=(0, 1)))
    smooth = bump_and_revalue(
        lambda forward: objective(trained.params, params.replace(forward=forward)),
        params.forward,
        bump=BUMP,
        gradient=lambda: grad_fn(trained.params, params),
        chunks=chunks,
        repeats=repeats,
    )

    def hard_value(forward: jax.Array) -> jax.Array:
        return snapo_policy.policy_value(trained, params.replace(forward=forward), normals, view=params)

    hard = bump_and_revalue(
        hard_value,
        params.forward,
        bump=BUMP,
        gradient=lambda: snapo_policy.sensitivities(trained, params, normals, policy_reacts=False),
        chunks=chunks,
        repeats=repeats,
    )
    _, grads = grad_fn(trained.params, params)
    return {
        "value_seconds": smooth.value_seconds,
        "value_and_grad_seconds": smooth.gradient_seconds,
        "grad_cost_ratio": smooth.grad_cost_ratio,
        "bump_seconds": smooth.bump_seconds,
        "bump_loop_seconds": smooth.loop_seconds,
        "bump_vmap_seconds": smooth.vmap_seconds,
        "bump_method": smooth.method,
        "bump_speedup": smooth.speedup,
        "grad_cost_ratio_hard": hard.grad_cost_ratio,
        "bump_speedup_hard": hard.speedup,
        "bump_method_hard": hard.method,
        "n_sensitivities": int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(grads[1]))),
        "n_policy_parameters": int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(grads[0]))),
    }


def fd_errors(trained: TrainedPolicy, scenario: Scenario, *, paths: int = 64, seed: int = 0) -> dict[str, float]:
    """Largest relative gaps between adjoint and central finite differences, in float64."""
    with jax.enable_x64(True):
        params = to_params(scenario, dtype=jnp.float64)
        policy_params = cast_leaves(trained.params, jnp.float64)
        normals = draw_normals(jax.random.PRNGKey(seed + 7), paths, scenario.horizon, jnp.float64)
        rate_scale = float(jnp.maximum(jnp.max(params.injection_rates), jnp.max(params.withdrawal_rates)))
        tau = trained.settings.temperature_end * rate_scale
        checks = [("forward", t) for t in FD_DAYS] + [(name, None) for name in FD_SCALARS]
        out = {"fd_max_rel_err": 0.0, "fd_max_rel_err_hard_forward": 0.0, "fd_max_rel_err_hard_all": 0.0}
        for smooth in (True, False):
            for reacts in (False, True):

                def value(p: GasStorageParams, view: GasStorageParams | None, smooth=smooth) -> jax.Array:
                    values, _ = rollout(
                        trained.policy, policy_params, p, normals, tau=tau, smooth=smooth, policy_view=view
                    )
                    return jnp.mean(values)

                held = jax.jit(lambda p, view: value(p, view))
                require_float64_program("the gas storage objective", lambda p: value(p, None), params)
                grads = jax.jit(jax.grad(lambda p, reacts=reacts: value(p, None if reacts else jax.lax.stop_gradient(p))))(
                    params
                )
                for name, index in checks:
                    adjoint = float(getattr(grads, name) if index is None else getattr(grads, name)[index])
                    fd = _central_difference(held, params, name, index, reacts)
                    err = abs(adjoint - fd) / max(abs(adjoint), abs(fd), 1e-6 * _value_scale(params))
                    if smooth:
                        out["fd_max_rel_err"] = max(out["fd_max_rel_err"], err)
                        continue
                    out["fd_max_rel_err_hard_all"] = max(out["fd_max_rel_err_hard_all"], err)
                    if name == "forward" and not reacts:
                        out["fd_max_rel_err_hard_forward"] = max(out["fd_max_rel_err_hard_forward"], err)
        return out


def _value_scale(params: GasStorageParams) -> float:
    return float(params.capacity * jnp.mean(params.forward))


def _central_difference(
    value: Callable[[GasStorageParams, GasStorageParams | None], jax.Array],
    params: GasStorageParams,
    name: str,
    index: int | None,
    reacts: bool,
) -> float:
    base = getattr(params, name)
    size = float(jnp.abs(base if index is None else base[index]))
    step = 1e-7 * max(size, 1.0)  # float64: small enough for the reacting policy's curvature

    def shifted(delta: float) -> GasStorageParams:
        leaf = base + delta if index is None else base.at[index].add(delta)
        return params.replace(**{name: leaf})

    def at(p: GasStorageParams) -> float:
        return float(value(p, p if reacts else params))

    return (at(shifted(step)) - at(shifted(-step))) / (2 * step)


def _deterministic(scenario: Scenario, settings: SnapoSettings, key: jax.Array) -> dict[str, float]:
    det = scenario.with_prices(DeterministicPrices())
    params = to_params(det)
    lp = intrinsic.solve_intrinsic(params)
    trained = snapo_policy.train_policy(det, settings, key=key)
    normals = jnp.zeros((1, det.horizon - 1), params.forward.dtype)
    value = float(snapo_policy.evaluate_policy(trained, normals, params)[0])
    _, grads = snapo_policy.sensitivities(trained, params, normals, policy_reacts=False)
    lp_sens = np.asarray(lp.sensitivity)
    return {
        "lp_intrinsic_value_deterministic": float(lp.value),
        "snapo_value_deterministic": value,
        "snapo_vs_lp_deterministic": value / float(lp.value),
        "lp_sensitivity_rel_l1": float(np.abs(np.asarray(grads.forward) - lp_sens).sum() / np.abs(lp_sens).sum()),
        "train_seconds_deterministic": trained.train_seconds,
    }


SMOKE_BUDGET: dict[str, Any] = {
    "scenario": Scenario.model_validate(
        {"forward_curve": [20.0 + 4.0 * float(np.cos(2 * np.pi * d / 30)) for d in range(30)],
         "facility": {"max_inventory": 100.0, "max_injection": 25.0, "max_withdrawal": 50.0}}
    ),
    "settings": SnapoSettings(steps=20, paths_per_step=16, log_every=10),
    "eval_paths": 32,
    "ppo": False,
    "comparison_paths": 256,
    "lsmc_path_counts": (256, 1024),
    "checks": False,
    "exponential_ou": False,
    "timing_repeats": 1,
    "bump_chunks": (2,),
}
"""A benchmark that runs in seconds (the platform's conformance test): a 30-day facility, the
sensitivity timing once and with one ``vmap`` chunk size."""


README_ROWS: tuple[Row, ...] = (
    Row("SNAPO / LP intrinsic, deterministic curve", "{snapo_vs_lp_deterministic:.3f}"),
    Row("SNAPO / intrinsic (the day-0 LP schedule), stochastic", "{snapo_vs_intrinsic:.3f}"),
    Row(
        "SNAPO / rolling intrinsic, same paths (out of sample)",
        "{snapo_vs_rolling_intrinsic:.3f} (paired s.e. {snapo_minus_rolling_intrinsic_stderr:.1f}; "
        "{snapo_minus_rolling_intrinsic_stderr_raw:.1f} without control variates; {eval_paths} paths)",
    ),
    Row(
        "SNAPO / LSMC at its default regression paths, same paths",
        "{snapo_vs_lsmc:.4f} ({lsmc_paths:,} paths; paired s.e. {snapo_minus_lsmc_stderr:.1f}; "
        "{snapo_minus_lsmc_stderr_raw:.1f} without)",
    ),
    Row(
        "LSMC with 4k / 16k / 64k regression paths, out of sample",
        "{lsmc_4096_value:,.0f} / {lsmc_16384_value:,.0f} / {lsmc_65536_value:,.0f} ({lsmc_test_paths:,} test paths; "
        "fit {lsmc_4096_seconds:.1f} / {lsmc_16384_seconds:.1f} / {lsmc_65536_seconds:.1f} s)",
    ),
    Row(
        "the same LSMC, in sample (on their own regression paths: biased)",
        "{lsmc_4096_in_sample:,.0f} / {lsmc_16384_in_sample:,.0f} / {lsmc_65536_in_sample:,.0f}",
    ),
    Row(
        "SNAPO / the best of them (chosen on validation paths), on the test paths",
        "{snapo_vs_lsmc_best:.4f} (best: {lsmc_best_paths:,} paths; paired diff {snapo_minus_lsmc_best_cv:+.1f}, "
        "s.e. {snapo_minus_lsmc_best_stderr:.1f}; without control variates {snapo_minus_lsmc_best:+.1f}, "
        "s.e. {snapo_minus_lsmc_best_stderr_raw:.1f})",
    ),
    Row(
        "variance reduction of the paired differences by the control variates",
        "{snapo_minus_rolling_intrinsic_variance_reduction:.0f}x vs rolling intrinsic, "
        "{snapo_minus_lsmc_variance_reduction:.0f}x vs LSMC, {snapo_minus_lsmc_best_variance_reduction:.0f}x vs the best LSMC",
    ),
    Row(
        "QuantLib's storage test (exp-OU, 1 year daily, capacity 50, rate 1): QuantLib's FD engine on our grid",
        "{expou_quantlib_value:.3f} in {expou_quantlib_seconds:.1f} s (QuantLib {expou_quantlib_version}; grid gap "
        "{expou_quantlib_grid_gap:.3f}; its own test reproduced: {expou_quantlib_published_test:.4f}, "
        "published {expou_quantlib_published_expected})",
        optional=True,
    ),
    Row(
        "the same instance: SNAPO / rolling intrinsic / best LSMC, out of sample",
        "{expou_snapo_value:.2f} / {expou_rolling_intrinsic_value:.2f} / {expou_lsmc_best_value:.2f} (s.e. "
        "{expou_snapo_stderr:.2f} / {expou_rolling_intrinsic_stderr:.2f} / {expou_lsmc_best_stderr:.2f}; "
        "{expou_test_paths:,} test paths, best LSMC {expou_lsmc_best_paths:,} paths)",
    ),
    Row(
        "the same, value / QuantLib's",
        "SNAPO {expou_snapo_vs_quantlib:.4f}, rolling intrinsic {expou_rolling_intrinsic_vs_quantlib:.4f}, "
        "best LSMC {expou_lsmc_best_vs_quantlib:.4f}",
        optional=True,
    ),
    Row(
        "the same, time / QuantLib's (SNAPO: training, compile included)",
        "SNAPO {expou_snapo_seconds_vs_quantlib:.1f}x ({expou_snapo_seconds:.0f} s), rolling intrinsic "
        "{expou_rolling_intrinsic_seconds_vs_quantlib:.1f}x, best LSMC {expou_lsmc_best_seconds_vs_quantlib:.1f}x",
        optional=True,
    ),
    Row(
        "the same instance: LSMC 4k / 16k / 64k, out of sample vs in sample",
        "{expou_lsmc_4096_value:.2f} vs {expou_lsmc_4096_in_sample:.2f} / {expou_lsmc_16384_value:.2f} vs "
        "{expou_lsmc_16384_in_sample:.2f} / {expou_lsmc_65536_value:.2f} vs {expou_lsmc_65536_in_sample:.2f}",
    ),
    Row("training time, compile included", "{train_seconds:.0f} s"),
    Row("sensitivities from one reverse pass", "{n_sensitivities}"),
    Row("value+gradient / value (SNAPO objective; hard-rule delta)", "{grad_cost_ratio:.2f}; {grad_cost_ratio_hard:.2f}"),
    Row(
        "bump-and-revalue of every forward day / one adjoint pass (SNAPO objective; hard-rule delta)",
        "{bump_speedup:.0f}; {bump_speedup_hard:.1f} ({bump_seconds:.2f} s vs {value_and_grad_seconds:.3f} s; "
        "bump-and-revalue at its cheaper of a jitted loop and jitted vmap chunks, best of 10, interleaved)",
    ),
    Row("adjoint vs central finite differences, float64, max relative error", "{fd_max_rel_err:.1e}"),
    Row("SNAPO dV/dF vs LP envelope delta, deterministic curve, relative L1", "{lp_sensitivity_rel_l1:.1%}"),
    Row(
        "PPO / SNAPO, same paths",
        "{ppo_vs_snapo_value_ratio:.3f} ({ppo_env_steps:,.0f} env steps, {ppo_vs_snapo_time_ratio:.2f}x SNAPO's "
        "training time, no sensitivities)",
        optional=True,
    ),
)
"""The README's gas storage table (``decisions bench report``)."""
