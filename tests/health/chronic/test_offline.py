"""Chronic care's offline learners: the kappa weighting and exact unlearning."""

from __future__ import annotations

import jax
import numpy as np

from decisions.health.chronic.data import Logs
from decisions.health.chronic.model import CONTROLLED, N_STATES, regime_mask, state_table
from decisions.health.chronic.scoring import draw_logs, make_case
from decisions.health.chronic.settings import ACTIONS, Clinicians, HtnMachine, Problem, Regime, Reward
from decisions.health.chronic.training import (
    behaviour_cloning,
    count_transitions,
    estimated_transitions,
    forget,
)
from decisions.health.chronic.unlearning import unlearn_check


def _two_clinicians() -> Logs:
    """Patient 0 (kappa 0.9) moves state 0 -> 1 under intensify; patient 1 (kappa 0.1) moves 0 -> 2."""
    states = np.array([[0, 1], [0, 2]])
    return Logs(states, np.zeros((2, 1), int), np.array([0.9, 0.1], np.float32), np.array([0, 1]))


def test_the_kappa_weighted_machine_weights_each_transition_by_its_clinician() -> None:
    counts = count_transitions(_two_clinicians())
    uniform = estimated_transitions(counts, weighted=False)[0, 0]
    weighted = estimated_transitions(counts, weighted=True)[0, 0]
    np.testing.assert_allclose(uniform[[1, 2]], [0.5, 0.5])
    np.testing.assert_allclose(weighted[[1, 2]], [0.9, 0.1], rtol=1e-6)
    assert estimated_transitions(counts, weighted=True)[1, 0, 0] == 1.0  # never logged: stays


def test_kappa_weighted_cloning_follows_the_capable_clinicians() -> None:
    states = np.zeros((4, 2), int)
    actions = np.array([[0], [1], [1], [1]])  # one capable clinician intensifies, three others hold
    logs = Logs(states, actions, np.array([0.9, 0.1, 0.1, 0.1], np.float32), np.arange(4))
    full, hold = regime_mask(Regime(), 1), np.ones((1, N_STATES), int)
    assert int(behaviour_cloning(logs, False, full, hold)[0, 0]) == ACTIONS.index("hold")
    assert int(behaviour_cloning(logs, True, full, hold)[0, 0]) == ACTIONS.index("intensify")


def _logs() -> Logs:
    case = make_case("htn", HtnMachine(), Problem(horizon=6), Reward(), "hold")
    return draw_logs(case, Clinicians(), 60, jax.random.PRNGKey(1))


def test_forgetting_a_patient_equals_retraining_without_them_bit_for_bit() -> None:
    logs = _logs()
    result = unlearn_check(logs, np.array([3, 17]), Reward(), 6, regime_mask(Regime(), 6), repeats=1)
    assert result["equal"] == 1.0 and result["forgotten"] == 2.0


def test_forgetting_changes_the_counts_by_exactly_the_patients_transitions() -> None:
    logs = _logs()
    counts = count_transitions(logs)
    left = forget(counts, logs, np.array([5]))
    assert counts.counts.sum() - left.counts.sum() == (logs.states[5, :-1] != CONTROLLED).sum()
    assert not np.array_equal(left.counts, count_transitions(logs, exclude=np.array([6])).counts)


def test_an_execution_gap_makes_outcomes_depend_on_the_clinician() -> None:
    problem = Problem(diseases=("htn",), horizon=6)
    case = make_case("htn", HtnMachine(), problem, Reward(), "hold")
    key = jax.random.PRNGKey(4)
    plain = draw_logs(case, Clinicians(), 400, key)
    assert all(np.array_equal(a, b) for a, b in zip(plain, draw_logs(case, Clinicians(execution_gap=0.0), 400, key),
                                                       strict=True))
    gapped = draw_logs(case, Clinicians(execution_gap=0.9), 4000, key)
    counts = count_transitions(gapped)
    low, high = (estimated_transitions(counts._replace(counts=counts.counts[[g]], kappas=counts.kappas[[g]]), False)
                 for g in (0, 1))
    treated = np.flatnonzero((state_table()[:, 0] > 0) & (state_table()[:, 1] > 0))
    logged = counts.counts[:, treated, ACTIONS.index("hold")].sum(-1).min(0) > 20
    down = [(machine[ACTIONS.index("hold"), treated[logged]][:, :CONTROLLED].reshape(-1, 4, 4 * 2 * 2 * 3)
             .sum(-1)) for machine in (low, high)]
    bands = state_table()[treated[logged], 0]
    improved = [np.mean([d[i, b - 1] for i, b in enumerate(bands)]) for d in down]
    assert improved[0] < 0.75 * improved[1]
