"""Chronic care's exact answers: the machines are proper, value iteration is optimal, evaluation is exact."""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np

from decisions.health.chronic.data import Logs, _simulate
from decisions.health.chronic.exact import deployed, evaluate, one_hot_policy, value_iteration
from decisions.health.chronic.model import (
    CONTROLLED,
    HOLD,
    INTENSIFY,
    N_ACTIONS,
    Mdp,
    build,
    regime_fallback,
    regime_mask,
    state_table,
)
from decisions.health.chronic.settings import HtnMachine, Regime, Reward, T2dMachine


def test_every_row_of_both_machines_is_a_distribution_and_control_absorbs() -> None:
    for machine in (HtnMachine(), T2dMachine()):
        p = np.asarray(build(machine, Reward(), 12).transitions)
        assert p.min() >= 0.0
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-5)
        assert np.all(p[:, CONTROLLED, CONTROLLED] == 1.0)


def test_value_iteration_matches_brute_force_over_every_deterministic_policy() -> None:
    rng = np.random.default_rng(3)
    states, actions, horizon = 3, 2, 3
    p = rng.dirichlet(np.ones(states), size=(actions, states)).astype(np.float32)
    r = rng.normal(size=(horizon, actions, states)).astype(np.float32)
    start = np.array([0.5, 0.3, 0.2], np.float32)
    mdp = Mdp(jnp.asarray(p), jnp.asarray(r), jnp.asarray(start))
    solution = value_iteration(mdp.transitions, mdp.rewards, jnp.ones((horizon, states, actions), bool))
    best = -np.inf
    for choice in itertools.product(range(actions), repeat=states * horizon):
        policy = one_hot_policy(jnp.asarray(np.reshape(choice, (horizon, states))), actions)
        best = max(best, evaluate(mdp, policy).value)
    vi_value = float(start @ np.asarray(solution.values[0]))
    assert abs(vi_value - best) < 1e-5
    assert abs(evaluate(mdp, one_hot_policy(solution.policy, actions)).value - best) < 1e-5


def test_a_masked_action_is_never_chosen() -> None:
    mdp = build(HtnMachine(), Reward(), 6)
    allowed = regime_mask(Regime(actions=("intensify", "hold")), 6)
    assert int(value_iteration(mdp.transitions, mdp.rewards, jnp.asarray(allowed)).policy.max()) <= 1


def test_a_regime_allows_hold_only_between_visits_and_no_step_past_its_cap() -> None:
    allowed = regime_mask(Regime(visit_every=3, max_step=2), 7)
    assert allowed[[0, 3, 6]].any(-1).all()
    between = allowed[[1, 2, 4, 5]]
    assert between[..., HOLD].all() and between.sum(-1).max() == 1
    capped = state_table()[:, 1] >= 2
    assert not allowed[0, :CONTROLLED][capped, INTENSIFY].any() and allowed[0, :CONTROLLED][~capped, INTENSIFY].all()
    fallback = regime_fallback(allowed, (HOLD,))
    assert (np.take_along_axis(allowed, fallback[..., None], -1)).all()


def test_the_capped_optimum_beats_the_uncapped_one_deployed_under_the_cap() -> None:
    mdp = build(T2dMachine(), Reward(), 12)
    capped = regime_mask(Regime(max_step=2), 12)
    full = regime_mask(Regime(), 12)
    aware = value_iteration(mdp.transitions, mdp.rewards, jnp.asarray(capped)).policy
    naive = value_iteration(mdp.transitions, mdp.rewards, jnp.asarray(full)).policy
    fallback = jnp.asarray(regime_fallback(capped, (HOLD,)))
    value = {name: evaluate(mdp, deployed(one_hot_policy(p, N_ACTIONS), jnp.asarray(capped), fallback)).value
             for name, p in (("aware", aware), ("naive", naive))}
    assert value["aware"] > value["naive"] + 1e-3


def test_exact_ttc_share_matches_monte_carlo() -> None:
    mdp = build(T2dMachine(), Reward(), 12)
    solution = value_iteration(mdp.transitions, mdp.rewards, jnp.asarray(regime_mask(Regime(), 12)))
    exact = evaluate(mdp, one_hot_policy(solution.policy, N_ACTIONS)).ttc_curve
    patients = 4000
    states, _ = _simulate(jax.random.PRNGKey(0), mdp.transitions[None], jnp.zeros(patients, jnp.int32), mdp.start,
                          solution.policy, jnp.int32(1), jnp.ones(patients))
    logs = Logs(np.asarray(states), np.zeros((patients, 12), int), np.ones(patients), np.zeros(patients, int))
    simulated = (logs.states[:, 1:] == CONTROLLED).mean(0)
    np.testing.assert_allclose(simulated, exact, atol=0.03)
