"""Chronic care's study tables: per-seed rows summarised, the Q-value table and the headline figures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from decisions.health.chronic.data import Logs
from decisions.health.chronic.model import N_TRANSIENT, state_table
from decisions.health.chronic.scoring import Case
from decisions.health.chronic.settings import ACTIONS
from decisions.health.chronic.training import count_transitions, fit_model_based

KEYS = ["disease", "method", "regime"]
SWEEP_KEYS = ["disease", "execution_gap", "low_share", "patients", "method"]
OFFLINE = ("mb_kappa_aware", "mb_uniform_aware", "mb_kappa_est_aware", "bc_kappa_aware", "bc_uniform_aware",
           "bc_kappa_est_aware", "cql_kappa_aware", "cql_uniform_aware")
"""The offline methods compared with the optimum (in the train regime aware and naive coincide)."""


def _spread(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    grouped = frame.groupby(keys, sort=False)
    return grouped.agg(ttc_share=("ttc_share", "mean"), ttc_share_std=("ttc_share", lambda x: x.std(ddof=0)),
                       value=("value", "mean"), value_std=("value", lambda x: x.std(ddof=0)),
                       seeds=("ttc_share", "size")).reset_index()


def summarise(rows: list[dict[str, Any]], sweep: list[dict[str, Any]]) -> tuple[pd.DataFrame, ...]:
    """The per-seed frame, the comparison (mean and spread over seeds), the mean TTC curves and the sweep."""
    per_seed = pd.DataFrame([{k: v for k, v in r.items() if k != "curve"} for r in rows])
    curves = []
    for key, group in pd.DataFrame(rows).groupby(KEYS, sort=False):
        mean = np.mean(np.stack(group["curve"].to_list()), axis=0)
        curves += [dict(zip(KEYS, key, strict=True)) | {"visit": t + 1, "share": float(v)} for t, v in enumerate(mean)]
    sweep_frame = pd.DataFrame(sweep).drop(columns=["curve"])
    sweep_table = _spread(sweep_frame, SWEEP_KEYS)
    return per_seed, _spread(per_seed, KEYS), pd.DataFrame(curves), sweep_table


def q_table(case: Case, logs: Logs, min_count: int = 1) -> pd.DataFrame:
    """The first visit's Q-values in the train regime, of the optimum and the kappa-weighted learner
    (NaN where the regime does not allow the action)."""
    mask = case.masks[case.train_regime]
    learnt = fit_model_based(count_transitions(logs), True, case.reward, case.horizon, mask, min_count)
    comp = state_table()
    frames = []
    for method, solution in (("optimal", case.optimal[case.train_regime]), ("mb_kappa_aware", learnt)):
        q = np.asarray(solution.q[0])[:, :N_TRANSIENT]
        for a, action in enumerate(ACTIONS):
            frames.append(pd.DataFrame({
                "disease": case.name, "method": method, "band": comp[:, 0], "step": comp[:, 1],
                "adherent": comp[:, 2], "side_effect": comp[:, 3], "since": comp[:, 4], "action": action,
                "q": np.where(np.isfinite(q[a]), q[a], np.nan)}))
    return pd.concat(frames, ignore_index=True)


def _gap(per_seed: pd.DataFrame, disease: str, regime: str, a: str, b: str, column: str) -> tuple[float, float]:
    """Mean and spread over seeds of ``a``'s ``column`` minus ``b``'s (an exact method has seed -1)."""
    rows = per_seed[(per_seed.disease == disease) & (per_seed.regime == regime)]
    first, second = (rows[rows.method == m].set_index("seed")[column] for m in (a, b))
    gap = (first - (second.iloc[0] if list(second.index) == [-1] else second)).dropna()
    return float(gap.mean()), float(gap.std(ddof=0))


def _pp_gap(per_seed: pd.DataFrame, disease: str, regime: str, a: str, b: str) -> tuple[float, float]:
    """Mean and spread over seeds of ``a`` minus ``b`` (TTC share, percentage points)."""
    mean, spread = _gap(per_seed, disease, regime, a, b, "ttc_share")
    return 100 * mean, 100 * spread


def sweep_gaps(sweep: pd.DataFrame, disease: str, tag: str) -> pd.Series:
    """The sweep's kappa-weighted minus uniform TTC share of the ``tag`` learner (``mb`` or ``bc``),
    in percentage points, indexed by execution gap, low-capability share and data size."""
    rows = sweep[sweep["disease"] == disease].set_index(SWEEP_KEYS[1:])["ttc_share"]
    return 100 * (rows.xs(f"{tag}_kappa_aware", level="method") - rows.xs(f"{tag}_uniform_aware", level="method"))


def headline(per_seed: pd.DataFrame, comparison: pd.DataFrame, unlearning: pd.DataFrame, sweep: pd.DataFrame,
             train_regime: str) -> dict[str, float]:
    """The done-means figures, per disease studied, the sweep's extremes and the unlearning figures."""
    figures: dict[str, float] = {}
    gaps, exact_gaps, value_gaps, exact_value_gaps = [], [], [], []
    for disease in comparison.disease.unique():
        table = comparison[(comparison.disease == disease) & (comparison.regime == train_regime)]
        share = table.set_index("method")["ttc_share"]
        for method in ("optimal", "behaviour", "usual_care", "mb_kappa_aware", "mb_uniform_aware", "cql_kappa_aware",
                       "cql_uniform_aware"):
            if method in share.index:
                figures[f"{disease}_ttc_{method.removesuffix('_aware')}"] = float(share[method])
        for name, a, b in (("kappa_vs_uniform", "mb_kappa_aware", "mb_uniform_aware"),
                           ("bc_kappa_vs_uniform", "bc_kappa_aware", "bc_uniform_aware"),
                           ("kappa_est_vs_uniform", "mb_kappa_est_aware", "mb_uniform_aware"),
                           ("bc_kappa_est_vs_uniform", "bc_kappa_est_aware", "bc_uniform_aware"),
                           ("uniform_vs_behaviour", "mb_uniform_aware", "behaviour"),
                           ("cql_kappa_vs_uniform", "cql_kappa_aware", "cql_uniform_aware")):
            if not {a, b} <= set(share.index):
                continue
            mean, spread = _pp_gap(per_seed, disease, train_regime, a, b)
            figures[f"{disease}_{name}_ttc_pp"], figures[f"{disease}_{name}_ttc_pp_std"] = mean, spread
        if len(sweep):
            for tag in ("mb", "bc"):
                gaps_swept = sweep_gaps(sweep, disease, tag)
                figures[f"{disease}_sweep_{tag}_kappa_vs_uniform_pp_min"] = float(gaps_swept.min())
                figures[f"{disease}_sweep_{tag}_kappa_vs_uniform_pp_max"] = float(gaps_swept.max())
            for gap, at_gap in sweep_gaps(sweep, disease, "mb").groupby(level="execution_gap"):
                figures[f"{disease}_sweep_mb_kappa_vs_uniform_pp_max_gap_{round(100 * gap)}"] = float(at_gap.max())
        if share["optimal"] > 0:
            learnt = [m for m in OFFLINE if m in share.index]
            figures[f"offline_best_vs_optimal_{disease}"] = float(share[learnt].max() / share["optimal"])
        for regime in comparison.regime.unique():
            if regime != train_regime:
                gaps.append(_pp_gap(per_seed, disease, regime, "mb_kappa_aware", "mb_kappa_naive")[0])
                exact_gaps.append(_pp_gap(per_seed, disease, regime, "optimal", "optimal_naive")[0])
                figures[f"{disease}_eps_aware_minus_naive_ttc_pp_{regime}"] = gaps[-1]
                figures[f"{disease}_eps_aware_minus_naive_exact_ttc_pp_{regime}"] = exact_gaps[-1]
                value_gaps.append(_gap(per_seed, disease, regime, "mb_kappa_aware", "mb_kappa_naive", "value")[0])
                exact_value_gaps.append(_gap(per_seed, disease, regime, "optimal", "optimal_naive", "value")[0])
    if gaps:
        figures["eps_aware_minus_naive_ttc_pp_min"] = float(min(gaps))
        figures["eps_aware_minus_naive_exact_ttc_pp_min"] = float(min(exact_gaps))
        figures["eps_aware_minus_naive_value_min"] = float(min(value_gaps))
        figures["eps_aware_minus_naive_exact_value_min"] = float(min(exact_value_gaps))
    figures.update(unlearning_figures(unlearning))
    return figures


def unlearning_figures(unlearning: pd.DataFrame) -> dict[str, float]:
    """Equality over every check; the time ratios (worst disease) for one patient (``_one``) and for a
    share of them (``_share``) on the largest logs checked, and again on the study's own logs (``_study``)."""
    figures = {"unlearn_equals_retrain": float(unlearning["equal"].min())}
    sizes = sorted(unlearning["patients"].unique())
    one = unlearning["forgotten"] == 1
    for size, suffix in ((sizes[-1], ""), (sizes[0], "_study")):
        at = unlearning["patients"] == size
        for tag, rows in (("one", unlearning[at & one]), ("share", unlearning[at & ~one])):
            if len(rows):
                figures[f"unlearn_seconds_vs_retrain_{tag}{suffix}"] = float(rows["ratio"].max())
                figures[f"unlearn_ms_{tag}{suffix}"] = 1e3 * float(rows["unlearn_seconds"].max())
                figures[f"retrain_ms_{tag}{suffix}"] = 1e3 * float(rows["retrain_seconds"].max())
        figures[f"unlearn_patients{suffix}"] = float(size)
        figures[f"unlearn_seconds_vs_retrain{suffix}"] = float(unlearning[at]["ratio"].max())
    return figures
