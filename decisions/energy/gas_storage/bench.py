"""``decisions bench gas-storage``: the figures the gas storage slice promises, measured.

Printed as one JSON object by ``decisions bench gas-storage --json``:

- ``snapo_vs_lp_deterministic``: SNAPO value on the deterministic curve over the LP intrinsic value;
- ``snapo_vs_rolling_intrinsic`` / ``snapo_vs_lsmc`` / ``snapo_vs_intrinsic``: on the default
  stochastic scenario, SNAPO's out-of-sample mean over each baseline's, on the same evaluation
  paths (with the paired standard errors of the differences);
- ``train_seconds``: SNAPO training on the default scenario, compile included;
- ``n_sensitivities``: inputs differentiated in one reverse pass; ``grad_cost_ratio``:
  value-and-gradient time over value time; ``bump_speedup``: 366 revaluations (base + one
  bump per forward day) over one adjoint pass, same paths;
- ``fd_max_rel_err``: adjoint against central finite differences in float64;
- ``lp_sensitivity_rel_l1``: relative L1 gap between SNAPO's decision-held dV/dF and the LP's
  on the deterministic curve.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.evaluate import compare
from decisions.energy.gas_storage import baselines, intrinsic, snapo_policy
from decisions.energy.gas_storage.params import GasStorageParams, to_params
from decisions.energy.gas_storage.prices import draw_normals
from decisions.energy.gas_storage.scenario import DeterministicPrices, Scenario
from decisions.energy.gas_storage.snapo_policy import SnapoSettings, TrainedPolicy

ProgressFn = Callable[[str, int, int], None]

FD_SCALARS = (
    "injection_cost",
    "withdrawal_cost",
    "discount_rate",
    "mean_reversion",
    "volatility",
    "max_inventory",
)
FD_DAYS = (0, 37, 90, 150, 200, 260, 300, 364)


def run_bench(
    progress: ProgressFn | None = None,
    *,
    scenario: Scenario | None = None,
    settings: SnapoSettings | None = None,
    eval_paths: int = 512,
    seed: int = 0,
) -> dict[str, Any]:
    """Measure every gas storage figure on the default (or a given) scenario.

    Args:
        progress: optional ``(task, done, total)`` callback.
        scenario: the stochastic scenario (default: ``Scenario()``).
        settings: SNAPO settings (default: ``SnapoSettings()``).
        eval_paths: common out-of-sample evaluation paths.
        seed: seed of training and evaluation draws.

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
    values = {"snapo": np.asarray(snapo_policy.evaluate_policy(trained, normals, params))}
    report("baselines", 0, 1)
    found = baselines.run_baselines(scenario, normals, key=key_lsmc)
    report("baselines", 1, 1)
    values.update({str(name): np.asarray(v) for name, v in found.values.items()})
    table = compare(values, reference="snapo")
    lp_value = float(found.intrinsic.value) if found.intrinsic is not None else float("nan")
    figures["intrinsic_value"] = lp_value
    for name in table.index:
        figures[f"value_{name}"] = float(table.loc[name, "mean"])
        figures[f"stderr_{name}"] = float(table.loc[name, "stderr"])
    for name in ("rolling_intrinsic", "lsmc"):
        figures[f"snapo_vs_{name}"] = float(values["snapo"].mean() / values[name].mean())
        figures[f"snapo_minus_{name}_stderr"] = float(table.loc[name, "diff_stderr"])
    figures["snapo_vs_intrinsic"] = float(values["snapo"].mean() / lp_value)

    report("sensitivity timing", 0, 1)
    figures.update(_timing(trained, params, normals))
    report("sensitivity timing", 1, 1)

    report("finite-difference check", 0, 1)
    figures["fd_max_rel_err"] = fd_max_rel_err(trained, scenario, paths=64, seed=seed)
    report("finite-difference check", 1, 1)

    report("SNAPO training (deterministic)", 0, 1)
    figures.update(_deterministic(scenario, settings, key_det))
    report("SNAPO training (deterministic)", 1, 1)
    return figures


def _median_seconds(fn: Callable[[], Any], repeats: int = 5) -> float:
    jax.block_until_ready(fn())  # compile and warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def _timing(trained: TrainedPolicy, params: GasStorageParams, normals: jax.Array) -> dict[str, float]:
    """Value time, value+gradient time and 366 bump-and-revalue evaluations on the same paths."""
    value_s = _median_seconds(lambda: snapo_policy.policy_value(trained, params, normals))
    grad_s = _median_seconds(lambda: snapo_policy.sensitivities(trained, params, normals, policy_reacts=False))
    _, grads = snapo_policy.sensitivities(trained, params, normals, policy_reacts=False)
    bumped = [params] + [
        params.replace(forward=params.forward.at[t].add(0.01)) for t in range(params.horizon)
    ]
    jax.block_until_ready(snapo_policy.policy_value(trained, bumped[1], normals, view=params))
    start = time.perf_counter()
    for p in bumped:
        jax.block_until_ready(snapo_policy.policy_value(trained, p, normals, view=params))
    bump_s = time.perf_counter() - start
    return {
        "value_seconds": value_s,
        "value_and_grad_seconds": grad_s,
        "grad_cost_ratio": grad_s / value_s,
        "bump_seconds": bump_s,
        "bump_speedup": bump_s / grad_s,
        "n_sensitivities": int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(grads))),
    }


def fd_max_rel_err(trained: TrainedPolicy, scenario: Scenario, *, paths: int = 64, seed: int = 0) -> float:
    """Largest relative gap between adjoint and central finite differences, in float64.

    Both sensitivity modes are checked (decisions held; policy reacting) on the
    forward-curve days ``FD_DAYS`` and the scalar inputs ``FD_SCALARS``.
    """
    with jax.enable_x64(True):
        params = to_params(scenario, dtype=jnp.float64)
        trained64 = _as_float64(trained)
        normals = draw_normals(jax.random.PRNGKey(seed + 7), paths, scenario.horizon, jnp.float64)
        worst = 0.0
        for reacts in (False, True):
            _, grads = snapo_policy.sensitivities(trained64, params, normals, policy_reacts=reacts)
            for name, index in [("forward", t) for t in FD_DAYS] + [(s, None) for s in FD_SCALARS]:
                adjoint = float(getattr(grads, name) if index is None else getattr(grads, name)[index])
                fd = _central_difference(trained64, params, normals, name, index, reacts)
                scale = max(abs(adjoint), abs(fd), 1e-6 * _value_scale(params))
                worst = max(worst, abs(adjoint - fd) / scale)
        return worst


def _as_float64(trained: TrainedPolicy) -> TrainedPolicy:
    params = jax.tree_util.tree_map(lambda a: jnp.asarray(a, jnp.float64), trained.params)
    return TrainedPolicy(policy=trained.policy, params=params, settings=trained.settings)


def _value_scale(params: GasStorageParams) -> float:
    return float(params.capacity * jnp.mean(params.forward))


def _central_difference(
    trained: TrainedPolicy, params: GasStorageParams, normals: jax.Array, name: str, index: int | None, reacts: bool
) -> float:
    base = getattr(params, name)
    size = float(jnp.abs(base if index is None else base[index]))
    step = 1e-5 * max(size, 1.0)

    def shifted(delta: float) -> GasStorageParams:
        leaf = base + delta if index is None else base.at[index].add(delta)
        return params.replace(**{name: leaf})

    def value(p: GasStorageParams) -> float:
        return float(snapo_policy.policy_value(trained, p, normals, view=None if reacts else params))

    return (value(shifted(step)) - value(shifted(-step))) / (2 * step)


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
