"""Scoring black-box agents on the common price paths (``gas_storage.rl``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rl import agent_schedule, evaluate_agent
from decisions.energy.gas_storage.simulator import GasStorageEnv
from decisions.energy.gas_storage.valuation import feasibility_violation


def _contrarian(weight, obs, key):
    """Withdraw when the price factor is high, inject when it is low."""
    return jnp.tanh(weight * obs[2:3])


def test_agent_sees_the_common_price_paths_and_stays_feasible():
    env = GasStorageEnv()
    params = env.default_params
    normals = draw_normals(jax.random.PRNGKey(1), 8, params.horizon)
    moves, spots = agent_schedule(env, _contrarian, jnp.float32(-3.0), normals, params)
    _, expected_spots = spot_paths(normals, params)
    np.testing.assert_allclose(np.asarray(spots), np.asarray(expected_spots), rtol=1e-5)
    scale = float(params.capacity)
    assert float(jnp.max(feasibility_violation(moves, params))) <= 1e-5 * scale


def test_value_equals_the_sum_of_environment_rewards():
    env = GasStorageEnv()
    params = env.default_params
    normals = draw_normals(jax.random.PRNGKey(2), 2, params.horizon)
    weight = jnp.float32(-3.0)
    obs, state = env.reset(jax.random.PRNGKey(0), params)
    total = 0.0
    shocks = np.concatenate([np.asarray(normals[0]), [0.0]])
    step = jax.jit(env.step_with_normal)  # the environment's own step, compiled once for the day-by-day loop
    act = jax.jit(_contrarian)
    for shock in shocks:
        action = act(weight, obs, None)
        obs, state, reward, terminated, _, _ = step(state, action, jnp.float32(shock), params)
        total += float(reward)
    assert bool(terminated)
    value = float(evaluate_agent(env, _contrarian, weight, normals, params)[0])
    assert abs(value - total) <= 1e-5 * abs(total)
