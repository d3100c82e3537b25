"""The simulator: one day by hand, hard rollouts are feasible and priced like every baseline,
smooth -> hard as tau -> 0, the adjoint reverse pass equals plain autodiff, and the RL
environment follows the same rules."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.smooth import hard_clip, smooth_clip
from decisions.energy.gas_storage.facility import inventory_band
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.policy import BaseStockPolicy
from decisions.energy.gas_storage.prices import discount_factors, draw_normals, spot_paths
from decisions.energy.gas_storage.scenario import (
    DeterministicPrices,
    Facility,
    RatchetCurve,
    Scenario,
    seasonal_forward_curve,
)
from decisions.energy.gas_storage.simulator import GasStorageEnv, rollout, step_inventory
from decisions.energy.gas_storage.valuation import feasibility_violation, path_values

DAYS = 40
_rollout = jax.jit(rollout, static_argnames=("policy", "smooth"))
_violation = jax.jit(feasibility_violation)


def _scenario(**facility: object) -> Scenario:
    base = {"max_inventory": 200.0, "max_injection": 25.0, "max_withdrawal": 50.0}
    return Scenario(facility=Facility(**{**base, **facility}), forward_curve=seasonal_forward_curve(DAYS))


def _random_policy(seed: int = 0, scale: float = 1.0) -> tuple[BaseStockPolicy, dict]:
    policy = BaseStockPolicy(hidden=(16,))
    params = policy.init(jax.random.PRNGKey(seed))
    keys = iter(jax.random.split(jax.random.PRNGKey(seed + 1), 16))
    return policy, jax.tree_util.tree_map(
        lambda a: a + scale * jax.random.normal(next(keys), a.shape), params
    )


@pytest.mark.parametrize(
    ("t", "inventory", "desired", "move", "cash"),
    [
        (0, 100.0, 40.0, 25.0, -20.0 * 25.0 - 0.1 * 25.0),  # injection capped by the rate
        (0, 100.0, 10.0, 10.0, -20.0 * 10.0 - 0.1 * 10.0),  # inside the limits: as desired
        (0, 100.0, -80.0, -50.0, 20.0 * 50.0 - 0.2 * 50.0),  # withdrawal capped by the rate
        (DAYS - 2, 100.0, 10.0, -50.0, 20.0 * 50.0 - 0.2 * 50.0),  # the band forces 100 -> 50 (end at 0)
    ],
)
def test_step_by_hand(t: int, inventory: float, desired: float, move: float, cash: float) -> None:
    params = to_params(_scenario(withdrawal_cost=0.2))
    band = inventory_band(params)
    args = (jnp.asarray(t), jnp.asarray(inventory), jnp.asarray(desired), jnp.asarray(20.0), params, band)
    got_move, nxt, got_cash = step_inventory(*args, hard_clip, None)
    assert float(got_move) == pytest.approx(move)
    assert float(nxt) == pytest.approx(inventory + move)
    assert float(got_cash) == pytest.approx(cash)
    smooth = step_inventory(*args, smooth_clip, 1e-3, smooth_costs=True)
    np.testing.assert_allclose([float(v) for v in smooth], [move, inventory + move, cash], atol=0.05)


def test_hard_rollout_is_feasible_and_priced_like_the_baselines() -> None:
    scenario = _scenario(start_inventory=30.0, end_inventory=60.0)
    params = to_params(scenario)
    policy, policy_params = _random_policy(scale=2.0)
    normals = draw_normals(jax.random.PRNGKey(3), 32, DAYS)
    values, traj = _rollout(policy, policy_params, params, normals, tau=0.0, smooth=False)
    assert values.shape == (32,) and traj.moves.shape == (32, DAYS) and traj.inventory.shape == (32, DAYS + 1)
    np.testing.assert_allclose(
        values, jax.jit(path_values)(traj.moves, traj.spots, params), rtol=1e-5, atol=1e-2
    )
    np.testing.assert_allclose(traj.spots, spot_paths(normals, params)[1])
    np.testing.assert_allclose(traj.inventory[:, -1], 60.0, atol=1e-3)
    np.testing.assert_allclose(traj.inventory[:, 1:], 30.0 + np.cumsum(traj.moves, axis=1), atol=1e-3)
    assert float(jnp.max(_violation(traj.moves, params))) <= 1e-3  # float32 rounding only
    assert float(jnp.std(traj.moves)) > 1.0  # the policy does trade


def test_smooth_rollout_tends_to_hard_rollout() -> None:
    params = to_params(_scenario())
    policy, policy_params = _random_policy(scale=2.0)
    normals = draw_normals(jax.random.PRNGKey(4), 16, DAYS)
    hard, _ = _rollout(policy, policy_params, params, normals, tau=0.0, smooth=False)
    gaps = []
    for tau in (5.0, 0.5, 0.05):
        smooth, traj = _rollout(policy, policy_params, params, normals, tau=tau, smooth=True)
        assert float(jnp.max(_violation(traj.moves, params))) <= 1e-3  # smooth_clip stays inside
        gaps.append(float(jnp.max(jnp.abs(smooth - hard))))
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 1e-3 * float(jnp.max(jnp.abs(hard)))


def _reference_value(policy, policy_params, params, normals, tau, smooth):
    """The textbook rollout: one scan of ``step_inventory`` differentiated by plain autodiff."""
    x, spots = spot_paths(normals, params)
    plan = policy.plan(policy_params, x, params)
    band = inventory_band(params)
    clip = smooth_clip if smooth else hard_clip

    def day(inventory, inputs):
        t, spot_t, plan_t = inputs
        desired = policy.act(plan_t, inventory, tau, smooth)
        _, nxt, cash = step_inventory(
            t, inventory, desired, spot_t, params, band, clip, tau, smooth_costs=smooth
        )
        return nxt, cash

    start = jnp.broadcast_to(params.start_inventory, (normals.shape[0],))
    _, cash = jax.lax.scan(day, start, (jnp.arange(params.horizon), spots.T, jnp.moveaxis(plan, -1, 0)))
    return jnp.mean(cash.T @ discount_factors(params))


# Slow (two x64 compilations each). By default the hard rules' gradients are checked end to
# end against finite differences (test_snapo_policy.py) and the smooth ones by the trainings.
@pytest.mark.slow
@pytest.mark.parametrize("smooth", [True, False])
def test_adjoint_reverse_pass_equals_plain_autodiff(smooth: bool) -> None:
    with jax.enable_x64(True):
        ratchets = {
            "max_injection": RatchetCurve(inventory=[0.0, 100.0, 200.0], rate=[30.0, 25.0, 15.0]),
            "max_withdrawal": RatchetCurve(inventory=[0.0, 80.0, 200.0], rate=[20.0, 40.0, 60.0]),
        }
        params = to_params(_scenario(start_inventory=20.0, end_inventory=40.0, **ratchets), jnp.float64)
        policy, policy_params = _random_policy(scale=1.0)
        policy_params = jax.tree_util.tree_map(lambda a: a.astype(jnp.float64), policy_params)
        normals = draw_normals(jax.random.PRNGKey(5), 4, DAYS, jnp.float64)
        tau = 2.0 if smooth else 0.0

        def ours(pp, p):
            return jnp.mean(rollout(policy, pp, p, normals, tau=tau, smooth=smooth)[0])

        def reference(pp, p):
            return _reference_value(policy, pp, p, normals, tau, smooth)

        v1, g1 = jax.jit(jax.value_and_grad(ours, argnums=(0, 1)))(policy_params, params)
        v2, g2 = jax.jit(jax.value_and_grad(reference, argnums=(0, 1)))(policy_params, params)
        assert float(v1) == pytest.approx(float(v2), rel=1e-12)
        for a, b in zip(jax.tree_util.tree_leaves(g1), jax.tree_util.tree_leaves(g2), strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9 * (1.0 + float(jnp.max(jnp.abs(b)))))
        assert float(jnp.max(jnp.abs(g1[1].injection_rates))) > 0.0  # the ratchets do matter


def test_environment_contract() -> None:
    env = GasStorageEnv(_scenario())
    params = env.default_params
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    assert obs.shape == (4,) and obs.dtype == jnp.float32
    assert env.observation_space(params).contains(obs)
    assert env.action_space(params).shape == (1,)
    step = jax.jit(env.step)
    obs, state, reward, terminated, truncated, info = step(
        jax.random.PRNGKey(1), state, jnp.array([1.0]), params
    )
    assert reward.dtype == jnp.float32 and reward.shape == ()
    assert not bool(terminated) and not bool(truncated)
    assert float(info["move"]) == pytest.approx(25.0)  # a = +1: inject as much as allowed
    assert float(obs[1]) == pytest.approx(25.0 / 200.0)  # inventory fraction
    keys = jax.random.split(jax.random.PRNGKey(2), 5)
    batch_obs, _ = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
    assert batch_obs.shape == (5, 4)


def test_environment_episode_matches_rollout() -> None:
    """Always ``a = +1`` in the env == a policy targeting full capacity in ``rollout``."""
    scenario = _scenario().with_prices(DeterministicPrices())
    env = GasStorageEnv(scenario)
    params = env.default_params

    def episode(key):
        _, state = env.reset(key, params)

        def day(carry, k):
            state, total = carry
            _, state, reward, terminated, _, info = env.step(k, state, jnp.array([1.0]), params)
            return (state, total + reward), (info["move"], terminated)

        (_, total), (moves, terminated) = jax.lax.scan(day, (state, 0.0), jax.random.split(key, DAYS))
        return total, moves, terminated

    total, moves, terminated = jax.jit(episode)(jax.random.PRNGKey(0))
    assert bool(terminated[-1]) and not bool(jnp.any(terminated[:-1]))

    class FillUp:
        def plan(self, policy_params, x, p):
            return jnp.full((2, *x.shape), 1e6)

        def act(self, plan_t, inventory, tau, smooth):
            return BaseStockPolicy().act(plan_t, inventory, tau, smooth)

    values, traj = rollout(FillUp(), None, params, jnp.zeros((1, DAYS - 1)), tau=0.0, smooth=False)
    np.testing.assert_allclose(moves, traj.moves[0], atol=1e-4)
    assert float(total) == pytest.approx(float(values[0]), rel=1e-5)
