"""The pension ALM batch job: validate a spec, train SNAPO and the fixed mix, compare, record.

``prepare(spec, base_dir)`` validates a job spec (TOML tables ``[job]``,
``[scenario]``, ``[snapo]``, ``[evaluation]``) into a ``PensionJob``;
``run_job(job)`` runs it and returns a ``PensionReport``; ``execute(job)`` does
that inside a recorded run of the store (the CLI's path). The job kind to
register in ``decisions.jobs.kinds`` is ``KIND``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from decisions.core.evaluate import compare
from decisions.core.progress import Progress, silent
from decisions.finance.pension import baselines
from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.params import to_params
from decisions.finance.pension.report import PensionReport, allocation, funding_fan
from decisions.finance.pension.scenario import Scenario
from decisions.finance.pension.simulator import draw_normals
from decisions.finance.pension.valuation import liability_risk
from decisions.jobs.record import execute_recorded
from decisions.jobs.validate import spec_data, validate_job

KIND = "pension"


class EvaluationSettings(BaseModel):
    """How the policies are scored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    paths: int = Field(1024, gt=0, le=100_000, description="Fresh common evaluation paths.")
    selection_paths: int = Field(512, gt=0, le=100_000, description="Training paths that pick the fixed mix.")


class PensionJob(BaseModel):
    """A validated pension ALM job."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("pension", min_length=1, max_length=200)
    seed: int = Field(0, ge=0)
    output_dir: str | None = Field(None, description="Where tables and the chart go (default: next to the store).")
    scenario: Scenario = Field(default_factory=Scenario)
    snapo: sp.PensionSnapoSettings = Field(default_factory=sp.PensionSnapoSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)

    def config(self) -> dict[str, Any]:
        """JSON-ready configuration for the run store."""
        return self.model_dump(mode="json")


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> PensionJob:
    """Validate a job spec into a ``PensionJob``.

    Args:
        spec: the parsed TOML tables.
        base_dir: folder of the spec file (unused: the pension spec has no file references).

    Raises:
        InputError: naming the first bad field.
    """
    del base_dir
    sections = ("scenario", "snapo", "evaluation")
    return validate_job(PensionJob, spec_data(spec, sections), sections)


def run_job(job: PensionJob, *, progress: Progress = silent) -> PensionReport:
    """Train SNAPO and the best fixed mix, compare them on fresh paths, compute sensitivities.

    Args:
        job: the validated job.
        progress: progress callback ``(task, done, total)``.

    Returns:
        The report (tables, metrics, trained policy).
    """
    params = to_params(job.scenario)
    key_train, key_fixed, key_eval = jax.random.split(jax.random.PRNGKey(job.seed), 3)
    metrics: dict[str, float] = {}

    trained = sp.train_policy(
        params, job.snapo, key=key_train, progress=lambda d, t, v: progress("SNAPO training", d, t)
    )
    metrics["train_seconds"] = float(trained.train_seconds)
    fixed = baselines.best_fixed_mix(
        params,
        job.snapo,
        key=key_fixed,
        selection_paths=job.evaluation.selection_paths,
        progress=lambda d, t, v: progress("fixed-mix training", d, t),
    )

    progress("evaluation", 0, 2)
    normals = draw_normals(key_eval, job.evaluation.paths, params.months, params.n_shocks)
    outcome, trajectory = sp.simulate(trained, params, normals)
    fixed_outcome, fixed_trajectory = sp.simulate(fixed.policy, params, normals)
    values = {"snapo": np.asarray(outcome.value), "fixed_mix": np.asarray(fixed_outcome.value)}
    comparison = compare(values, reference="fixed_mix")
    for name in comparison.index:
        metrics[f"value_{name}"] = float(comparison.loc[name, "mean"])
        metrics[f"stderr_{name}"] = float(comparison.loc[name, "stderr"])
    metrics["snapo_minus_fixed_mix"] = float(comparison.loc["snapo", "diff_mean"])
    metrics["snapo_minus_fixed_mix_stderr"] = float(comparison.loc["snapo", "diff_stderr"])
    progress("evaluation", 1, 2)

    found = sp.sensitivities(trained, params, normals)
    tables = found.tables()
    metrics["n_sensitivities"] = float(found.count)
    metrics["terminal_funding_ratio_median"] = float(np.median(np.asarray(trajectory.funding_ratio[:, -1])))
    progress("evaluation", 2, 2)
    risk = liability_risk(job.scenario)
    metrics.update({f"liability_{k}": v for k, v in risk.summary().items()})
    return PensionReport(
        comparison=comparison,
        funding_fan=funding_fan(trajectory),
        allocation=allocation(trajectory, params.asset_names),
        fixed_mix_allocation=allocation(fixed_trajectory, params.asset_names),
        key_rate_sensitivity=tables["key_rates"],
        asset_sensitivity=tables["assets"],
        correlation_sensitivity=tables["correlations"],
        input_sensitivity=tables["scalars"],
        liability_risk=risk.key_rate_table(),
        training_curve=trained.curve(),
        metrics=metrics,
        policy=trained,
    )


def execute(
    job: PensionJob, *, url: str | None = None, progress: Progress = silent, sweep_id: str | None = None
) -> int:
    """Run a job inside a recorded run: config, metrics, tables, chart and policy are stored.

    Returns:
        The run id. On an exception the run is recorded as failed and the exception re-raised.
    """

    def save_policy(report: PensionReport, folder: Path) -> dict[str, Path]:
        if report.policy is None:
            return {}
        path = folder / "snapo_policy.msgpack"
        sp.save_policy(path, report.policy)
        return {"snapo_policy": path}

    return execute_recorded(
        KIND, job.name, job.config(), lambda: run_job(job, progress=progress),
        url=url, sweep_id=sweep_id, output_dir=job.output_dir, extra_files=save_policy,
    )
