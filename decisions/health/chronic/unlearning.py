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
from decisions.health.chronic.model import N_ACTIONS
from decisions.health.chronic.settings import Reward
from decisions.health.chronic.training import (
    Counts,
    count_transitions,
    estimated_transitions,
    forget,
    reestimated,
    solve_estimate,
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


def touched_pairs(logs: Logs, patients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (state, action) pairs of the patients' logged visits."""
    flat = np.unique(logs.states[patients, :-1] * N_ACTIONS + logs.actions[patients])
    return flat // N_ACTIONS, flat % N_ACTIONS


def unlearn(learnt: Learnt, logs: Logs, patients: np.ndarray, reward: Reward, horizon: int, mask: np.ndarray,
            min_count: int = 1) -> Learnt:
    """The kappa-weighted learner without ``patients``: their transitions taken out of the counts, the
    rows of the pairs they visited re-estimated, and the machine solved again."""
    counts = forget(learnt.counts, logs, patients)
    estimate = reestimated(learnt.estimate, counts, True, touched_pairs(logs, patients), min_count)
    return Learnt(counts, estimate, solve_estimate(estimate, reward, horizon, mask))


def learn(counts: Counts, reward: Reward, horizon: int, mask: np.ndarray, min_count: int = 1) -> Learnt:
    """The kappa-weighted learner from its counts: the estimated machine and its solution."""
    estimate = estimated_transitions(counts, True, min_count)
    return Learnt(counts, estimate, solve_estimate(estimate, reward, horizon, mask))


def unlearn_check(logs: Logs, patients: np.ndarray, reward: Reward, horizon: int, mask: np.ndarray,
                  *, min_count: int = 1, repeats: int = 5) -> dict[str, float]:
    """Forget ``patients`` from the kappa-weighted learner and re-solve, against retraining from
    scratch on the logs without them: the equality (counts, machine, Q-values, values, policy, bit for
    bit) and both wall times (fastest of ``repeats``)."""
    learnt = learn(count_transitions(logs), reward, horizon, mask, min_count)

    def retrain() -> Learnt:
        return learn(count_transitions(logs, exclude=patients), reward, horizon, mask, min_count)

    def forget_them() -> Learnt:
        return unlearn(learnt, logs, patients, reward, horizon, mask, min_count)

    retrain()
    forget_them()
    retrained, retrain_s = _timed(retrain, repeats)
    unlearnt, unlearn_s = _timed(forget_them, repeats)
    equal = (np.array_equal(retrained.counts.counts, unlearnt.counts.counts)
             and np.array_equal(retrained.estimate, unlearnt.estimate)
             and same_solution(retrained.solution, unlearnt.solution))
    return {"forgotten": float(len(patients)), "equal": float(equal), "unlearn_seconds": unlearn_s,
            "retrain_seconds": retrain_s, "ratio": unlearn_s / retrain_s}
