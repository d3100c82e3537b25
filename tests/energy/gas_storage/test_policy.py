"""The neural base-stock policy: the rule by hand, target bounds, features, smooth -> hard."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.policy import BaseStockPolicy
from decisions.energy.gas_storage.prices import draw_normals, simulate_factor, stationary_std
from decisions.energy.gas_storage.scenario import (
    DeterministicPrices,
    Facility,
    Scenario,
    seasonal_forward_curve,
)


@pytest.fixture(scope="module")
def small() -> Scenario:
    facility = Facility(max_inventory=200.0, max_injection=25.0, max_withdrawal=50.0)
    return Scenario(facility=facility, forward_curve=seasonal_forward_curve(40))


def test_base_stock_rule_by_hand() -> None:
    policy = BaseStockPolicy()
    targets = jnp.array([[100.0, 100.0, 100.0], [200.0, 200.0, 200.0]])  # (2, 3): b1 = 100, b2 = 200
    inventory = jnp.array([50.0, 150.0, 260.0])
    desired = policy.act(targets, inventory, 0.0, False)
    # below b1: inject up to b1; between: hold; above b2: withdraw down to b2
    np.testing.assert_allclose(desired, [50.0, 0.0, -60.0])


def test_smooth_rule_tends_to_hard_rule() -> None:
    policy = BaseStockPolicy()
    targets = jnp.broadcast_to(jnp.array([[100.0], [200.0]]), (2, 101))
    inventory = jnp.linspace(0.0, 300.0, 101)
    hard = policy.act(targets, inventory, 0.0, False)
    errors = [
        float(jnp.max(jnp.abs(policy.act(targets, inventory, tau, True) - hard))) for tau in (4.0, 1.0, 0.25)
    ]
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] <= 0.25 * np.log(2.0) + 1e-4  # softplus error bound tau * log 2


def test_plan_shapes_and_target_bounds(small: Scenario) -> None:
    params = to_params(small)
    policy = BaseStockPolicy(hidden=(16,))
    policy_params = policy.init(jax.random.PRNGKey(0))
    policy_params = jax.tree_util.tree_map(
        lambda a: a + jax.random.normal(jax.random.PRNGKey(1), a.shape), policy_params
    )
    x = simulate_factor(draw_normals(jax.random.PRNGKey(2), 8, small.horizon), params)
    plan = jax.jit(policy.plan)(policy_params, x, params)
    assert plan.shape == (2, 8, small.horizon)
    b1, b2 = np.asarray(plan[0]), np.asarray(plan[1])
    assert np.all(b1 <= b2 + 1e-4)
    assert np.all(b1 >= 0.0 - 1e-4) and np.all(b2 <= 200.0 + 1e-4)


def test_initial_targets_are_mid_range_and_price_independent(small: Scenario) -> None:
    params = to_params(small)
    policy = BaseStockPolicy()
    x = simulate_factor(draw_normals(jax.random.PRNGKey(2), 4, small.horizon), params)
    plan = np.asarray(jax.jit(policy.plan)(policy.init(jax.random.PRNGKey(0)), x, params))
    np.testing.assert_allclose(plan[0], 100.0, atol=1e-3)  # half of capacity
    np.testing.assert_allclose(plan[1], 150.0, atol=1e-3)  # half-way from b1 to capacity


def test_features_are_finite_with_documented_values(small: Scenario) -> None:
    params = to_params(small)
    policy = BaseStockPolicy()
    feats = np.asarray(policy.curve_features(params))
    assert feats.shape == (small.horizon, policy.num_features)
    assert np.all(np.isfinite(feats))
    np.testing.assert_allclose(feats[:, 0], np.linspace(0.0, 1.0, small.horizon), atol=1e-6)  # time fraction
    # the band at t + 1 ends at the end inventory (0), as a capacity fraction
    assert feats[-1, 1] == pytest.approx(0.0) and feats[-1, 2] == pytest.approx(0.0)
    rank = feats[:, 3 + len(policy.window)]
    assert np.all((rank >= 0.0) & (rank <= 1.0))
    # the scaled factor: zero for deterministic prices, unit stationary scale otherwise
    det = to_params(small.with_prices(DeterministicPrices()))
    basis = policy.basis(jnp.ones((2, small.horizon)), det)
    np.testing.assert_allclose(basis[..., 1], 0.0)
    u = policy.basis(jnp.full((1, small.horizon), 0.3), params)[..., 1]
    np.testing.assert_allclose(u, 0.3 / float(stationary_std(params)), rtol=1e-5)
