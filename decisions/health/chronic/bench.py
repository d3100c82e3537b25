"""Chronic care's benchmark: offline learners against the exact optimum on both diseases
(``decisions bench chronic --json``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from decisions.core.bench_row import Row, Target
from decisions.health.chronic.peer_bench import capability_figures, peer_figures
from decisions.health.chronic.settings import Data, Neural
from decisions.health.chronic.spec import ChronicJob
from decisions.health.chronic.study import run_study

SMOKE_BUDGET: dict[str, Any] = {"patients": 100, "seeds": 1, "sweep_patients": (100,), "sweep_low_shares": (0.6,),
                                "sweep_execution_gaps": (0.9,), "unlearn_patients": (400,), "neural_steps": 50,
                                "peer": False}
"""A budget that runs in seconds."""

TARGETS: tuple[Target, ...] = (
    Target("offline_best_vs_optimal_t2d", ">=", 0.9, "T2D: the best offline method's TTC share over exact value iteration's"),
    Target("offline_best_vs_optimal_htn", ">=", 0.9, "HTN: the best offline method's TTC share over exact value iteration's"),
    Target("eps_aware_minus_naive_ttc_pp_min", ">", 0.0,
           "epsilon-aware minus naive training, TTC share (pp), worst held-out regime"),
    Target("ours_vs_d3rlpy_cql_ttc", ">=", 1.0, "our CQL's TTC share over d3rlpy's DiscreteCQL's"),
    Target("unlearn_equals_retrain", "==", True, "exact unlearning equals retraining, bit for bit"),
    Target("unlearn_seconds_vs_retrain", "<=", 0.05, "unlearning time over retraining time"),
)
"""The bounds the stored bench is held to (the README's targets table)."""

README_ROWS: tuple[Row, ...] = (
    Row("T2D TTC share in {horizon} months: kappa-weighted minus uniform offline RL (pp)",
        "{t2d_kappa_vs_uniform_ttc_pp:+.2f} ± {t2d_kappa_vs_uniform_ttc_pp_std:.2f}"),
    Row("HTN TTC share: kappa-weighted minus uniform offline RL (pp)",
        "{htn_kappa_vs_uniform_ttc_pp:+.2f} ± {htn_kappa_vs_uniform_ttc_pp_std:.2f}"),
    Row("T2D TTC share: uniform offline RL minus the behaviour policy (pp)", "{t2d_uniform_vs_behaviour_ttc_pp:+.2f}"),
    Row("HTN TTC share: uniform offline RL minus the behaviour policy (pp)", "{htn_uniform_vs_behaviour_ttc_pp:+.2f}"),
    Row("behaviour cloning, kappa-weighted minus uniform (pp; T2D, HTN): kappa given / estimated from the logs",
        "{t2d_bc_kappa_vs_uniform_ttc_pp:+.2f} / {t2d_bc_kappa_est_vs_uniform_ttc_pp:+.2f}, "
        "{htn_bc_kappa_vs_uniform_ttc_pp:+.2f} / {htn_bc_kappa_est_vs_uniform_ttc_pp:+.2f}"),
    Row("kappa estimated from the logs: error per clinician, mean and largest (T2D; HTN)",
        "{t2d_kappa_est_mae:.3f}, {t2d_kappa_est_max_error:.3f}; {htn_kappa_est_mae:.3f}, {htn_kappa_est_max_error:.3f}"),
    Row("best offline TTC share / exact optimum (T2D, HTN)",
        "{offline_best_vs_optimal_t2d:.3f}, {offline_best_vs_optimal_htn:.3f}"),
    Row("epsilon-aware minus naive, worst held-out regime: TTC share (pp; learnt, exact)",
        "{eps_aware_minus_naive_ttc_pp_min:+.2f}, {eps_aware_minus_naive_exact_ttc_pp_min:+.2f}"),
    Row("epsilon-aware minus naive, worst held-out regime: tiered value (learnt, exact)",
        "{eps_aware_minus_naive_value_min:+.4f}, {eps_aware_minus_naive_exact_value_min:+.4f}"),
    Row("epsilon-aware minus naive per held-out regime, TTC share (pp; learnt / exact), T2D: no labs, quarterly "
        "visits, step cap 2, minimal",
        "{t2d_eps_aware_minus_naive_ttc_pp_no_labs:+.2f} / {t2d_eps_aware_minus_naive_exact_ttc_pp_no_labs:+.2f}, "
        "{t2d_eps_aware_minus_naive_ttc_pp_quarterly:+.2f} / {t2d_eps_aware_minus_naive_exact_ttc_pp_quarterly:+.2f}, "
        "{t2d_eps_aware_minus_naive_ttc_pp_step_cap:+.2f} / {t2d_eps_aware_minus_naive_exact_ttc_pp_step_cap:+.2f}, "
        "{t2d_eps_aware_minus_naive_ttc_pp_minimal:+.2f} / {t2d_eps_aware_minus_naive_exact_ttc_pp_minimal:+.2f}",
        optional=True),
    Row("the same, HTN",
        "{htn_eps_aware_minus_naive_ttc_pp_no_labs:+.2f} / {htn_eps_aware_minus_naive_exact_ttc_pp_no_labs:+.2f}, "
        "{htn_eps_aware_minus_naive_ttc_pp_quarterly:+.2f} / {htn_eps_aware_minus_naive_exact_ttc_pp_quarterly:+.2f}, "
        "{htn_eps_aware_minus_naive_ttc_pp_step_cap:+.2f} / {htn_eps_aware_minus_naive_exact_ttc_pp_step_cap:+.2f}, "
        "{htn_eps_aware_minus_naive_ttc_pp_minimal:+.2f} / {htn_eps_aware_minus_naive_exact_ttc_pp_minimal:+.2f}",
        optional=True),
    Row("kappa-weighted minus uniform offline RL across the sweep, T2D (pp; min, max)",
        "{t2d_sweep_mb_kappa_vs_uniform_pp_min:+.2f}, {t2d_sweep_mb_kappa_vs_uniform_pp_max:+.2f}"),
    Row("kappa-weighted minus uniform offline RL across the sweep, HTN (pp; min, max)",
        "{htn_sweep_mb_kappa_vs_uniform_pp_min:+.2f}, {htn_sweep_mb_kappa_vs_uniform_pp_max:+.2f}"),
    Row("the sweep's largest kappa-weighted minus uniform gap at execution gap 0, 0.5, 0.9 (pp; T2D; HTN)",
        "{t2d_sweep_mb_kappa_vs_uniform_pp_max_gap_0:+.2f}, {t2d_sweep_mb_kappa_vs_uniform_pp_max_gap_50:+.2f}, "
        "{t2d_sweep_mb_kappa_vs_uniform_pp_max_gap_90:+.2f}; {htn_sweep_mb_kappa_vs_uniform_pp_max_gap_0:+.2f}, "
        "{htn_sweep_mb_kappa_vs_uniform_pp_max_gap_50:+.2f}, {htn_sweep_mb_kappa_vs_uniform_pp_max_gap_90:+.2f}",
        optional=True),
    Row("discrete CQL (ours) TTC share, train regime (T2D, HTN): uniform, kappa-weighted",
        "{t2d_ttc_cql_uniform:.3f}, {t2d_ttc_cql_kappa:.3f}; {htn_ttc_cql_uniform:.3f}, {htn_ttc_cql_kappa:.3f}"),
    Row("d3rlpy DiscreteCQL TTC share (T2D, HTN); ours (uniform) / d3rlpy, worst disease",
        "{t2d_ttc_cql_d3rlpy:.3f}, {htn_ttc_cql_d3rlpy:.3f}; {ours_vs_d3rlpy_cql_ttc:.3f}", optional=True),
    Row("ours (uniform) minus d3rlpy per data draw (pp, mean ± spread; T2D, HTN)",
        "{t2d_ours_minus_d3rlpy_cql_ttc_pp:+.2f} ± {t2d_ours_minus_d3rlpy_cql_ttc_pp_std:.2f}, "
        "{htn_ours_minus_d3rlpy_cql_ttc_pp:+.2f} ± {htn_ours_minus_d3rlpy_cql_ttc_pp_std:.2f}", optional=True),
    Row("training seconds: ours per variant ({cql_variants:.0f} variants in one program), d3rlpy per training",
        "{cql_seconds_per_variant:.2f} ({cql_seconds_all_variants:.1f} in all), {d3rlpy_cql_seconds:.1f}",
        optional=True),
    Row("unlearning equals retraining bit for bit", "{unlearn_equals_retrain}"),
    Row("time unlearn / retrain, {unlearn_patients:,.0f} patients (worst disease)",
        "one patient {unlearn_seconds_vs_retrain_one:.3f} ({unlearn_ms_one:.2f} ms / {retrain_ms_one:.1f} ms), "
        "1% of patients {unlearn_seconds_vs_retrain_share:.3f} ({unlearn_ms_share:.2f} ms / {retrain_ms_share:.1f} ms)"),
    Row("time unlearn / retrain, the study's {unlearn_patients_study:,.0f} patients",
        "one patient {unlearn_seconds_vs_retrain_one_study:.2f} ({unlearn_ms_one_study:.2f} ms / "
        "{retrain_ms_one_study:.2f} ms), 1% {unlearn_seconds_vs_retrain_share_study:.2f}"),
)
"""The docs' figure table (``core.bench_row.Row`` templates over the figures)."""


def run_bench(progress: Callable[[str, int, int], None] | None = None, *, patients: int = 2000, seeds: int = 5,
              sweep_patients: tuple[int, ...] = (200, 1000, 5000), sweep_low_shares: tuple[float, ...] = (0.2, 0.6, 0.9),
              sweep_execution_gaps: tuple[float, ...] = (0.0, 0.5, 0.9), unlearn_patients: tuple[int, ...] = (200_000,),
              neural_steps: int = Neural().steps, peer: bool = True, seed: int = 0) -> dict[str, Any]:
    """The study at the default machines, reward and clinicians (discrete CQL included), d3rlpy's
    DiscreteCQL beside it where installed (``peer``): the headline figures, budget and wall time."""
    start = time.perf_counter()
    data = Data(patients=patients, seeds=seeds, sweep_patients=sweep_patients, sweep_low_shares=sweep_low_shares,
                sweep_execution_gaps=sweep_execution_gaps, unlearn_patients=unlearn_patients)
    job = ChronicJob(data=data, neural=Neural(steps=neural_steps), seed=seed)
    study = run_study(job.care(), seed=seed, neural=job.neural,
                      progress=progress or (lambda task, done, total: None))
    figures = study.metrics() | capability_figures(job.care(), seed)
    if peer:
        figures |= peer_figures(job.care(), job.neural, seed, study.per_seed)
    figures["unlearn_equals_retrain"] = bool(figures["unlearn_equals_retrain"])
    tiers = zip(job.reward.thresholds, job.reward.payments, strict=True)
    return {**figures, "horizon": job.problem.horizon, "patients": patients, "seeds": seeds, "neural_steps": neural_steps,
            "tiers": ", ".join(f"visit {t}: {p:g}" for t, p in tiers), "seconds": time.perf_counter() - start}
