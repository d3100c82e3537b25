"""Warm starts of the CoMP PPO policies: behaviour cloning of a demonstrator before PPO fine-tunes it.

- ``WARM_STARTS``: ``"none"`` (PPO from scratch), ``"max_snr"`` (clone max-SNR) and ``"planner"`` (clone
  ``planner.GreedyPlanner``, which reads the state: the clone acts like it from the observation alone);
- ``demonstrations``: a demonstrator's observations and canonical actions on tasks, as a single-task
  expert (link flags hidden) or the multi-task PPO (task features appended) sees them;
- ``cloned_params`` / ``warm_start_params``: the ``initial`` params ``ppo.train`` fine-tunes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.agents import ppo
from decisions.core.agents.onpolicy.clone import behaviour_clone
from decisions.core.env import Environment
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.planner import GreedyPlanner
from decisions.telecom.comp.policies.presets import WARM_STARTS
from decisions.telecom.comp.policies.rollouts import rollout
from decisions.telecom.comp.sim.catalog import Task
from decisions.telecom.comp.sim.env import hide_links
from decisions.telecom.comp.sim.tasks import features_from_params

__all__ = [
    "CLONE_STEPS", "WARM_EPISODES", "WARM_STARTS", "cloned_params", "demonstrations", "demonstrator", "warm_start_params",
]

WARM_EPISODES = 32
"""Demonstrator episodes per task that a warm start clones."""
CLONE_STEPS = 3_000
"""Adam steps (minibatches of 512 steps' observations) of the cloning."""

PyTree = Any


def demonstrator(name: str) -> Any:
    """The policy ``name`` of ``WARM_STARTS`` clones (not ``"none"``).

    Raises:
        ValueError: an unknown name, or ``"none"``.
    """
    if name == "max_snr":
        return SERVING_SET_POLICIES["max_snr"]
    if name == "planner":
        return GreedyPlanner()
    raise ValueError(f"warm_start: no demonstrator for {name!r}; choose from {', '.join(WARM_STARTS[1:])}")


def demonstrations(
    tasks: Sequence[Task], name: str, episodes: int, seed: int, *, task_features: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Demonstrator ``name``'s observations and canonical actions on every task.

    Returns:
        ``(obs, actions)``: ``(N, obs_size)`` and ``(N, MAX_USERS)`` with ``N = len(tasks) *
        episodes * T``.
    """
    if episodes < 1:
        raise ValueError(f"warm_episodes: must be >= 1, got {episodes}")
    policy = demonstrator(name)
    all_obs, all_actions = [], []
    for i, task in enumerate(tasks):
        keys = jax.random.split(jax.random.PRNGKey(seed + 1_000 * i), episodes)
        out = rollout(task, policy, keys, record=True)
        obs = jnp.asarray(out["obs"].reshape(-1, out["obs"].shape[-1]))
        if task_features:
            features = jnp.tile(features_from_params(task.params())[None], (obs.shape[0], 1))
            obs = jnp.concatenate([obs, features], axis=1)
        else:
            obs = hide_links(obs)
        all_obs.append(np.asarray(obs))
        all_actions.append(out["action"].reshape(-1, out["action"].shape[-1]))
    return np.concatenate(all_obs), np.concatenate(all_actions)


def cloned_params(
    env: Environment[Any, Any],
    config: ppo.PPOConfig,
    obs: np.ndarray,
    actions: np.ndarray,
    *,
    seed: int,
    steps: int,
    batch_size: int = 512,
) -> PyTree:
    """PPO ``initial`` params for ``env`` and ``config`` whose actor imitates ``actions`` on ``obs``
    (``steps`` Adam steps on minibatches of ``batch_size`` observations)."""
    policy = ppo.make_agent(env, config).policy
    params, _ = behaviour_clone(
        policy, obs, actions, key=jax.random.PRNGKey(seed), steps=steps, batch_size=batch_size,
        normalize_obs=config.normalize_obs,
    )
    return params


def warm_start_params(
    tasks: Sequence[Task], warm_start: str, env: Any, config: ppo.PPOConfig, seed: int, *, task_features: bool
) -> PyTree | None:
    """The cloned ``initial`` PPO params of warm start ``warm_start`` on ``tasks`` (None for ``"none"``).

    Raises:
        ValueError: ``warm_start`` is not one of ``WARM_STARTS``.
    """
    if warm_start not in WARM_STARTS:
        raise ValueError(f"warm_start: must be one of {', '.join(WARM_STARTS)}, got {warm_start!r}")
    if warm_start == "none":
        return None
    obs, actions = demonstrations(tasks, warm_start, WARM_EPISODES, seed, task_features=task_features)
    return cloned_params(env, config, obs, actions, seed=seed, steps=CLONE_STEPS)
