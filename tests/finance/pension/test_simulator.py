"""The simulator's decisions stay feasible, its adjoint matches finite differences in float64 for
every kind of input, and a second valuation with the same shapes does not re-trace."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.bench import central_difference
from decisions.finance.pension.params import PensionParams
from decisions.finance.pension.policy import (
    FUNDING_AND_TIME,
    AllocationNet,
    decide,
    features,
    init_policy,
    with_state_gate,
)
from decisions.finance.pension.scenario import Scenario
from decisions.finance.pension.simulator import draw_normals, rollout

SMALL = {"horizon_years": 2, "funding": {"initial_funding_ratio": 0.93}}


def _random_policy(params: PensionParams, gain: float) -> sp.TrainedPensionPolicy:
    """A network with weights scaled up so that its decisions move with the state."""
    net = AllocationNet(n_assets=params.n_assets, hidden=(16, 16))
    weights = init_policy(net, jax.random.PRNGKey(3))
    noisy = jax.tree_util.tree_map(
        lambda w: w + 0.3 * jax.random.normal(jax.random.PRNGKey(w.size), w.shape), weights
    )
    return sp.TrainedPensionPolicy(
        policy=net,
        params=jax.tree_util.tree_map(lambda w: gain * w, noisy),
        settings=sp.PensionSnapoSettings(),
        asset_names=params.asset_names,
    )


def test_weights_are_long_only_and_sum_to_one_and_contributions_respect_the_bounds() -> None:
    scenario = Scenario.parse({**SMALL, "funding": {"contribution_min": 0.05, "contribution_max": 0.12}})
    params = to_params(scenario)
    policy = _random_policy(params, gain=20.0)  # saturating outputs
    normals = draw_normals(jax.random.PRNGKey(0), 64, params.months, params.n_shocks)
    _, traj = sp.simulate(policy, params, normals)
    weights, rate = np.asarray(traj.weights), np.asarray(traj.contribution_rate)
    assert weights.shape == (64, params.months, params.n_assets)
    assert weights.min() >= 0.0
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
    assert rate.min() >= 0.05 - 1e-7 and rate.max() <= 0.12 + 1e-7
    assert weights.max() > 0.9 and rate.max() - rate.min() > 0.01  # the policy really moves


def test_adjoint_matches_central_finite_differences_in_float64() -> None:
    checks = [
        ("key_rates", 2),
        ("key_rates", 6),
        ("key_rates", 10),
        ("risky_mean", 0),
        ("risky_vol", 1),
        ("correlation", 3),
        ("correlation", 9),
        ("factor_vol", 0),
        ("factor_speed", 1),
        ("ns_decay", None),
        ("mortality_scale", None),
        ("initial_assets", None),
        ("contribution_min", None),
        ("contribution_max", None),
        ("salary_growth", None),
        ("floor", None),
    ]
    with jax.enable_x64(True):
        params = to_params(Scenario.parse(SMALL), dtype=jnp.float64)
        trained = _random_policy(params, gain=3.0)
        policy_params = sp.cast(trained.params, params)
        normals = draw_normals(jax.random.PRNGKey(1), 16, params.months, params.n_shocks, jnp.float64)

        def value(p: PensionParams) -> jax.Array:
            outcome, _ = rollout(trained.policy, policy_params, p, normals, tau=0.02, smooth=True)
            return jnp.mean(outcome.value)

        value_fn = jax.jit(value)
        grads = jax.jit(jax.grad(value))(params)
        assert float(jnp.abs(grads.floor)) > 0  # the shortfall penalty is active
        for field, index in checks:
            adjoint = float(getattr(grads, field) if index is None else getattr(grads, field)[index])
            fd = central_difference(value_fn, params, field, index)
            assert adjoint == pytest.approx(fd, rel=1e-5, abs=1e-6), (field, index)
    assert jnp.zeros(1).dtype == jnp.float32  # x64 did not leak


def test_a_second_valuation_does_not_retrace() -> None:
    params = to_params(Scenario.parse(SMALL))
    policy = _random_policy(params, gain=1.0)
    first = draw_normals(jax.random.PRNGKey(5), 8, params.months, params.n_shocks)
    second = draw_normals(jax.random.PRNGKey(6), 8, params.months, params.n_shocks)
    sp.evaluate(policy, params, first)
    size = sp._hard_rollout._cache_size()
    bumped = params.replace(key_rates=params.key_rates + 1e-4, mortality_scale=params.mortality_scale * 1.1)
    sp.evaluate(policy, bumped, second)
    sp.simulate(policy, params, second)
    assert sp._hard_rollout._cache_size() == size
    sp.sensitivities(policy, params, first)
    size = sp._value_and_grad._cache_size()
    sp.sensitivities(policy, bumped, second)
    assert sp._value_and_grad._cache_size() == size


def test_the_state_gate_hides_features_and_gets_no_gradient() -> None:
    net = AllocationNet(n_assets=7, hidden=(8,))
    blind = with_state_gate(init_policy(net, jax.random.PRNGKey(0)), FUNDING_AND_TIME)
    blind = jax.tree_util.tree_map(lambda w: 10.0 * w, blind)  # large weights: outputs move with the inputs
    calm = features(jnp.asarray(1.1), jnp.asarray(0.5), jnp.asarray([0.01, 0.0, 0.0]))
    stressed = features(jnp.asarray(1.1), jnp.asarray(0.5), jnp.asarray([-0.02, 0.01, 0.03]))
    poorer = features(jnp.asarray(0.8), jnp.asarray(0.5), jnp.asarray([0.01, 0.0, 0.0]))
    w_calm, c_calm = decide(net, blind, calm, 0.0, 0.3)
    w_stressed, c_stressed = decide(net, blind, stressed, 0.0, 0.3)
    np.testing.assert_array_equal(np.asarray(w_calm), np.asarray(w_stressed))
    assert float(c_calm) == float(c_stressed)
    assert not np.allclose(np.asarray(decide(net, blind, poorer, 0.0, 0.3)[0]), np.asarray(w_calm))
    grads = jax.grad(lambda p: jnp.sum(decide(net, p, calm, 0.0, 0.3)[0] ** 2))(blind)
    assert not np.any(np.asarray(grads["params"]["state_gate"]))
