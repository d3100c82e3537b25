"""Chronic care's clinician capabilities estimated from the visit logs alone."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from decisions.health.chronic.capability import estimate_capability, estimate_kappas
from decisions.health.chronic.data import clinician_kappas
from decisions.health.chronic.logs import CONTROLLED, Logs
from decisions.health.chronic.scoring import draw_logs, make_case
from decisions.health.chronic.settings import ACTIONS, Clinicians, HtnMachine, Problem, Reward

HOLD, INTENSIFY = ACTIONS.index("hold"), ACTIONS.index("intensify")


@pytest.fixture(scope="module")
def simulated() -> Logs:
    """1,000 HTN patients of the default clinicians (20: 12 at kappa 0.2, 8 at 0.9), 12 visits."""
    case = make_case("htn", HtnMachine(), Problem(), Reward(), "hold")
    return draw_logs(case, Clinicians(), 1000, jax.random.PRNGKey(0))


def _logs(visits: list[tuple[int, int, int, int]], patients: int) -> Logs:
    """One-visit logs from ``(patient, clinician, state, action)`` rows."""
    states = np.full((patients, 2), CONTROLLED)
    actions = np.full((patients, 1), HOLD)
    clinician = np.zeros(patients, int)
    for patient, who, state, action in visits:
        states[patient, 0], actions[patient, 0], clinician[patient] = state, action, who
    return Logs(states, actions, np.ones(patients, np.float32), clinician)


def test_the_two_capability_groups_are_recovered_from_simulated_logs(simulated: Logs) -> None:
    """Each clinician within 0.12 of its kappa, and every low-capability clinician's estimate below
    every capable one's."""
    truth = clinician_kappas(Clinicians())
    capability = estimate_capability(simulated, HOLD, clinicians=len(truth))
    assert capability.converged and not capability.fallback.any()
    np.testing.assert_allclose(capability.kappa, truth, atol=0.12)
    assert capability.kappa[truth < 0.5].max() < capability.kappa[truth > 0.5].min()


def test_the_estimate_skips_unobserved_visits_and_recovers_the_groups_from_a_ragged_log(simulated: Logs) -> None:
    rng = np.random.default_rng(0)
    horizon = simulated.actions.shape[1]
    observed = np.arange(horizon)[None, :] < rng.integers(1, horizon + 1, len(simulated.kappa))[:, None]
    ragged = simulated._replace(observed=observed)
    padded = ragged._replace(actions=np.where(observed, simulated.actions, INTENSIFY))
    kappas = estimate_kappas(ragged, HOLD)
    np.testing.assert_array_equal(kappas, estimate_kappas(padded, HOLD))
    assert kappas.shape == simulated.kappa.shape
    np.testing.assert_allclose(kappas, simulated.kappa, atol=0.2)


def test_with_only_visits_where_someone_departed_kappa_is_each_clinicians_departure_share() -> None:
    visits = [(0, 0, 5, INTENSIFY), (1, 0, 5, INTENSIFY), (2, 0, 5, INTENSIFY), (3, 0, 5, HOLD),
              (4, 1, 5, HOLD), (5, 1, 5, INTENSIFY)]
    capability = estimate_capability(_logs(visits, 6), HOLD)
    np.testing.assert_allclose(capability.kappa, [0.75, 0.5])
    np.testing.assert_array_equal(capability.informative, [4, 2])


def test_a_clinician_with_no_informative_visit_gets_the_pooled_estimate() -> None:
    """Clinician 1 only holds where nobody departed (state 9); clinician 2 has no patient."""
    visits = [(0, 0, 5, INTENSIFY), (1, 0, 5, HOLD), (2, 1, 9, HOLD), (3, 1, 9, HOLD),
              (4, 0, CONTROLLED, INTENSIFY)]  # a visit once controlled is not counted
    capability = estimate_capability(_logs(visits, 5), HOLD, clinicians=3)
    np.testing.assert_array_equal(capability.fallback, [False, True, True])
    assert capability.kappa[1] == capability.kappa[2] == pytest.approx(capability.kappa[0])
    assert 0.0 < capability.kappa[0] <= 0.5


def test_when_nobody_departs_from_the_habit_every_kappa_falls_back_to_equal_weights() -> None:
    capability = estimate_capability(_logs([(0, 0, 5, HOLD), (1, 1, 7, HOLD)], 2), HOLD)
    np.testing.assert_array_equal(capability.kappa, [1.0, 1.0])
    assert capability.fallback.all()
