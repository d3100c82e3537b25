"""The gas storage study: LP intrinsic, SNAPO and the baselines on common paths, compared."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decisions.core.evaluate import compare
from decisions.core.progress import Progress, silent
from decisions.energy.gas_storage import baselines, intrinsic, snapo_policy
from decisions.energy.gas_storage.params import GasStorageParams, PriceKind, to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.report import GasStorageReport
from decisions.energy.gas_storage.scenario import Scenario
from decisions.energy.gas_storage.spec import EvaluationSettings, Method, SnapoSettings
from decisions.kit.report import comparison_metrics

SCALAR_INPUTS = (
    "max_inventory", "min_inventory", "start_inventory", "end_inventory", "injection_cost",
    "withdrawal_cost", "discount_rate", "mean_reversion", "volatility",
)
"""The scalar inputs of the input-sensitivity table."""


@dataclass
class _Tables:
    """What the study fills in as it runs: the per-path values, the tables and the metrics."""

    values: dict[str, np.ndarray]
    schedule: pd.DataFrame
    sens: pd.DataFrame
    metrics: dict[str, float] = field(default_factory=dict)
    input_sens: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["input", "value", "dV_dinput"]))


def run_study(
    scenario: Scenario,
    snapo: SnapoSettings,
    evaluation: EvaluationSettings,
    *,
    method: Method = Method.COMPARE,
    seed: int = 0,
    progress: Progress = silent,
) -> GasStorageReport:
    """LP intrinsic always; SNAPO and/or the baselines (by ``method``) on ``evaluation.paths``
    common paths drawn from ``seed``. The report carries the tables, the metrics and the trained policy."""
    params = to_params(scenario)
    key_train, key_eval, key_lsmc = jax.random.split(jax.random.PRNGKey(seed), 3)
    progress("intrinsic LP", 0, 1)
    lp = intrinsic.solve_intrinsic(params)
    progress("intrinsic LP", 1, 1)
    normals = draw_normals(key_eval, evaluation.paths, scenario.horizon)
    _, spots = spot_paths(normals, params)
    tables = _lp_tables(scenario, params, lp, spots)
    training_curve = trained = None
    if method in (Method.COMPARE, Method.SNAPO):
        trained = snapo_policy.train_policy(
            scenario, snapo, key=key_train, progress=lambda d, t, v: progress("SNAPO training", d, t)
        )
        training_curve = trained.curve()
        _add_snapo(tables, trained, params, normals, spots, progress)
    if method in (Method.COMPARE, Method.BASELINES):
        _add_baselines(tables, scenario, normals, lp, key_lsmc, evaluation.lsmc_paths, progress)
    comparison = compare(tables.values, reference="intrinsic_lp")
    comparison = comparison.rename(columns={"ratio_to_reference": "ratio_to_intrinsic"})
    tables.metrics.update(comparison_metrics(comparison))
    tables.metrics.update(_snapo_ratios(tables.values))
    return GasStorageReport(
        comparison=comparison,
        schedule=tables.schedule,
        curve_sensitivity=tables.sens,
        input_sensitivity=tables.input_sens,
        training_curve=training_curve,
        metrics=tables.metrics,
        policy=trained,
        scenario=scenario,
    )


def _lp_tables(scenario: Scenario, params: GasStorageParams, lp: Any, spots: jax.Array) -> _Tables:
    """The LP intrinsic's path values, schedule and forward-curve sensitivities."""
    lp_frame = lp.to_frame(scenario)
    schedule = pd.DataFrame(
        {
            "date": lp_frame["date"],
            "forward": lp_frame["forward"],
            "lp_net_injection": lp_frame["net_injection"],
            "lp_inventory": lp_frame["inventory"],
        }
    )
    sens = pd.DataFrame({"date": lp_frame["date"], "forward": lp_frame["forward"], "lp_dV_dF": lp_frame["sensitivity"]})
    values = {"intrinsic_lp": np.asarray(intrinsic.intrinsic_values_on_paths(lp, spots, params))}
    return _Tables(values=values, schedule=schedule, sens=sens, metrics={"value_intrinsic_lp_model": float(lp.value)})


