"""Chronic care's neural conservative learner (discrete CQL): rewards, masks, conservatism, seeds, gain."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.health.chronic.cql import (
    device_transitions,
    fit_variants,
    logged_rewards,
    logged_transitions,
    neural_policies,
    q_values,
    state_features,
)
from decisions.health.chronic.logs import Logs
from decisions.health.chronic.model import CONTROLLED, N_ACTIONS, N_STATES, state_index
from decisions.health.chronic.scoring import Case, behaviour_population, draw_logs, make_case, score
from decisions.health.chronic.settings import Clinicians, HtnMachine, Neural, Problem, Reward

TINY = Neural(steps=30, batch=32, width=16, depth=1)


@pytest.fixture(scope="module")
def case() -> Case:
    return make_case("htn", HtnMachine(), Problem(), Reward(), "hold")


@pytest.fixture(scope="module")
def logs(case: Case) -> Logs:
    return draw_logs(case, Clinicians(), 1500, jax.random.PRNGKey(2))


def test_a_logged_reward_is_the_tier_on_entering_control_less_the_costs() -> None:
    band0 = state_index(0, 1, 1, 1, 2)  # in band 0 with a side effect
    states = np.array([[band0, CONTROLLED, CONTROLLED], [band0, band0, band0]])
    actions = np.array([[3, 0], [0, 1]])  # check then (controlled) intensify; intensify then hold
    logs = Logs(states, actions, np.ones(2, np.float32), np.arange(2))
    reward = Reward()
    r = logged_rewards(logs, reward, 2)
    np.testing.assert_allclose(r[0], [1.0 - reward.check_cost - reward.side_effect_cost, 0.0], rtol=1e-6)
    np.testing.assert_allclose(r[1], [-reward.intensify_cost - reward.side_effect_cost,
                                      -reward.side_effect_cost], rtol=1e-6)


def test_logged_rewards_average_to_the_true_expected_rewards(case: Case) -> None:
    logs = draw_logs(case, Clinicians(), 8000, jax.random.PRNGKey(0))
    r = logged_rewards(logs, case.reward, case.horizon)
    t = np.broadcast_to(np.arange(case.horizon), r.shape)
    s, a = logs.states[:, :-1], logs.actions
    cell = ((t * N_ACTIONS + a) * (CONTROLLED + 1) + s)[s != CONTROLLED]
    size = case.horizon * N_ACTIONS * (CONTROLLED + 1)
    visits = np.bincount(cell, minlength=size)
    mean = np.bincount(cell, r[s != CONTROLLED], minlength=size) / np.maximum(visits, 1)
    expected = np.asarray(case.mdp.rewards).reshape(-1)
    well = visits >= 200
    assert well.sum() > 30
    # a payment is at most 1: a cell's mean is within 5 standard errors of its expectation
    assert np.all(np.abs(mean - expected)[well] <= 5 * 0.5 / np.sqrt(visits[well]) + 1e-5)


def test_the_greedy_policies_pick_only_allowed_actions(case: Case, logs: Logs) -> None:
    regimes = tuple(case.masks)
    policies = neural_policies(case, logs, regimes, TINY, jax.random.PRNGKey(0))
    train_mask = case.masks[case.train_regime]
    assert set(policies) == {(f"cql_{w}_{k}", r) for w in ("uniform", "kappa") for k in ("aware", "naive")
                             for r in regimes}
    for (method, regime), policy in policies.items():
        mask = case.masks[regime] if method.endswith("aware") else train_mask
        chosen = np.asarray(policy).argmax(-1)
        np.testing.assert_allclose(np.asarray(policy).sum(-1), 1.0)
        assert np.take_along_axis(mask, chosen[..., None], -1).all(), (method, regime)


def test_the_same_key_gives_the_same_policies(case: Case, logs: Logs) -> None:
    first = neural_policies(case, logs, ("full",), TINY, jax.random.PRNGKey(5))
    again = neural_policies(case, logs, ("full",), TINY, jax.random.PRNGKey(5))
    for name, policy in first.items():
        np.testing.assert_array_equal(np.asarray(policy), np.asarray(again[name]))


def _gap_of_unlogged_actions(alpha: float, case: Case, logs: Logs) -> float:
    """Mean over logged (t, s) of the best never-logged action's Q less the best logged action's Q."""
    settings = Neural(steps=200, batch=64, width=32, depth=1, alpha=alpha, learning_rate=3e-3)
    x = jnp.asarray(state_features(case.horizon))
    data = logged_transitions(logs, case.reward, case.horizon)
    stacked = fit_variants(jax.random.PRNGKey(0), device_transitions(data), x, jnp.ones((1, case.horizon, N_STATES, N_ACTIONS), bool),
                           jnp.zeros(1, bool), settings)
    q = np.asarray(q_values(jax.tree.map(lambda v: v[0], stacked), settings, x))
    t, s = data.t[:data.count], data.s[:data.count]
    q = q[t, s]
    logged = np.isin(np.arange(N_ACTIONS), [0, 1])
    return float(np.mean(q[:, ~logged].max(-1) - q[:, logged].max(-1)))


def test_the_conservative_penalty_lowers_never_logged_actions(case: Case, logs: Logs) -> None:
    logs = logs._replace(actions=np.where(logs.actions <= 1, logs.actions, 1))  # intensify and hold only
    assert _gap_of_unlogged_actions(1.0, case, logs) < _gap_of_unlogged_actions(0.0, case, logs) - 1.0


def test_a_short_training_beats_the_clinicians(case: Case, logs: Logs) -> None:
    clinicians = Clinicians()
    policies = neural_policies(case, logs, ("full",), Neural(steps=2000), jax.random.PRNGKey(0))
    behaviour = behaviour_population(case, clinicians, "full")[1][-1]
    for method in ("cql_uniform_aware", "cql_kappa_aware"):
        assert score(case, policies[(method, "full")], "full")[1][-1] > behaviour + 0.08, method


def test_logs_without_a_usable_visit_are_refused(case: Case) -> None:
    states = np.full((2, case.horizon + 1), CONTROLLED)
    logs = Logs(states, np.ones((2, case.horizon), int), np.ones(2, np.float32), np.arange(2))
    with pytest.raises(InputError, match="logs"):
        neural_policies(case, logs, ("full",), TINY, jax.random.PRNGKey(0))


def test_unobserved_visits_are_left_out(logs: Logs, case: Case) -> None:
    observed = np.ones(logs.actions.shape, bool)
    observed[:, 1] = False
    data = logged_transitions(logs._replace(observed=observed), case.reward, case.horizon)
    assert (data.t[:data.count] != 1).all()
    assert data.count == ((logs.states[:, :-1] != CONTROLLED) & observed).sum()


def test_bad_neural_settings_are_refused_naming_the_field() -> None:
    with pytest.raises(InputError, match="neural.steps"):
        Neural.parse({"steps": 0})
    with pytest.raises(InputError, match="neural.learning_rate"):
        Neural.parse({"learning_rate": 0.0})
