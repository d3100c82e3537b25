"""The pension ALM study: SNAPO and the best fixed mix trained, compared on common paths, with sensitivities."""

from __future__ import annotations

import jax
import numpy as np

from decisions.core.evaluate import compare
from decisions.core.progress import Progress, silent
from decisions.finance.pension import baselines
from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.report import PensionReport, allocation, funding_fan
from decisions.finance.pension.scenario import Scenario
from decisions.finance.pension.simulator import draw_normals
from decisions.finance.pension.spec import EvaluationSettings, PensionSnapoSettings
from decisions.finance.pension.valuation import liability_risk
from decisions.kit.report import comparison_metrics


def run_study(
    scenario: Scenario, snapo: PensionSnapoSettings, evaluation: EvaluationSettings, *, seed: int,
    progress: Progress = silent,
) -> PensionReport:
    """Train SNAPO and the best fixed mix, compare them on fresh paths, compute sensitivities.

    The report carries the tables, the metrics and the trained policy.
    """
    params = to_params(scenario)
    key_train, key_fixed, key_eval = jax.random.split(jax.random.PRNGKey(seed), 3)
    metrics: dict[str, float] = {}

    trained = sp.train_policy(
        params, snapo, key=key_train, progress=lambda d, t, v: progress("SNAPO training", d, t)
    )
    metrics["train_seconds"] = float(trained.train_seconds)
    fixed = baselines.best_fixed_mix(
        params,
        snapo,
        key=key_fixed,
        selection_paths=evaluation.selection_paths,
        progress=lambda d, t, v: progress("fixed-mix training", d, t),
    )

    progress("evaluation", 0, 2)
    normals = draw_normals(key_eval, evaluation.paths, params.months, params.n_shocks)
    outcome, trajectory = sp.simulate(trained, params, normals)
    fixed_outcome, fixed_trajectory = sp.simulate(fixed.policy, params, normals)
    values = {"snapo": np.asarray(outcome.value), "fixed_mix": np.asarray(fixed_outcome.value)}
    comparison = compare(values, reference="fixed_mix")
    metrics.update(comparison_metrics(comparison))
    metrics["snapo_minus_fixed_mix"] = float(comparison.loc["snapo", "diff_mean"])
    metrics["snapo_minus_fixed_mix_stderr"] = float(comparison.loc["snapo", "diff_stderr"])
    progress("evaluation", 1, 2)

    found = sp.sensitivities(trained, params, normals)
    tables = found.tables()
    metrics["n_sensitivities"] = float(found.count)
    metrics["terminal_funding_ratio_median"] = float(np.median(np.asarray(trajectory.funding_ratio[:, -1])))
    progress("evaluation", 2, 2)
    risk = liability_risk(scenario)
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
        scenario=scenario,
    )
