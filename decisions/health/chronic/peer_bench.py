"""Chronic care's bench figures beside the study's: d3rlpy's ``DiscreteCQL`` trained on the study's own
logs with the same settings as our neural learner, scored exactly in the train regime, with both
training times; and the error of kappa estimated from the logs."""

from __future__ import annotations

import importlib.util
import time

import jax
import numpy as np
import pandas as pd

from decisions.health.chronic.capability import estimate_capability
from decisions.health.chronic.cohort import cohort, disease_key
from decisions.health.chronic.cql import neural_policies
from decisions.health.chronic.logs import Logs
from decisions.health.chronic.peer_cql import peer_policy
from decisions.health.chronic.scoring import Case, score
from decisions.health.chronic.settings import Care, Neural
from decisions.health.chronic.study import study_logs


def d3rlpy_installed() -> bool:
    """Whether the peer can run (the ``peers`` extra)."""
    return importlib.util.find_spec("d3rlpy") is not None


def _ours_seconds(case: Case, logs: Logs, neural: Neural, key: jax.Array) -> tuple[float, int]:
    """Our training of every CQL variant on ``logs`` once compiled: seconds and the number of variants."""
    neural_policies(case, logs, tuple(case.masks), neural, key)
    start = time.perf_counter()
    policies = neural_policies(case, logs, tuple(case.masks), neural, key)
    jax.block_until_ready(list(policies.values()))
    return time.perf_counter() - start, 2 * len(case.masks)


def peer_figures(care: Care, neural: Neural, seed: int, per_seed: pd.DataFrame) -> dict[str, float]:
    """Per disease, d3rlpy's TTC share in the train regime (mean over the study's data seeds) and ours
    (``cql_uniform_aware``, the like-for-like learner: d3rlpy weighs every transition alike) over it,
    and ours minus d3rlpy per data seed (pp, mean and spread); ``ours_vs_d3rlpy_cql_ttc`` is the worst
    disease's. Times: d3rlpy's ``fit`` per training, ours per
    variant of one compiled program training all of them. Empty without d3rlpy."""
    if not d3rlpy_installed():
        return {}
    figures: dict[str, float] = {}
    ratios, peer_seconds = [], []
    problem, clinicians, data = care.problem, care.clinicians, care.data
    for index, (name, part) in enumerate(cohort(care, seed).items()):
        key = disease_key(seed, index)
        shares = {}
        for s, logs in study_logs(part, clinicians, data, key):
            policy, seconds = peer_policy(part.case, logs, neural, s)
            shares[s] = score(part.case, policy, problem.train_regime)[1][-1]
            peer_seconds.append(seconds)
        rows = per_seed[(per_seed.disease == name) & (per_seed.regime == problem.train_regime)
                        & (per_seed.method == "cql_uniform_aware")].set_index("seed")["ttc_share"]
        gaps = 100 * np.array([rows[s] - share for s, share in shares.items()])
        figures[f"{name}_ttc_cql_d3rlpy"] = float(np.mean(list(shares.values())))
        figures[f"{name}_ours_vs_d3rlpy_cql_ttc"] = float(rows.mean() / figures[f"{name}_ttc_cql_d3rlpy"])
        figures[f"{name}_ours_minus_d3rlpy_cql_ttc_pp"] = float(gaps.mean())
        figures[f"{name}_ours_minus_d3rlpy_cql_ttc_pp_std"] = float(gaps.std())
        ratios.append(figures[f"{name}_ours_vs_d3rlpy_cql_ttc"])
        if index == 0:
            ours, variants = _ours_seconds(part.case, part.logs, neural, jax.random.fold_in(key, 30_000))
            figures["cql_seconds_all_variants"], figures["cql_variants"] = ours, float(variants)
            figures["cql_seconds_per_variant"] = ours / variants
    figures["ours_vs_d3rlpy_cql_ttc"] = min(ratios)
    figures["d3rlpy_cql_seconds"] = float(np.mean(peer_seconds))
    return figures


def capability_figures(care: Care, seed: int) -> dict[str, float]:
    """Per disease with simulated logs, kappa estimated from the study's first logs against each
    clinician's true kappa: the mean and the largest absolute error over the clinicians seen."""
    figures: dict[str, float] = {}
    for name, part in cohort(care, seed).items():
        if part.user_log:
            continue
        logs = part.logs
        estimated = estimate_capability(logs, part.case.habit).kappa
        seen = np.unique(logs.clinician)
        truth = np.array([logs.kappa[logs.clinician == c][0] for c in seen])
        errors = np.abs(estimated[seen] - truth)
        figures[f"{name}_kappa_est_mae"], figures[f"{name}_kappa_est_max_error"] = float(errors.mean()), float(errors.max())
    return figures
