"""Benchmark of SNAPO on gas storage: a program that prints its figures as JSON.

Run ``python -m decisions.energy.gas_storage.measure`` (add ``--skip-baselines``
to leave out rolling intrinsic and LSMC). It reports, on the default scenario:

- training time (compilation included) with the default ``SnapoSettings``;
- out-of-sample value under the hard rules on fresh paths, next to the static
  intrinsic LP schedule, rolling intrinsic and LSMC on the *same* paths, with
  paired differences and their standard errors;
- on the deterministic curve: the policy's value over the LP optimum, and the
  relative L1 distance of its forward-curve delta to the LP's envelope delta;
- timings, for the hard-rule sensitivities and for the smooth objective that
  training differentiates: value+gradient over value only (jitted, same
  paths), and 366 bump-and-revalue evaluations over one adjoint pass.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.energy.gas_storage import snapo_policy
from decisions.energy.gas_storage.baselines import run_baselines
from decisions.energy.gas_storage.intrinsic import solve_intrinsic
from decisions.energy.gas_storage.params import GasStorageParams, to_params
from decisions.energy.gas_storage.prices import draw_normals
from decisions.energy.gas_storage.scenario import DeterministicPrices, Scenario
from decisions.energy.gas_storage.simulator import rollout


def best_time(fn: Callable[[], Any], repeats: int = 20) -> float:
    """Fastest of ``repeats`` timed calls after one warm-up call (robust to a busy machine).

    Args:
        fn: the call to time (its result is blocked on).
        repeats: number of timed calls.

    Returns:
        Seconds of the fastest call.
    """
    jax.block_until_ready(fn())
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        best = min(best, time.perf_counter() - start)
    return best


def _summary(values: np.ndarray) -> dict[str, float]:
    return {"mean": float(values.mean()), "stderr": float(values.std(ddof=1) / np.sqrt(values.size))}


def stochastic_figures(
    trained: snapo_policy.TrainedPolicy, scenario: Scenario, normals: jax.Array, *, baselines: bool
) -> dict[str, Any]:
    """Out-of-sample values of SNAPO and the baselines on the same paths.

    Args:
        trained: the trained policy.
        scenario: its scenario.
        normals: evaluation normals.
        baselines: also run rolling intrinsic and LSMC (slower).

    Returns:
        Means, standard errors and paired differences ``snapo - baseline``.
    """
    params = to_params(scenario)
    snapo = np.asarray(snapo_policy.evaluate_policy(trained, normals, params), float)
    out: dict[str, Any] = {"paths": int(normals.shape[0]), "snapo": _summary(snapo)}
    if baselines:
        found = run_baselines(scenario, normals, key=jax.random.PRNGKey(7))
        others = {str(name): np.asarray(v, float) for name, v in found.values.items()}
    else:
        from decisions.energy.gas_storage.intrinsic import intrinsic_values_on_paths
        from decisions.energy.gas_storage.prices import spot_paths

        lp = solve_intrinsic(params)
        others = {
            "intrinsic_lp": np.asarray(intrinsic_values_on_paths(lp, spot_paths(normals, params)[1], params))
        }
    for name, vals in others.items():
        out[name] = _summary(vals)
        out[f"snapo_minus_{name}"] = _summary(snapo - vals)
    return out


def deterministic_figures(settings: snapo_policy.SnapoSettings) -> dict[str, float]:
    """SNAPO on the deterministic curve against the LP optimum and its envelope delta.

    Args:
        settings: training settings.

    Returns:
        Value ratio to the LP and the relative L1 distance of the forward-curve deltas.
    """
    scenario = Scenario().with_prices(DeterministicPrices())
    params = to_params(scenario)
    trained = snapo_policy.train_policy(scenario, settings)
    normals = draw_normals(jax.random.PRNGKey(0), 1, scenario.horizon)
    value = float(snapo_policy.evaluate_policy(trained, normals, params)[0])
    lp = solve_intrinsic(params)
    _, held = snapo_policy.sensitivities(trained, params, normals, policy_reacts=False)
    lp_l1 = float(np.abs(lp.sensitivity).sum())
    return {
        "snapo_value": value,
        "lp_value": float(lp.value),
        "ratio_to_lp": value / float(lp.value),
        "delta_rel_l1_to_lp": float(np.abs(np.asarray(held.forward) - lp.sensitivity).sum()) / lp_l1,
        "train_seconds": trained.train_seconds,
    }


def _bumped(params: GasStorageParams, index: int, h: float) -> GasStorageParams:
    """Params with forward day ``index`` bumped by ``h`` (``index == D``: the volatility)."""
    if index < params.horizon:
        return params.replace(forward=params.forward.at[index].add(h))
    return params.replace(volatility=params.volatility + h)


def timing_figures(
    trained: snapo_policy.TrainedPolicy, params: GasStorageParams, normals: jax.Array
) -> dict[str, float]:
    """Cost of sensitivities: value+gradient vs value only, and bump-and-revalue vs one adjoint pass.

    Args:
        trained: the trained policy.
        params: problem parameters.
        normals: the paths (same for every timing).

    Returns:
        Seconds and ratios.
    """
    value = best_time(lambda: snapo_policy.policy_value(trained, params, normals))
    held = best_time(lambda: snapo_policy.sensitivities(trained, params, normals, policy_reacts=False))
    full = best_time(lambda: snapo_policy.sensitivities(trained, params, normals, policy_reacts=True))
    bumps = params.horizon + 1
    jax.block_until_ready(snapo_policy.policy_value(trained, _bumped(params, 0, 1e-2), normals))
    start = time.perf_counter()
    for i in range(bumps):
        jax.block_until_ready(snapo_policy.policy_value(trained, _bumped(params, i, 1e-2), normals))
    bump_seconds = time.perf_counter() - start
    return {
        "paths": int(normals.shape[0]),
        "value_seconds": value,
        "value_and_grad_held_seconds": held,
        "value_and_grad_full_seconds": full,
        "ratio_held": held / value,
        "ratio_full": full / value,
        "bump_and_revalue_count": bumps,
        "bump_and_revalue_seconds": bump_seconds,
        "bump_over_adjoint_full": bump_seconds / full,
    }


def smooth_timing_figures(
    trained: snapo_policy.TrainedPolicy, params: GasStorageParams, normals: jax.Array
) -> dict[str, float]:
    """The same timings for the smooth objective SNAPO differentiates while training.

    Value only vs value + gradient to the policy parameters *and* every input (one
    reverse pass), at the final temperature; and 366 smooth revaluations vs that pass.

    Args:
        trained: the trained policy.
        params: problem parameters.
        normals: the paths.

    Returns:
        Seconds and ratios.
    """
    policy = trained.policy
    tau = trained.settings.temperature_end * float(
        jnp.maximum(jnp.max(params.injection_rates), jnp.max(params.withdrawal_rates))
    )

    def value(policy_params, inputs):
        return jnp.mean(rollout(policy, policy_params, inputs, normals, tau=tau, smooth=True)[0])

    value_fn = jax.jit(value)
    grad_fn = jax.jit(jax.value_and_grad(value, argnums=(0, 1)))
    only = best_time(lambda: value_fn(trained.params, params))
    both = best_time(lambda: grad_fn(trained.params, params))
    bumps = params.horizon + 1
    start = time.perf_counter()
    for i in range(bumps):
        jax.block_until_ready(value_fn(trained.params, _bumped(params, i, 1e-2)))
    bump_seconds = time.perf_counter() - start
    return {
        "value_seconds": only,
        "value_and_grad_seconds": both,
        "ratio": both / only,
        "bump_and_revalue_seconds": bump_seconds,
        "bump_over_adjoint": bump_seconds / both,
    }


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Train, evaluate and time SNAPO on the default scenario; print the figures as JSON.

    Args:
        argv: command-line arguments (default: ``sys.argv[1:]``).

    Returns:
        The figures.
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-paths", type=int, default=1000, help="out-of-sample paths")
    parser.add_argument("--skip-baselines", action="store_true", help="leave out rolling intrinsic and LSMC")
    args = parser.parse_args(argv)
    settings = snapo_policy.SnapoSettings()
    scenario = Scenario()
    trained = snapo_policy.train_policy(scenario, settings)
    normals = draw_normals(jax.random.PRNGKey(2026), args.eval_paths, scenario.horizon)
    figures = {
        "settings": settings.model_dump(),
        "train_seconds": trained.train_seconds,
        "stochastic": stochastic_figures(trained, scenario, normals, baselines=not args.skip_baselines),
        "deterministic": deterministic_figures(settings),
        "timing_hard": timing_figures(trained, to_params(scenario), normals),
        "timing_smooth": smooth_timing_figures(trained, to_params(scenario), normals),
    }
    print(json.dumps(figures, indent=2))
    return figures


if __name__ == "__main__":
    main()
