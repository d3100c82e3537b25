"""The gas storage batch job: validate a spec, run the methods, compare, record.

``prepare(spec, base_dir)`` validates a job spec (TOML tables ``[job]``,
``[scenario]``, ``[snapo]``, ``[evaluation]``) into a ``GasStorageJob``;
``run_job(job)`` runs it and returns a ``GasStorageReport``. The platform's
``Domain.execute`` does that inside a recorded run of the store (the CLI's path).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from pydantic import Field

from decisions.core.evaluate import compare
from decisions.core.progress import Progress, silent
from decisions.core.settings import Settings
from decisions.energy.gas_storage import baselines, intrinsic, snapo_policy
from decisions.energy.gas_storage.curve_io import load_forward_curve_csv
from decisions.energy.gas_storage.params import PriceKind, to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.report import GasStorageReport
from decisions.energy.gas_storage.scenario import Scenario
from decisions.energy.gas_storage.snapo_policy import SnapoSettings
from decisions.jobs.base import JobBase, spec_path


class Method(StrEnum):
    """What a job computes."""

    COMPARE = "compare"
    """SNAPO and every baseline on common paths (the demo)."""
    SNAPO = "snapo"
    """SNAPO only (plus the LP intrinsic value as a reference)."""
    BASELINES = "baselines"
    """LP intrinsic, rolling intrinsic, LSMC and do-nothing only."""


class EvaluationSettings(Settings):
    """How methods are scored."""

    paths: int = Field(256, gt=0, le=100_000, description="Common out-of-sample evaluation paths.")
    lsmc_paths: int = Field(1000, gt=0, le=200_000, description="Training paths of the LSMC regressions.")


class GasStorageJob(JobBase):
    """A validated gas storage job."""

    SECTIONS = ("scenario", "snapo", "evaluation")

    name: str = Field("gas-storage", min_length=1, max_length=200)
    method: Method = Method.COMPARE
    scenario: Scenario = Field(default_factory=Scenario)
    snapo: SnapoSettings = Field(default_factory=SnapoSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """``scenario.forward_curve_csv`` (relative to ``base_dir``) replaces ``scenario.forward_curve``;
        its first date, if any, sets ``start_date``."""
        scenario = data.setdefault("scenario", {})
        csv = scenario.pop("forward_curve_csv", None)
        if csv is not None:
            curve, first = load_forward_curve_csv(spec_path(csv, base_dir), field="scenario.forward_curve_csv")
            scenario["forward_curve"] = curve
            if first is not None:
                scenario.setdefault("start_date", first)


JOB_MODEL = GasStorageJob
REPORT_MODEL = GasStorageReport


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> GasStorageJob:
    """Validate a job spec into a ``GasStorageJob`` (see ``GasStorageJob.rewrite`` for the curve CSV).

    Raises:
        InputError: naming the first bad field.
    """
    return GasStorageJob.from_spec(spec, base_dir)


def run_job(job: GasStorageJob, *, progress: Progress = silent) -> GasStorageReport:
    """Run a job: LP intrinsic always; SNAPO and/or the baselines on common evaluation paths.

    Args:
        job: the validated job.
        progress: progress callback ``(task, done, total)``.

    Returns:
        The report (tables, metrics, trained policy).
    """
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
    for name in comparison.index:
        metrics[f"value_{name}"] = float(comparison.loc[name, "mean"])
        metrics[f"stderr_{name}"] = float(comparison.loc[name, "stderr"])
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
