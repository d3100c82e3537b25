"""Exact unlearning for the tabular learner: remove a patient's transitions from the counts and
re-solve, checked bit for bit against retraining from scratch without them, both timed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import numpy as np

from decisions.health.chronic.data import Logs
from decisions.health.chronic.exact import Solution
from decisions.health.chronic.settings import Reward
from decisions.health.chronic.training import (
    Counts,
    cell_pairs,
    count_transitions,
    estimated_transitions,
    reestimated,
    removed_cells,
    solve_estimate,
    without,
)


class Learnt(NamedTuple):
    """The kappa-weighted tabular learner: its counts, estimated machine ``P[a, s, s']`` and solution."""

    counts: Counts
    estimate: np.ndarray
    solution: Solution


def _timed(work: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """``work()``'s result and its fastest wall time over ``repeats`` runs (results made ready)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        result = work()
        jax.block_until_ready(result)
        best = min(best, time.perf_counter() - start)
    return result, best


def same_solution(a: Solution, b: Solution) -> bool:
    """Whether two solutions are equal bit for bit (policy, values and Q-values)."""
    return all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a, b, strict=True))


def unlearn(learnt: Learnt, logs: Logs, patients: np.ndarray, reward: Reward, horizon: int, mask: np.ndarray,
            min_count: int = 1) -> Learnt:
    """The kappa-weighted learner without ``patients``: their transitions taken out of the counts, the
    rows of the pairs they visited re-estimated, and the machine solved again."""
    cells, removed = removed_cells(learnt.counts, logs, patients)
    counts = without(learnt.counts, cells, removed)
    estimate = reestimated(learnt.estimate, counts, True, cell_pairs(cells), min_count)
    return Learnt(counts, estimate, solve_estimate(estimate, reward, horizon, mask))


def learn(counts: Counts, reward: Reward, horizon: int, mask: np.ndarray, min_count: int = 1) -> Learnt:
    """The kappa-weighted learner from its counts: the estimated machine and its solution."""
    estimate = estimated_transitions(counts, True, min_count)
    return Learnt(counts, estimate, solve_estimate(estimate, reward, horizon, mask))


class Checked(NamedTuple):
    """Forgetting checked against retraining: the learner after forgetting, whether it equals the
    retrained one bit for bit, and both wall times (fastest of the repeats)."""

    learnt: Learnt
    equal: bool
    unlearn_seconds: float
    retrain_seconds: float


def checked_unlearn(learnt: Learnt, logs: Logs, patients: np.ndarray, gone: np.ndarray, reward: Reward,
                    horizon: int, mask: np.ndarray, *, min_count: int = 1, repeats: int = 5) -> Checked:
    """Forget ``patients`` from ``learnt`` (the learner of the logs without the patients ``gone``) and
    re-solve, against retraining from scratch on the logs without ``gone`` and ``patients``: the
    equality (counts, machine, Q-values, values, policy, bit for bit) and both wall times."""
    excluded = np.concatenate([np.asarray(gone, np.int64), np.asarray(patients, np.int64)])

    def retrain() -> Learnt:
        return learn(count_transitions(logs, exclude=excluded), reward, horizon, mask, min_count)

    def forget_them() -> Learnt:
        return unlearn(learnt, logs, patients, reward, horizon, mask, min_count)

    retrain()
    forget_them()
    retrained, retrain_s = _timed(retrain, repeats)
    unlearnt, unlearn_s = _timed(forget_them, repeats)
    equal = (np.array_equal(retrained.counts.counts, unlearnt.counts.counts)
             and np.array_equal(retrained.estimate, unlearnt.estimate)
             and same_solution(retrained.solution, unlearnt.solution))
    return Checked(unlearnt, bool(equal), unlearn_s, retrain_s)


def unlearn_check(logs: Logs, patients: np.ndarray, reward: Reward, horizon: int, mask: np.ndarray,
                  *, min_count: int = 1, repeats: int = 5) -> dict[str, float]:
    """Forget ``patients`` from the kappa-weighted learner of all the logs (``checked_unlearn``): how
    many, the equality and both wall times, and their ratio."""
    learnt = learn(count_transitions(logs), reward, horizon, mask, min_count)
    checked = checked_unlearn(learnt, logs, patients, np.zeros(0, np.int64), reward, horizon, mask,
                              min_count=min_count, repeats=repeats)
    return {"forgotten": float(len(patients)), "equal": float(checked.equal),
            "unlearn_seconds": checked.unlearn_seconds, "retrain_seconds": checked.retrain_seconds,
            "ratio": checked.unlearn_seconds / checked.retrain_seconds}
