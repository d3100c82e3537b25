"""Each clinician's capability kappa estimated from the visit logs alone (no JAX).

The model: at visit ``t`` in state ``s`` a clinician of capability kappa departs from the habit with
probability kappa when the good policy's action there is not the habit, and never when it is. The
good policy is unknown: whether its action at each (visit, state) differs from the habit is a
latent flag, true a priori with a shared probability ``q``. A departure at a (visit, state) shows
the flag is true; where every logged action is the habit, its posterior weighs the clinicians'
chances of having held anyway. EM over each clinician's kappa and ``q`` maximises the likelihood.

Only observed visits out of a transient state count (the actions once control is confirmed do not
affect care). A good policy that mixed the habit into a state's choice could not be told apart from
a lower kappa, hence one action per (visit, state). A clinician with no visit at a (visit, state)
where anyone departed from the habit has no informative visit: it gets the fallback, the pooled
estimate of the informative clinicians (1.0, equal weights, when none is).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from decisions.health.chronic.logs import CONTROLLED, Logs

_EDGE = 1e-12
"""How close to 0 and 1 kappa and ``q`` are kept inside the posterior (no log of 0)."""


class Capability(NamedTuple):
    """Per clinician: the estimated ``kappa``, its ``informative`` visits (at a (visit, state) where
    someone departed from the habit) and whether it is the ``fallback``; and the EM's ``good_share``
    (``q``), ``iterations`` and whether it ``converged``."""

    kappa: np.ndarray
    informative: np.ndarray
    fallback: np.ndarray
    good_share: float
    iterations: int
    converged: bool


class _Cells(NamedTuple):
    """Visits grouped by (clinician, cell), a cell a (visit, state): ``departed`` and ``held`` counts of
    each group, its ``clinician`` and ``cell``, and per cell whether anyone departed (``known``)."""

    clinician: np.ndarray
    cell: np.ndarray
    departed: np.ndarray
    held: np.ndarray
    known: np.ndarray


def _cells(logs: Logs, habit: int) -> _Cells:
    """The logs' counted visits: observed, out of a transient state."""
    transient, horizon = CONTROLLED, logs.actions.shape[1]
    states = logs.states[:, :-1]
    keep = logs.learnt()
    visit = np.broadcast_to(np.arange(horizon), states.shape)[keep]
    clinician = np.broadcast_to(logs.clinician[:, None], states.shape)[keep].astype(np.int64)
    cell = visit.astype(np.int64) * transient + states[keep]
    departed = logs.actions[keep] != habit
    cells = transient * horizon
    pair, group = np.unique(clinician * cells + cell, return_inverse=True)
    departures = np.bincount(group, weights=departed, minlength=len(pair))
    visits = np.bincount(group, minlength=len(pair)).astype(np.float64)
    known = np.bincount(cell, weights=departed, minlength=cells) > 0
    return _Cells(pair // cells, pair % cells, departures, visits - departures, known)


def _posterior(cells: _Cells, kappa: np.ndarray, good_share: float) -> np.ndarray:
    """Per cell, the posterior chance that the good action is not the habit."""
    held_anyway = np.log1p(-np.clip(kappa, 0.0, 1.0 - _EDGE))[cells.clinician] * cells.held
    log_lik = np.bincount(cells.cell, weights=held_anyway, minlength=len(cells.known))
    q = min(max(good_share, _EDGE), 1.0 - _EDGE)
    odds = np.log(q) - np.log1p(-q) + log_lik
    return np.where(cells.known, 1.0, np.exp(-np.logaddexp(0.0, -odds)))


def estimate_capability(logs: Logs, habit: int, *, clinicians: int | None = None,
                        tol: float = 1e-9, max_iter: int = 2000) -> Capability:
    """Each clinician's capability by EM (see the module docstring).

    Args:
        logs: the visit logs (``observed`` honoured); ``logs.kappa`` is not read.
        habit: the index of the clinicians' habit action.
        clinicians: how many clinicians (default: the largest index in ``logs.clinician`` plus one).
        tol, max_iter: EM stops when no kappa moves by more than ``tol``, or after ``max_iter`` rounds.
    """
    count = int(logs.clinician.max()) + 1 if clinicians is None else clinicians
    cells = _cells(logs, habit)
    departed = np.bincount(cells.clinician, weights=cells.departed, minlength=count)
    informative = np.bincount(cells.clinician, weights=(cells.departed + cells.held) * cells.known[cells.cell],
                              minlength=count)
    observed_cells = np.unique(cells.cell)
    kappa = departed / np.maximum(informative, 1.0)
    good_share = float(cells.known[observed_cells].mean()) if len(observed_cells) else 0.0
    exposed = informative
    iterations, converged = 0, len(cells.cell) == 0
    while not converged and iterations < max_iter:
        weight = _posterior(cells, kappa, good_share)
        exposed = departed + np.bincount(cells.clinician, weights=cells.held * weight[cells.cell], minlength=count)
        updated = np.where(exposed > 0, departed / np.where(exposed > 0, exposed, 1.0), 0.0)
        good_share = float(weight[observed_cells].mean())
        iterations += 1
        converged = bool(np.max(np.abs(updated - kappa), initial=0.0) <= tol)
        kappa = updated
    fallback = informative == 0
    pooled = departed[~fallback].sum() / exposed[~fallback].sum() if (~fallback).any() else 1.0
    kappa = np.where(fallback, pooled, kappa)
    return Capability(kappa.astype(np.float32), informative, fallback, good_share, iterations, converged)


def estimate_kappas(logs: Logs, habit: int, *, clinicians: int | None = None) -> np.ndarray:
    """Each patient's clinician's estimated capability, shaped like ``logs.kappa`` (``estimate_capability``)."""
    return estimate_capability(logs, habit, clinicians=clinicians).kappa[logs.clinician]
