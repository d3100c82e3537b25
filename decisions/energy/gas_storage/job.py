"""The gas storage batch job: run the methods, compare, record.

``prepare(spec, base_dir)`` (defined in the light ``spec`` module, re-exported here)
validates a job spec into a ``GasStorageJob``; ``run_job(job)`` runs it and returns a
``GasStorageReport``. The platform's ``Domain.execute`` does that inside a recorded run
of the store (the CLI's path).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decisions.core.evaluate import compare
from decisions.core.progress import Progress, silent
from decisions.energy.gas_storage import baselines, intrinsic, snapo_policy
from decisions.energy.gas_storage.params import PriceKind, to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.report import GasStorageReport
from decisions.energy.gas_storage.spec import (  # the light spec module, re-exported for existing callers
    JOB_MODEL,
    EvaluationSettings,
    GasStorageJob,
    Method,
    SnapoSettings,
    prepare,
)
from decisions.jobs.report import comparison_metrics

__all__ = [
    "JOB_MODEL", "REPORT_MODEL", "EvaluationSettings", "GasStorageJob", "Method", "SnapoSettings",
    "count_leaves", "prepare", "run_job", "scalar_sensitivities",
]

REPORT_MODEL = GasStorageReport


def run_job(job: GasStorageJob, *, progress: Progress = silent) -> GasStorageReport:
    """Run a job (``Domain.run_job``): LP intrinsic always; SNAPO and/or the baselines on common
    evaluation paths. The report carries the tables, the metrics and the trained policy."""
    scenario = job.scenario
    params = to_params(scenario)
    key_train, key_eval, key_lsmc = jax.random.split(jax.random.PRNGKey(job.seed), 3)
    metrics: dict[str, float] = {}

    progress("intrinsic LP", 0, 1)
    lp = intrinsic.solve_intrinsic(params)
    progress("intrinsic LP", 1, 1)
    metrics["value_intrinsic_lp_model"] = float(lp.value)

    normals = draw_normals(key_eval, job.evaluation.paths, scenario.horizon)
    _, spots = spot_paths(normals, params)
    values: dict[str, np.ndarray] = {"intrinsic_lp": np.asarray(intrinsic.intrinsic_values_on_paths(lp, spots, params))}
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
    input_sens = pd.DataFrame(columns=["input", "value", "dV_dinput"])
    training_curve = None
    trained = None

    if job.method in (Method.COMPARE, Method.SNAPO):
        trained = snapo_policy.train_policy(
            scenario, job.snapo, key=key_train, progress=lambda d, t, v: progress("SNAPO training", d, t)
        )
        metrics["train_seconds"] = float(trained.train_seconds)
        training_curve = trained.curve()
        values["snapo"] = np.asarray(snapo_policy.evaluate_policy(trained, normals, params))
        progress("sensitivities", 0, 2)
        value_held, grads_held = snapo_policy.sensitivities(trained, params, normals, policy_reacts=False)
        progress("sensitivities", 1, 2)
        _, grads_full = snapo_policy.sensitivities(trained, params, normals, policy_reacts=True)
        progress("sensitivities", 2, 2)
        sens["snapo_dV_dF"] = np.asarray(grads_held.forward)
        sens["snapo_dV_dF_full"] = np.asarray(grads_full.forward)
        input_sens = scalar_sensitivities(params, grads_held)
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

    if job.method in (Method.COMPARE, Method.BASELINES):
        done = iter(range(1, len(baselines.Baseline) + 1))
        progress("baselines", 0, len(baselines.Baseline))
        found = baselines.run_baselines(
            scenario,
            normals,
            key=key_lsmc,
            lsmc_paths=job.evaluation.lsmc_paths,
            intrinsic=lp,
            progress=lambda name, seconds: progress("baselines", next(done), len(baselines.Baseline)),
        )
        values.update({str(name): np.asarray(v) for name, v in found.values.items() if str(name) != "intrinsic_lp"})
        for name, seconds in found.seconds.items():
            metrics[f"seconds_{name}"] = float(seconds)

    comparison = compare(values, reference="intrinsic_lp")
    comparison = comparison.rename(columns={"ratio_to_reference": "ratio_to_intrinsic"})
    metrics.update(comparison_metrics(comparison))
    if "snapo" in values:
        for base in ("intrinsic_lp", "rolling_intrinsic", "lsmc"):
            if base in values and float(np.mean(values[base])) != 0:
                metrics[f"snapo_vs_{base}"] = float(np.mean(values["snapo"]) / np.mean(values[base]))
    return GasStorageReport(
        comparison=comparison,
        schedule=schedule,
        curve_sensitivity=sens,
        input_sensitivity=input_sens,
        training_curve=training_curve,
        metrics=metrics,
        policy=trained,
    )


def scalar_sensitivities(params: Any, grads: Any) -> pd.DataFrame:
    """Table of the sensitivities to every scalar input (facility, costs, price process)."""
    rows = []
    for name in (
        "max_inventory", "min_inventory", "start_inventory", "end_inventory", "injection_cost",
        "withdrawal_cost", "discount_rate", "mean_reversion", "volatility",
    ):
        rows.append({"input": name, "value": float(getattr(params, name)), "dV_dinput": float(getattr(grads, name))})
    for name in ("injection_rates", "withdrawal_rates"):
        rows.append({"input": f"{name} (all knots)", "value": float(jnp.mean(getattr(params, name))),
                     "dV_dinput": float(jnp.sum(getattr(grads, name)))})
    return pd.DataFrame(rows)


def count_leaves(tree: Any) -> int:
    """Number of scalar sensitivities in a pytree."""
    return int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(tree)))
