"""Chronic care's study: exact optimum, behaviour and offline learners on both diseases, scored exactly
in every regime over several data draws, a capability sweep and the unlearning check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.health.chronic.exact import one_hot_policy
from decisions.health.chronic.model import N_ACTIONS
from decisions.health.chronic.scoring import (
    Case,
    behaviour_population,
    draw_logs,
    make_case,
    offline_policies,
    score,
    usual_care,
)
from decisions.health.chronic.settings import Clinicians, Data, HtnMachine, Problem, Reward, T2dMachine
from decisions.health.chronic.study_tables import headline, q_table, summarise
from decisions.health.chronic.unlearning import unlearn_check


@dataclass(frozen=True)
class Study:
    """What a study found.

    Attributes:
        per_seed: one row per disease, method, regime and data seed (``-1``: exact, no data).
        comparison: one row per disease, method and regime: TTC share within the horizon and exact
            value (``ttc_share``, ``ttc_share_std``, ``value``, ``value_std``, ``seeds``).
        ttc_curves: ``disease``, ``method``, ``regime``, ``visit``, ``share`` (controlled by that visit).
        sweep: the kappa sweep: ``disease``, ``low_share``, ``patients``, ``method``, ``ttc_share``,
            ``ttc_share_std``.
        unlearning: ``disease``, ``forgotten``, ``equal``, ``unlearn_seconds``, ``retrain_seconds``, ``ratio``.
        q_values: the first visit's Q-values of the optimum and the kappa-weighted learner (train regime).
    """

    per_seed: pd.DataFrame
    comparison: pd.DataFrame
    ttc_curves: pd.DataFrame
    sweep: pd.DataFrame
    unlearning: pd.DataFrame
    q_values: pd.DataFrame
    train_regime: str

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


def _offline_rows(case: Case, clinicians: Clinicians, data: Data, patients: int, seed: int, key: jax.Array,
                  regimes: tuple[str, ...]) -> list[dict[str, Any]]:
    """Every offline method on one data draw of ``patients``, scored in ``regimes``."""
    logs = draw_logs(case, clinicians, patients, key)
    return [_rows(case, method, regime, seed, *score(case, policy, regime))
            for (method, regime), policy in offline_policies(case, logs, regimes, data.min_count).items()]


def _sweep(case: Case, clinicians: Clinicians, data: Data, key: jax.Array) -> list[dict[str, Any]]:
    """Kappa-weighted against uniform learners as the low-capability share and the data size vary."""
    rows = []
    for low_share in data.sweep_low_shares:
        group = clinicians.model_copy(update={"low_share": low_share})
        behaviour = behaviour_population(case, group, case.train_regime)
        for patients in data.sweep_patients:
            for seed in range(data.seeds):
                draw = jax.random.fold_in(jax.random.fold_in(key, patients), seed)
                for row in _offline_rows(case, group, data, patients, seed, draw, (case.train_regime,)):
                    if row["method"].endswith("_aware"):
                        rows.append({**row, "low_share": low_share, "patients": patients})
                rows.append({**_rows(case, "behaviour", case.train_regime, seed, *behaviour),
                             "low_share": low_share, "patients": patients})
    return rows


def run_study(problem: Problem, htn: HtnMachine, t2d: T2dMachine, reward: Reward, clinicians: Clinicians,
              data: Data, *, seed: int, progress: Progress = silent) -> Study:
    """Solve each disease exactly, learn offline from ``data.seeds`` log draws, and score everything
    exactly in every regime; then the kappa sweep and the unlearning check."""
    machines = {"htn": htn, "t2d": t2d}
    root = jax.random.PRNGKey(seed)
    rows, sweep, unlearning, q = [], [], [], []
    steps = len(problem.diseases) * (data.seeds + 2)
    done = 0
    for index, name in enumerate(problem.diseases):
        case = make_case(name, machines[name], problem, reward, clinicians.habit)
        key = jax.random.fold_in(root, index)
        rows += _exact_rows(case, clinicians)
        for s in range(data.seeds):
            rows += _offline_rows(case, clinicians, data, data.patients, s, jax.random.fold_in(key, s), tuple(case.masks))
            done += 1
            progress("offline learning", done, steps)
        sweep += [{**r, "disease": name} for r in _sweep(case, clinicians, data, jax.random.fold_in(key, 10_000))]
        done += 1
        progress("kappa sweep", done, steps)
        logs = draw_logs(case, clinicians, data.patients, jax.random.fold_in(key, 0))
        for share in (0.0, data.forget_share):
            forgotten = np.arange(max(1, round(share * data.patients)))
            result = unlearn_check(logs, forgotten, reward, problem.horizon, case.masks[problem.train_regime],
                                   min_count=data.min_count)
            unlearning.append({"disease": name, **result})
        q.append(q_table(case, logs, data.min_count))
        done += 1
        progress("unlearning", done, steps)
    per_seed, comparison, curves, sweep_table = summarise(rows, sweep)
    return Study(per_seed, comparison, curves, sweep_table, pd.DataFrame(unlearning), pd.concat(q, ignore_index=True),
                 problem.train_regime)
