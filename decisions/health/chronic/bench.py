"""Chronic care's benchmark: offline learners against the exact optimum on both diseases
(``decisions bench chronic --json``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from decisions.core.bench_row import Row
from decisions.health.chronic.settings import Clinicians, Data, HtnMachine, Problem, Reward, T2dMachine
from decisions.health.chronic.study import run_study

SMOKE_BUDGET: dict[str, Any] = {"patients": 100, "seeds": 1, "sweep_patients": (100,), "sweep_low_shares": (0.6,)}
"""A budget that runs in seconds."""

README_ROWS: tuple[Row, ...] = (
    Row("T2D TTC share in {horizon} months: kappa-weighted minus uniform offline RL (pp)",
        "{t2d_kappa_vs_uniform_ttc_pp:+.2f} ± {t2d_kappa_vs_uniform_ttc_pp_std:.2f}"),
    Row("HTN TTC share: kappa-weighted minus uniform offline RL (pp)",
        "{htn_kappa_vs_uniform_ttc_pp:+.2f} ± {htn_kappa_vs_uniform_ttc_pp_std:.2f}"),
    Row("T2D TTC share: uniform offline RL minus the behaviour policy (pp)", "{t2d_uniform_vs_behaviour_ttc_pp:+.2f}"),
    Row("HTN TTC share: uniform offline RL minus the behaviour policy (pp)", "{htn_uniform_vs_behaviour_ttc_pp:+.2f}"),
    Row("best offline TTC share / exact optimum (T2D, HTN)",
        "{offline_best_vs_optimal_t2d:.3f}, {offline_best_vs_optimal_htn:.3f}"),
    Row("epsilon-aware minus naive, worst held-out regime (pp; learnt, exact)",
        "{eps_aware_minus_naive_ttc_pp_min:+.2f}, {eps_aware_minus_naive_exact_ttc_pp_min:+.2f}"),
    Row("unlearning equals retraining bit for bit; time unlearn / retrain (worst disease)",
        "{unlearn_equals_retrain}; one patient {unlearn_seconds_vs_retrain_one:.2f} "
        "({unlearn_ms_one:.2f} ms / {retrain_ms_one:.2f} ms), 1% of patients {unlearn_seconds_vs_retrain_share:.2f} "
        "({unlearn_ms_share:.2f} ms / {retrain_ms_share:.2f} ms)"),
)
"""The docs' figure table (``core.bench_row.Row`` templates over the figures)."""


def run_bench(progress: Callable[[str, int, int], None] | None = None, *, patients: int = 2000, seeds: int = 5,
              sweep_patients: tuple[int, ...] = (200, 1000, 5000), sweep_low_shares: tuple[float, ...] = (0.2, 0.6, 0.9),
              seed: int = 0) -> dict[str, Any]:
    """The study at the default machines, reward and clinicians: its headline figures, budget and wall time."""
    start = time.perf_counter()
    problem = Problem()
    data = Data(patients=patients, seeds=seeds, sweep_patients=sweep_patients, sweep_low_shares=sweep_low_shares)
    study = run_study(problem, HtnMachine(), T2dMachine(), Reward(), Clinicians(), data, seed=seed,
                      progress=progress or (lambda task, done, total: None))
    figures = study.metrics()
    figures["unlearn_equals_retrain"] = bool(figures["unlearn_equals_retrain"])
    tiers = zip(Reward().thresholds, Reward().payments, strict=True)
    return {**figures, "horizon": problem.horizon, "patients": patients, "seeds": seeds,
            "tiers": ", ".join(f"visit {t}: {p:g}" for t, p in tiers), "seconds": time.perf_counter() - start}
