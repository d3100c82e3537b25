"""Black-box RL on gas storage: score any ``policy(params, obs, key)`` on the common price paths."""

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
        normals: ``(P, D - 1)`` standard normals (``prices.draw_normals``), shared with the other methods.

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


def ppo_vs_snapo(
    *,
    env_steps: int = 3_000_000,
    eval_paths: int = 512,
    seed: int = 0,
    progress: Any = None,
) -> dict[str, float]:
    """Black-box PPO against SNAPO on the default stochastic scenario, same evaluation paths.

    Args:
        env_steps: PPO's training budget in environment steps.
        seed: seed of both trainings and of the evaluation paths.
        progress: optional ``(task, done, total)`` callback.

    Returns:
        ``ppo_value``, ``snapo_value``, their paired difference's standard error,
        ``ppo_vs_snapo_value_ratio`` (PPO / SNAPO), ``ppo_train_seconds``, ``snapo_train_seconds``,
        ``ppo_vs_snapo_time_ratio`` (PPO / SNAPO wall time) and ``ppo_env_steps``.
    """
    import numpy as np

    from decisions.core.agents import ppo
    from decisions.energy.gas_storage import snapo_policy
    from decisions.energy.gas_storage.prices import draw_normals
    from decisions.energy.gas_storage.scenario import Scenario

    report = progress or (lambda task, done, total: None)
    scenario = Scenario()
    env = GasStorageEnv(scenario)
    params = env.default_params
    key_ppo, key_snapo, key_eval = jax.random.split(jax.random.PRNGKey(seed), 3)
    config = ppo.PPOConfig(num_envs=32, rollout_steps=365, total_env_steps=env_steps, gamma=1.0, log_every=10)
    result = ppo.train(env, config, key=key_ppo, params=params, progress=report)
    report("SNAPO training", 0, 1)
    trained = snapo_policy.train_policy(scenario, key=key_snapo)
    report("SNAPO training", 1, 1)
    normals = draw_normals(key_eval, eval_paths, scenario.horizon)
    ppo_values = np.asarray(evaluate_agent(env, result.policy, result.params, normals, params), np.float64)
    snapo_values = np.asarray(snapo_policy.evaluate_policy(trained, normals, params), np.float64)
    diff = ppo_values - snapo_values
    return {
        "ppo_value": float(ppo_values.mean()),
        "snapo_value": float(snapo_values.mean()),
        "ppo_minus_snapo_stderr": float(diff.std(ddof=1) / np.sqrt(len(diff))),
        "ppo_vs_snapo_value_ratio": float(ppo_values.mean() / snapo_values.mean()),
        "ppo_train_seconds": float(result.train_seconds),
        "snapo_train_seconds": float(trained.train_seconds),
        "ppo_vs_snapo_time_ratio": float(result.train_seconds / trained.train_seconds),
        "ppo_env_steps": float(result.env_steps),
    }
