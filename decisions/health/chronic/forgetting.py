"""Forgetting patients from a run's kappa-weighted tabular learner, one at a time, each checked against
retraining without them and fingerprinted: the learner's data before and after, its policy after.

The data digest is the sha256 of the learner's integer transition counts ``counts[g, s, a, s']``
(little-endian int64, C order), the policy digest that of its policy ``policy[t, s]`` (little-endian
int32). Forgetting is cumulative: patients forgotten earlier stay out of the data.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from decisions.errors import InputError
from decisions.health.chronic.cohort import DiseaseCohort, cohort
from decisions.health.chronic.settings import Care, Problem, Reward
from decisions.health.chronic.training import Counts, count_transitions
from decisions.health.chronic.unlearning import Learnt, checked_unlearn, learn


class ForgottenPatient(NamedTuple):
    """One patient forgotten: the digests around it, the equality with retraining and both wall times."""

    patient: str
    disease: str
    data_digest_before: str
    data_digest_after: str
    policy_digest_after: str
    equal: bool
    unlearn_seconds: float
    retrain_seconds: float


@dataclass(frozen=True)
class Forgetting:
    """The patients forgotten, in the order asked, and each touched disease's policy ``[t, s]`` after."""

    forgotten: tuple[ForgottenPatient, ...]
    policies: dict[str, np.ndarray]


def data_digest(counts: Counts) -> str:
    """The sha256 (hex) of a learner's transition counts as little-endian int64 in C order."""
    return hashlib.sha256(np.ascontiguousarray(counts.counts, "<i8").tobytes()).hexdigest()


def policy_digest(policy: np.ndarray) -> str:
    """The sha256 (hex) of a policy ``[t, s]`` as little-endian int32 in C order."""
    return hashlib.sha256(np.ascontiguousarray(np.asarray(policy), "<i4").tobytes()).hexdigest()


def named(patients: Sequence[str]) -> list[str]:
    """The patients to forget, as a list; raises ``InputError`` on ``patient`` when there are none."""
    if not patients:
        raise InputError("patient", "name at least one patient to forget")
    return list(patients)


def locate(cohorts: dict[str, DiseaseCohort], patients: Sequence[str],
           earlier: Sequence[str] = ()) -> tuple[list[tuple[str, int]], dict[str, list[int]]]:
    """Where ``patients`` and the ``earlier`` forgotten are in the logs: each patient's (disease, row),
    and each disease's rows already forgotten.

    Raises:
        InputError: on ``patient``: none named, one unknown, named twice or already forgotten.
    """
    rows = {pid: (disease, row) for disease, part in cohorts.items() for row, pid in enumerate(part.patient_ids)}
    known = "; ".join(f"{p.patient_ids[0]} to {p.patient_ids[-1]}" for p in cohorts.values() if p.patient_ids)
    for pid in [*earlier, *named(patients)]:
        if pid not in rows:
            raise InputError("patient", f"no patient {pid!r} in the run's logs (its patients: {known})")
    for index, pid in enumerate(patients):
        if pid in earlier:
            raise InputError("patient", f"{pid} is already forgotten")
        if pid in patients[:index]:
            raise InputError("patient", f"{pid} is named twice")
    gone: dict[str, list[int]] = {disease: [] for disease in cohorts}
    for pid in earlier:
        gone[rows[pid][0]].append(rows[pid][1])
    return [rows[pid] for pid in patients], gone


def forget_in(cohorts: dict[str, DiseaseCohort], patients: Sequence[str], earlier: Sequence[str], reward: Reward,
              problem: Problem, min_count: int, *, repeats: int = 5) -> Forgetting:
    """Forget ``patients`` one at a time from each disease's kappa-weighted learner of its logs without
    the ``earlier`` forgotten, each checked against retraining (``unlearning.checked_unlearn``)."""
    where, gone = locate(cohorts, patients, earlier)
    learners: dict[str, Learnt] = {}
    forgotten = []
    for pid, (disease, row) in zip(patients, where, strict=True):
        logs, mask = cohorts[disease].logs, cohorts[disease].case.masks[problem.train_regime]
        if disease not in learners:
            learners[disease] = learn(count_transitions(logs, exclude=np.array(gone[disease], np.int64)), reward,
                                      problem.horizon, mask, min_count)
        before = data_digest(learners[disease].counts)
        checked = checked_unlearn(learners[disease], logs, np.array([row]), np.array(gone[disease], np.int64),
                                  reward, problem.horizon, mask, min_count=min_count, repeats=repeats)
        learners[disease] = checked.learnt
        gone[disease].append(row)
        forgotten.append(ForgottenPatient(
            pid, disease, before, data_digest(checked.learnt.counts), policy_digest(checked.learnt.solution.policy),
            checked.equal, checked.unlearn_seconds, checked.retrain_seconds))
    policies = {disease: np.asarray(learnt.solution.policy) for disease, learnt in learners.items()}
    return Forgetting(tuple(forgotten), policies)


def forget(care: Care, *, seed: int, patients: Sequence[str], earlier: Sequence[str] = (),
           repeats: int = 5) -> Forgetting:
    """Forget ``patients`` (identifiers ``"<disease>-<index>"``) from the learner of the run these settings
    describe (its ``cohort``), after the ``earlier`` forgotten ones.

    Raises:
        InputError: on ``patient``: none named, one unknown, named twice or already forgotten.
    """
    asked = named(patients)
    cohorts = cohort(care, seed)
    return forget_in(cohorts, asked, list(earlier), care.reward, care.problem, care.data.min_count, repeats=repeats)
