"""Chronic care's study: exact optimum, behaviour and offline learners on both diseases, scored exactly
in every regime over several data draws, a capability sweep and the unlearning check."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np
import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.health.chronic.cohort import DiseaseCohort, cohort, disease_key
from decisions.health.chronic.cql import neural_policies
from decisions.health.chronic.deployable import disease_policies
from decisions.health.chronic.exact import one_hot_policy
from decisions.health.chronic.logs import Logs
from decisions.health.chronic.model import N_ACTIONS
from decisions.health.chronic.report import ChronicTables
from decisions.health.chronic.scoring import (
    Case,
    behaviour_population,
    draw_logs,
    offline_policies,
    score,
    usual_care,
)
from decisions.health.chronic.settings import Care, Clinicians, Data, Neural
from decisions.health.chronic.study_tables import headline, q_table, summarise
from decisions.health.chronic.unlearning import unlearn_check

UNLEARN_REPEATS = 20
"""Runs of unlearning and of retraining timed in the unlearning check (the fastest of each counts)."""


@dataclass(kw_only=True)
class Study(ChronicTables):
    """What a study found: its tables (``report.ChronicTables``) and, per disease, what deploying its
    policies needs (``deployable.disease_policies``)."""

    policies: dict[str, Any] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        """The headline figures (see ``study_tables.headline``)."""
        return headline(self.per_seed, self.comparison, self.unlearning, self.sweep, self.train_regime)


def _rows(case: Case, method: str, regime: str, seed: int, value: float, curve: np.ndarray) -> dict[str, Any]:
    return {"disease": case.name, "method": method, "regime": regime, "seed": seed, "value": value,
            "ttc_share": float(curve[-1]), "curve": curve}


def _exact_rows(case: Case, clinicians: Clinicians) -> list[dict[str, Any]]:
    """The exact optimum (solved in each regime, and the train regime's deployed as is), the clinician
    population and usual care in every regime."""
    rows = []
    for regime in case.masks:
        rows.append(_rows(case, "optimal", regime, -1,
                          *score(case, one_hot_policy(case.optimal[regime].policy, N_ACTIONS), regime)))
        rows.append(_rows(case, "optimal_naive", regime, -1, *score(
            case, one_hot_policy(case.optimal[case.train_regime].policy, N_ACTIONS), regime)))
        rows.append(_rows(case, "behaviour", regime, -1, *behaviour_population(case, clinicians, regime)))
        rows.append(_rows(case, "usual_care", regime, -1, *score(case, usual_care(case), regime)))
    return rows


def _offline_rows(case: Case, logs: Logs, data: Data, seed: int, regimes: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every offline method fitted on ``logs``, scored in ``regimes``."""
    return [_rows(case, method, regime, seed, *score(case, policy, regime))
            for (method, regime), policy in offline_policies(case, logs, regimes, data.min_count).items()]


def _sweep(case: Case, clinicians: Clinicians, data: Data, key: jax.Array) -> list[dict[str, Any]]:
    """Kappa-weighted against uniform learners as the clinicians' execution gap, the low-capability share
    and the data size vary."""
    rows = []
    for gap in data.sweep_execution_gaps:
        for low_share in data.sweep_low_shares:
            group = clinicians.model_copy(update={"low_share": low_share, "execution_gap": gap})
            behaviour = behaviour_population(case, group, case.train_regime)
            where = {"execution_gap": gap, "low_share": low_share}
            for patients in data.sweep_patients:
                for seed in range(data.seeds):
                    draw = jax.random.fold_in(jax.random.fold_in(key, patients), seed)
                    logs = draw_logs(case, group, patients, draw)
                    for row in _offline_rows(case, logs, data, seed, (case.train_regime,)):
                        if row["method"].endswith("_aware"):
                            rows.append({**row, **where, "patients": patients})
                    rows.append({**_rows(case, "behaviour", case.train_regime, seed, *behaviour), **where,
                                 "patients": patients})
    return rows


def _unlearning_rows(case: Case, clinicians: Clinicians, data: Data, logs: Logs,
                     key: jax.Array) -> list[dict[str, Any]]:
    """Forgetting one patient and ``data.forget_share`` of them against retraining, on the study's logs
    and on fresh logs of each of ``data.unlearn_patients`` patients."""
    rows = []
    sizes = [data.patients] + [n for n in data.unlearn_patients if n != data.patients]
    for patients in sizes:
        drawn = logs if patients == data.patients else draw_logs(case, clinicians, patients,
                                                                 jax.random.fold_in(key, patients))
        for share in (0.0, data.forget_share):
            forgotten = np.arange(max(1, round(share * patients)))
            result = unlearn_check(drawn, forgotten, case.reward, case.horizon, case.masks[case.train_regime],
                                   min_count=data.min_count, repeats=UNLEARN_REPEATS)
            rows.append({"disease": case.name, "patients": patients, **result})
    return rows


def study_logs(part: DiseaseCohort, clinicians: Clinicians, data: Data, key: jax.Array) -> Iterator[tuple[int, Logs]]:
    """The logs the offline methods learn from, by data seed: the cohort's (seed 0) and, for simulated
    logs, ``data.seeds - 1`` further draws with ``fold_in(key, seed)``; a user's log is learnt from once."""
    yield 0, part.logs
    for s in range(1, 1 if part.user_log else data.seeds):
        yield s, draw_logs(part.case, clinicians, data.patients, jax.random.fold_in(key, s))


def _learnt_rows(part: DiseaseCohort, clinicians: Clinicians, data: Data, neural: Neural | None,
                 key: jax.Array) -> list[dict[str, Any]]:
    """The tabular offline methods and, unless ``neural`` is None or disabled, discrete CQL on each of
    the study's logs, scored in every regime."""
    case, regimes = part.case, tuple(part.case.masks)
    rows = []
    for s, logs in study_logs(part, clinicians, data, key):
        policies = offline_policies(case, logs, regimes, data.min_count)
        if neural is not None and neural.enabled:
            policies |= neural_policies(case, logs, regimes, neural, jax.random.fold_in(key, 30_000 + s))
        rows += [_rows(case, method, regime, s, *score(case, policy, regime))
                 for (method, regime), policy in policies.items()]
    return rows


def run_study(care: Care, *, seed: int, neural: Neural | None = None, progress: Progress = silent) -> Study:
    """Solve each disease exactly, learn offline from the cohort's logs (a user's visit log, or
    ``data.seeds`` simulated draws; discrete CQL too when ``neural`` is given and enabled) and score
    everything exactly in every regime; then the kappa sweep and the unlearning check."""
    rows, sweep, unlearning, q, policies = [], [], [], [], {}
    clinicians, data = care.clinicians, care.data
    cohorts = cohort(care, seed)
    steps, done = 3 * len(cohorts), 0
    for index, (name, part) in enumerate(cohorts.items()):
        key = disease_key(seed, index)
        rows += _exact_rows(part.case, clinicians)
        rows += _learnt_rows(part, clinicians, data, neural, key)
        done += 1
        progress("offline learning", done, steps)
        sweep += [{**r, "disease": name} for r in _sweep(part.case, clinicians, data, jax.random.fold_in(key, 10_000))]
        done += 1
        progress("kappa sweep", done, steps)
        unlearning += _unlearning_rows(part.case, clinicians, data, part.logs, jax.random.fold_in(key, 20_000))
        q.append(q_table(part.case, part.logs, data.min_count))
        policies[name] = disease_policies(part, data.min_count)
        done += 1
        progress("unlearning", done, steps)
    per_seed, comparison, curves, sweep_table = summarise(rows, sweep)
    return Study(per_seed=per_seed, comparison=comparison, ttc_curves=curves, sweep=sweep_table,
                 unlearning=pd.DataFrame(unlearning), q_values=pd.concat(q, ignore_index=True),
                 train_regime=care.problem.train_regime, policies=policies)
