"""rejax, the agents bench's peer: its agents created for a bench environment, and their training of
every seed at once, as the bench times it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.agents.gymnax_adapter import GymnaxEnv


def create_algo(algo_type: Any, env: GymnaxEnv, env_steps: int, **settings: Any) -> Any:
    """The rejax agent ``algo_type.create(...)`` (``rejax.PPO``, ``rejax.DQN``) with ``settings``, on
    ``env``'s gymnax environment and default params for ``env_steps`` steps per seed, with no
    evaluation but one at the end (which ``seeds_train`` drops)."""
    return algo_type.create(
        env=env.gymnax_env,
        env_params=env.default_params,
        total_timesteps=env_steps,
        eval_freq=env_steps,
        skip_initial_evaluation=True,
        **settings,
    )


def seeds_train(algo: Any, params_of: Callable[[Any], Any]) -> Callable[[Array], Any]:
    """``train(keys)``: rejax ``algo`` trained on every key at once (``jax.jit(jax.vmap(algo.train))``)
    without its in-training evaluation, answering ``params_of`` its final train state."""
    vmapped = jax.jit(jax.vmap(algo.replace(eval_callback=lambda algo, ts, rng: jnp.zeros(())).train))

    def train(keys: Array) -> Any:
        ts, _ = vmapped(keys)
        return params_of(ts)

    return train
