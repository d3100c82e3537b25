"""``decisions bench utility``: the figures the utility-weight agent promises, measured."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jax
import numpy as np
import pandas as pd

from decisions.core.bench_row import Row
from decisions.core.progress import Progress
from decisions.recsys.utility import obd_study, serving
from decisions.recsys.utility import simulator as sim_mod
from decisions.recsys.utility.spec import prepare
from decisions.recsys.utility.study import off_policy_errors, run_study

SMOKE_BUDGET: dict[str, Any] = {
    "train_requests": 1000, "evaluation_requests": 1000, "steps": 10, "test_requests": 128, "oracle_draws": 2,
    "points": 3, "bootstrap": 10, "ope_replications": 2, "drift_days": 3, "requests_per_day": 300, "timing_calls": 10,
    "batch_requests": 1000, "obd_bootstrap": 10, "obd_sims": 250, "agent": {"hidden": [16], "embedding": 8},
}
"""A benchmark that runs in seconds (the conformance test's): the smoke job's log sizes and Q-network, so
that in one process the two share their compiled programs."""


def run_bench(
    progress: Progress | None = None,
    *,
    train_requests: int = 100_000,
    evaluation_requests: int = 100_000,
    steps: int = 8000,
    test_requests: int = 4096,
    oracle_draws: int = 48,
    points: int = 11,
    bootstrap: int = 200,
    ope_replications: int = 5,
    drift_days: int = 5,
    requests_per_day: int = 50_000,
    timing_calls: int = 2000,
    batch_requests: int = 100_000,
    obd_bootstrap: int = 200,
    obd_sims: int = 100_000,
    agent: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Run the study at this budget, time serving, and run the Open Bandit check.

    Args:
        progress: optional ``(task, done, total)`` callback.
        train_requests: simulated training log requests (validation: a fifth of it).
        evaluation_requests: held-out log requests of the off-policy estimates.
        steps: Q-network Adam steps.
        test_requests: fresh requests every policy is scored on exactly.
        oracle_draws: users per context the per-context oracle averages over.
        points: lambda values of the sweep.
        bootstrap: resamples of the off-policy intervals.
        ope_replications: independent held-out logs the estimator errors are averaged over.
        drift_days: days of the drift scenario.
        requests_per_day: logged requests per drift day.
        timing_calls: single-request decisions timed.
        batch_requests: requests in the timed batch.
        obd_bootstrap: resamples of the Open Bandit intervals.
        obd_sims: Monte Carlo draws of the Bernoulli TS policy.
        agent: other Q-network settings (``[agent]`` of a job spec, e.g. ``hidden``); default the job's.
    """
    report = progress or (lambda task, done, total: None)
    spec = {
        "job": {"name": "bench"},
        "logs": {"train_requests": train_requests, "validation_requests": max(train_requests // 5, 100),
                 "evaluation_requests": evaluation_requests},
        "agent": {**(agent or {}), "steps": steps, "log_every": min(500, steps)},
        "frontier": {"test_requests": test_requests, "oracle_draws": oracle_draws, "points": points,
                     "bootstrap": bootstrap, "ope_replications": ope_replications},
        "drift": {"days": drift_days, "requests_per_day": requests_per_day},
    }
    job = prepare(spec)
    study = run_study(job.simulator, job.weights, job.logs, job.agent, job.frontier, job.drift, progress=report,
                      lambda_input_too=True)
    assert study.model is not None
    figures: dict[str, Any] = {**study.figures, "actions": int(job.weights.matrix().shape[0]),
                               "train_requests": train_requests, "evaluation_requests": evaluation_requests,
                               "test_requests": test_requests}

    production = prepare({**spec, "logs": {**spec["logs"], "logger": "production"}, "drift": {"days": 0}})
    errors = off_policy_errors(production.simulator, production.weights, production.logs, production.frontier,
                               study.model, report)
    figures.update(_production_logger_figures(errors))

    world = sim_mod.make_world(job.simulator)
    contexts = np.asarray(sim_mod.draw_profiles(jax.random.PRNGKey(123), world, batch_requests).context())
    report("serving speed", 0, 2)
    latency = serving.latency_ms(study.model, contexts, calls=timing_calls)
    figures.update({"decide_p50_ms": latency["p50"], "decide_p99_ms": latency["p99"]})
    report("serving speed", 1, 2)
    figures["batch_requests_per_s"] = serving.throughput(study.model, contexts)
    figures["batch_requests"] = batch_requests
    report("serving speed", 2, 2)

    report("open bandit check", 0, 1)
    obd_figures, _ = obd_study.standard_check(n_boot=obd_bootstrap, seed=0, n_sim=obd_sims)
    figures.update(obd_figures)
    report("open bandit check", 1, 1)
    return figures


def _production_logger_figures(errors: pd.DataFrame) -> dict[str, float]:
    """Each estimator's relative error and interval coverage (``off_policy_errors``) for the same learnt
    policy on held-out epsilon-production logs."""
    figures: dict[str, float] = {}
    for row in errors.itertuples():
        suffix = "" if row.objective == "engagement" else f"_{row.objective}"
        figures[f"production_logger_{row.estimator}_rel_error{suffix}"] = float(row.mean_rel_error)
        figures[f"production_logger_{row.estimator}_ci_coverage{suffix}"] = float(row.ci_coverage)
    return figures


README_ROWS: tuple[Row, ...] = (
    Row(
        "learnt policy at the production weights' revenue: engagement gap closed, best global weights -> "
        "per-context oracle (linear sweeps alone)",
        "{gain_share_of_oracle:.2f} ({linear_gain_share_of_oracle:.2f}); to the clairvoyant per-request oracle: "
        "{gain_share_of_request_oracle:.2f}",
    ),
    Row(
        "engagement at the production weights' revenue: learnt / best global weights (production's own: "
        "{production_engagement:.4f}) / LinUCB / per-context oracle",
        "{engagement_at_production_revenue_learnt:.4f} ({engagement_gain_vs_production:+.1%} over production) / "
        "{engagement_at_production_revenue_global:.4f} / {engagement_at_production_revenue_linucb:.4f} / "
        "{engagement_at_production_revenue_context_oracle:.4f}",
    ),
    Row(
        "the same gap closed by LinUCB; by a Q-network with lambda as an input (the abstract's form, same logs "
        "and budget)",
        "{gain_share_of_oracle_linucb:.2f}; {gain_share_of_oracle_learnt_lambda_input:.2f} (hypervolume ratio "
        "{hypervolume_ratio_vs_global_learnt_lambda_input:.2f})",
    ),
    Row(
        "hypervolume (exact): learnt / best global weights (ratio); LinUCB, per-context oracle",
        "{hv_learnt:.3f} / {hv_global:.3f} ({hypervolume_ratio_vs_global:.2f}); {hv_linucb:.3f}, {hv_context_oracle:.3f}",
    ),
    Row(
        "Chebyshev sweep, points no linear-sweep point dominates (learnt, global); above every mix of them",
        "{chebyshev_points_undominated_learnt:.0f}, {chebyshev_points_undominated_global:.0f}; "
        "{chebyshev_points_beyond_linear_learnt:.0f}, {chebyshev_points_beyond_linear_global:.0f} (of 11 each)",
    ),
    Row(
        "off-policy rel. error, learnt policy at lambda 0.5, mean over {ope_replications:.0f} held-out logs of 100k "
        "uniform requests (engagement): DR, IPS, SNIPS, DM, switch-DR; 95% interval coverage DR, IPS",
        "{dr_rel_error:.3f}, {ips_rel_error:.3f}, {snips_rel_error:.3f}, {dm_rel_error:.3f}, {switch_dr_rel_error:.3f}; "
        "{dr_ci_coverage:.0%}, {ips_ci_coverage:.0%}",
    ),
    Row(
        "the same on epsilon-production logs (epsilon 0.1): DR, IPS, SNIPS, DM, switch-DR",
        "{production_logger_dr_rel_error:.3f}, {production_logger_ips_rel_error:.3f}, "
        "{production_logger_snips_rel_error:.3f}, {production_logger_dm_rel_error:.3f}, "
        "{production_logger_switch_dr_rel_error:.3f}",
    ),
    Row(
        "drift, lambda-0.5 utility on day 4: retrained daily / trained on day 0 / day-0 global weights; "
        "days 2-4 the retrained policy wins",
        "{drift_day4_retrained_policy:.3f} / {drift_day4_day0_policy:.3f} / {drift_day4_day0_global:.3f}; "
        "{drift_days_retrained_wins:.0f} of 3",
    ),
    Row(
        "Open Bandit sample, BTS click rate from random logs (campaign all): rel. error DR, IPS, SNIPS, DM "
        "(truth {obd_truth_all:.4f}, 95% CI {obd_truth_ci_low_all:.4f}-{obd_truth_ci_high_all:.4f})",
        "{obd_rel_error_dr_all:.2f}, {obd_rel_error_ips_all:.2f}, {obd_rel_error_snips_all:.2f}, "
        "{obd_rel_error_dm_all:.2f}",
    ),
    Row("serving: one request p99 (after compilation), batch throughput",
        "{decide_p99_ms:.3f} ms, {batch_requests_per_s:,.0f} requests/s"),
)
"""The README's utility table (``decisions bench report``)."""