def _add_snapo(
    tables: _Tables,
    trained: snapo_policy.TrainedPolicy,
    params: GasStorageParams,
    normals: jax.Array,
    spots: jax.Array,
    progress: Progress,
) -> None:
    """SNAPO's path values, sensitivities (decisions held and reacting) and mean schedule."""
    metrics, sens, schedule = tables.metrics, tables.sens, tables.schedule
    metrics["train_seconds"] = float(trained.train_seconds)
    tables.values["snapo"] = np.asarray(snapo_policy.evaluate_policy(trained, normals, params))
    progress("sensitivities", 0, 2)
    _, grads_held = snapo_policy.sensitivities(trained, params, normals, policy_reacts=False)
    progress("sensitivities", 1, 2)
    _, grads_full = snapo_policy.sensitivities(trained, params, normals, policy_reacts=True)
    progress("sensitivities", 2, 2)
    sens["snapo_dV_dF"] = np.asarray(grads_held.forward)
    sens["snapo_dV_dF_full"] = np.asarray(grads_full.forward)
    tables.input_sens = scalar_sensitivities(params, grads_held)
    metrics["n_sensitivities"] = float(count_leaves(grads_held))
    moves, inventory = snapo_policy.schedule(trained, params, normals)
    schedule["snapo_net_injection"] = np.asarray(jnp.mean(moves, axis=0))
    after_move = inventory[:, 1:]
    schedule["snapo_inventory"] = np.asarray(jnp.mean(after_move, axis=0))
    schedule["snapo_inventory_p10"] = np.asarray(jnp.percentile(after_move, 10, axis=0))
    schedule["snapo_inventory_p90"] = np.asarray(jnp.percentile(after_move, 90, axis=0))
    schedule["spot_mean"] = np.asarray(jnp.mean(spots, axis=0))
    lp_l1 = float(np.abs(sens["lp_dV_dF"]).sum())
    if lp_l1 > 0 and params.price_kind is PriceKind.DETERMINISTIC:  # same problem: envelope check
        metrics["snapo_vs_lp_sensitivity_rel_l1"] = float(np.abs(sens["snapo_dV_dF"] - sens["lp_dV_dF"]).sum() / lp_l1)


def _add_baselines(
    tables: _Tables,
    scenario: Scenario,
    normals: jax.Array,
    lp: Any,
    key: jax.Array,
    lsmc_paths: int,
    progress: Progress,
) -> None:
    """Rolling intrinsic, LSMC and do-nothing on the same paths, with their timings."""
    done = iter(range(1, len(baselines.Baseline) + 1))
    progress("baselines", 0, len(baselines.Baseline))
    found = baselines.run_baselines(
        scenario,
        normals,
        key=key,
        lsmc_paths=lsmc_paths,
        intrinsic=lp,
        progress=lambda name, seconds: progress("baselines", next(done), len(baselines.Baseline)),
    )
    tables.values.update({str(name): np.asarray(v) for name, v in found.values.items() if str(name) != "intrinsic_lp"})
    for name, seconds in found.seconds.items():
        tables.metrics[f"seconds_{name}"] = float(seconds)


def _snapo_ratios(values: dict[str, np.ndarray]) -> dict[str, float]:
    """SNAPO's mean value over each baseline's that ran (nonzero), as ``snapo_vs_<baseline>``."""
    if "snapo" not in values:
        return {}
    return {
        f"snapo_vs_{base}": float(np.mean(values["snapo"]) / np.mean(values[base]))
        for base in ("intrinsic_lp", "rolling_intrinsic", "lsmc")
        if base in values and float(np.mean(values[base])) != 0
    }


def scalar_sensitivities(params: Any, grads: Any) -> pd.DataFrame:
    """Table of the sensitivities to every scalar input (facility, costs, price process)."""
    rows = [
        {"input": name, "value": float(getattr(params, name)), "dV_dinput": float(getattr(grads, name))}
        for name in SCALAR_INPUTS
    ]
    for name in ("injection_rates", "withdrawal_rates"):
        rows.append({"input": f"{name} (all knots)", "value": float(jnp.mean(getattr(params, name))),
                     "dV_dinput": float(jnp.sum(getattr(grads, name)))})
    return pd.DataFrame(rows)


def count_leaves(tree: Any) -> int:
    """Number of scalar sensitivities in a pytree."""
    return int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(tree)))
