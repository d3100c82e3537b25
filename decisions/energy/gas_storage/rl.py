"""Black-box RL on gas storage: score any ``policy(params, obs, key)`` on the common price paths.

The SNAPO abstract claims black-box RL trains slowly and gives no sensitivities. To measure that,
an RL agent trained on ``GasStorageEnv`` (same rules as the SNAPO rollout) is run here on the
*same* evaluation normals as SNAPO and the baselines, and its daily moves are scored by the one
scorer every method uses (``valuation.path_values``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from decisions.energy.gas_storage.params import GasStorageParams
from decisions.energy.gas_storage.simulator import GasStorageEnv
from decisions.energy.gas_storage.valuation import path_values

PyTree = Any


def agent_schedule(
    env: GasStorageEnv, policy: Any, policy_params: PyTree, normals: Array, params: GasStorageParams
) -> tuple[Array, Array]:
    """Daily moves and spots of a (deterministic) agent on given price paths.

    Args:
        env: the environment the agent was trained on.
        policy: ``policy(params, obs, key) -> action`` (one observation).
        policy_params: the agent's parameters.
        normals: ``(P, D - 1)`` standard normals (``prices.draw_normals``), shared with the other methods.
        params: the scenario's traced parameters.

    Returns:
        ``(moves, spots)``, each ``(P, D)``.
    """
    return _schedule(env, policy, policy_params, normals, params)


@partial(jax.jit, static_argnums=(0, 1))
def _schedule(env, policy, policy_params, normals, params):
    shocks = jnp.concatenate([normals, jnp.zeros((normals.shape[0], 1), normals.dtype)], axis=1)
    key = jax.random.PRNGKey(0)  # deterministic policies ignore it

    def one_path(path_shocks: Array) -> tuple[Array, Array]:
        obs, state = env.reset(key, params)

        def day(carry, shock):
            obs, state = carry
            action = policy(policy_params, obs, key)
            obs, state, _, _, _, info = env.step_with_normal(state, action, shock, params)
            return (obs, state), (info["move"], info["spot"])

        _, (moves, spots) = jax.lax.scan(day, (obs, state), path_shocks)
        return moves, spots

    return jax.vmap(one_path)(shocks)


def evaluate_agent(
    env: GasStorageEnv, policy: Any, policy_params: PyTree, normals: Array, params: GasStorageParams
) -> Array:
    """Discounted value of each evaluation path under the agent (hard rules): ``(P,)``."""
    moves, spots = agent_schedule(env, policy, policy_params, normals, params)
    return path_values(moves, spots, params)
