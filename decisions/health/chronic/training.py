"""Chronic care's offline learners: transition counts -> estimated machine -> value iteration
(uniformly or kappa-weighted), behaviour cloning, and exact unlearning of a patient's transitions."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from decisions.health.chronic.data import Logs
from decisions.health.chronic.exact import Solution, value_iteration
from decisions.health.chronic.model import CONTROLLED, N_ACTIONS, N_STATES, expected_rewards, reward_terms
from decisions.health.chronic.settings import Reward


class Counts(NamedTuple):
    """Integer transition counts ``counts[g, s, a, s']`` per capability group ``g`` of kappa ``kappas[g]``."""

    counts: np.ndarray
    kappas: np.ndarray


def _flat_transitions(logs: Logs, group: np.ndarray, rows: np.ndarray | slice) -> np.ndarray:
    """The flat ``(g, s, a, s')`` index of every observed transition of ``rows`` out of a transient state."""
    s, a, s1 = logs.states[rows, :-1], logs.actions[rows], logs.states[rows, 1:]
    g = np.broadcast_to(group[rows][:, None], s.shape)
    flat = ((g * N_STATES + s) * N_ACTIONS + a) * N_STATES + s1
    return flat[logs.learnt(rows)]


def count_transitions(logs: Logs, exclude: np.ndarray | None = None) -> Counts:
    """The logs' transition counts per capability group, leaving out the patients in ``exclude``."""
    kappas, group = np.unique(logs.kappa, return_inverse=True)
    rows = np.ones(len(logs.kappa), bool)
    if exclude is not None:
        rows[exclude] = False
    size = len(kappas) * N_STATES * N_ACTIONS * N_STATES
    flat = np.bincount(_flat_transitions(logs, group, rows), minlength=size)
    return Counts(flat.reshape(len(kappas), N_STATES, N_ACTIONS, N_STATES), kappas)


def removed_cells(counts: Counts, logs: Logs, patients: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The flat ``(g, s, a, s')`` cells of ``counts`` the transitions of ``patients`` fall in, and how
    many fall in each."""
    patients = np.asarray(patients)
    group = np.empty(len(logs.kappa), np.intp)
    group[patients] = np.searchsorted(counts.kappas, logs.kappa[patients])
    return np.unique(_flat_transitions(logs, group, patients), return_counts=True)


def without(counts: Counts, cells: np.ndarray, removed: np.ndarray) -> Counts:
    """``counts`` less ``removed[i]`` in each flat cell ``cells[i]``."""
    flat = counts.counts.reshape(-1).copy()
    flat[cells] -= removed
    return Counts(flat.reshape(counts.counts.shape), counts.kappas)


def forget(counts: Counts, logs: Logs, patients: np.ndarray) -> Counts:
    """``counts`` with the transitions of ``patients`` removed (exactly, integer counts)."""
    return without(counts, *removed_cells(counts, logs, patients))


def cell_pairs(cells: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (state, action) pairs of flat ``(g, s, a, s')`` cells."""
    flat = np.unique((cells // N_STATES) % (N_STATES * N_ACTIONS))
    return flat // N_ACTIONS, flat % N_ACTIONS


def _weights(counts: Counts, weighted: bool) -> np.ndarray:
    return counts.kappas.astype(np.float64) if weighted else np.ones(len(counts.kappas))


def _estimate_rows(rows: np.ndarray, weights: np.ndarray, sources: np.ndarray, min_count: int) -> np.ndarray:
    """Estimated next-state distributions of count rows ``rows[g, n, s']`` out of states ``sources[n]``,
    computed element by element (a row's result does not depend on the other rows)."""
    total = weights[0] * rows[0].astype(np.float64)
    for g in range(1, len(weights)):
        total = total + weights[g] * rows[g].astype(np.float64)
    mass = total.sum(-1, keepdims=True)
    trusted = (rows.sum(axis=(0, -1))[:, None] >= min_count) & (mass > 0) & (sources[:, None] != CONTROLLED)
    stay = np.eye(N_STATES)[sources]
    return np.where(trusted, total / np.where(trusted, mass, 1.0), stay).astype(np.float32)


def estimated_transitions(counts: Counts, weighted: bool, min_count: int = 1) -> np.ndarray:
    """The estimated machine ``P[a, s, s']``: each (s, a) row the (kappa-)weighted share of its logged
    next states; a pair logged fewer than ``min_count`` times (or of weight 0) stays where it is (no
    progress assumed: pessimism about what the data barely shows)."""
    groups = len(counts.kappas)
    rows = counts.counts.reshape(groups, N_STATES * N_ACTIONS, N_STATES)
    sources = np.repeat(np.arange(N_STATES), N_ACTIONS)
    estimate = _estimate_rows(rows, _weights(counts, weighted), sources, min_count)
    return np.ascontiguousarray(estimate.reshape(N_STATES, N_ACTIONS, N_STATES).transpose(1, 0, 2))


def reestimated(estimate: np.ndarray, counts: Counts, weighted: bool, pairs: tuple[np.ndarray, np.ndarray],
                min_count: int = 1) -> np.ndarray:
    """``estimate`` with the rows of the (state, action) ``pairs`` recomputed from ``counts``: equal bit
    for bit to ``estimated_transitions(counts, ...)`` when only those rows' counts changed."""
    states, actions = pairs
    rows = counts.counts[:, states, actions, :]
    updated = estimate.copy()
    updated[actions, states] = _estimate_rows(rows, _weights(counts, weighted), states, min_count)
    return updated


@jax.jit
def _solve(machine: jax.Array, pay: jax.Array, cost: jax.Array, mask: jax.Array) -> Solution:
    return value_iteration(machine, expected_rewards(machine, pay, cost), mask)


def solve_estimate(estimate: np.ndarray, reward: Reward, horizon: int, mask: np.ndarray) -> Solution:
    """Value iteration on an estimated machine ``P[a, s, s']``, within ``mask`` (one compiled call)."""
    return _solve(estimate, *reward_terms(reward, horizon), mask)


def fit_model_based(counts: Counts, weighted: bool, reward: Reward, horizon: int, mask: np.ndarray,
                    min_count: int = 1) -> Solution:
    """Tabular model-based offline RL: value iteration on the estimated machine, within ``mask``."""
    return solve_estimate(estimated_transitions(counts, weighted, min_count), reward, horizon, mask)


def behaviour_cloning(logs: Logs, weighted: bool, allowed: np.ndarray, fallback: np.ndarray) -> jax.Array:
    """Behaviour cloning: in each state the (kappa-)weighted most logged action (observed visits only)
    among those ``allowed[t, s, a]``, ``fallback[t, s]`` where none of them was logged; as ``policy[t, s]``."""
    s, a = logs.states[:, :-1].reshape(-1), logs.actions.reshape(-1)
    weight = np.repeat(logs.kappa if weighted else np.ones_like(logs.kappa), logs.actions.shape[1])
    if logs.observed is not None:
        keep = logs.observed.reshape(-1)
        s, a, weight = s[keep], a[keep], weight[keep]
    votes = np.zeros((N_STATES, N_ACTIONS))
    np.add.at(votes, (s, a), weight)
    votes = np.where(allowed, votes[None], -1.0)
    return jnp.asarray(np.where(votes.max(-1) > 0, votes.argmax(-1), fallback))


def behaviour_policy(good: jax.Array, kappa: float, habit: int) -> jax.Array:
    """A clinician of capability ``kappa``: ``good[t, s]`` with probability kappa, the habit otherwise,
    as probabilities ``[t, s, a]``."""
    return kappa * jax.nn.one_hot(good, N_ACTIONS) + (1 - kappa) * jax.nn.one_hot(habit, N_ACTIONS)[None, None]
