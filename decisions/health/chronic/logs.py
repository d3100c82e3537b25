"""Chronic care's visit logs as arrays: what every learner reads, simulated or a user's own (no JAX)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

STATE_SHAPE: tuple[int, ...] = (4, 4, 2, 2, 3)
"""A transient state's components (band, step, adherent, side effect, months since), the state index
their row-major position (as ``model.state_index`` numbers them)."""

CONTROLLED = int(np.prod(STATE_SHAPE))
"""The absorbing state's index (control confirmed), after the transient states."""


class Logs(NamedTuple):
    """Visit logs: ``states[n, t]`` (``t = 0..H``), ``actions[n, t]`` (``t < H``), and each patient's
    clinician's capability ``kappa[n]`` and clinician ``clinician[n]``.

    ``observed[n, t]`` is True where the transition of visit ``t`` (its action and the state at visit
    ``t + 1``) was observed; None means all were (simulated logs). A ragged log's unobserved slots
    hold padding (state 0, action hold) that every learner skips.
    """

    states: np.ndarray
    actions: np.ndarray
    kappa: np.ndarray
    clinician: np.ndarray
    observed: np.ndarray | None = None

    def learnt(self, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        """``[len(rows), H]``: True where a visit's transition is the learners' data (observed, out of a
        transient state)."""
        keep = self.states[rows, :-1] != CONTROLLED
        return keep if self.observed is None else keep & self.observed[rows]

    def observed_mask(self) -> np.ndarray:
        """``observed`` as a boolean ``[n, H]`` array (all True when None)."""
        if self.observed is None:
            return np.ones(self.actions.shape, bool)
        return np.asarray(self.observed, bool)
