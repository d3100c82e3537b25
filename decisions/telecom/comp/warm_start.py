"""Warm starts of the CoMP PPO policies: behaviour cloning of a demonstrator before PPO.

On the joint-transmission tasks (``Task.channel == "joint"``) PPO from a random policy does
not learn: the reward is the mean over up to 30 users' QoE, so one advantage per step credits
every user's serving-set choice with the whole step's luck. Measured on
``c7-u15-resource_fair-me-jt`` (16 episodes, ``python -m decisions.telecom.comp.spread --tasks
joint-training --networks c7-u15-resource_fair-me-jt --expert-steps 600000``): the study's expert
from scratch (600,000 steps) scored QoE 0.289 against random's 0.284 (at 2.4M steps 0.266), with
70 % of users given every cell and an entropy of 1.75 nats per user (uniform: 2.08). With a warm
start (``python -m decisions.telecom.comp.warm_start c7-u15-resource_fair-me-jt --warm-starts
max_snr,planner``, 16 other episodes): random 0.279, max-SNR 0.394, the planner 0.403; the expert
cloned from max-SNR and fine-tuned 0.394 (PPO keeps max-SNR), cloned from the planner and
fine-tuned 0.398 (the clone alone, measured apart: 0.393). The joint study warm-starts from the
planner.

- ``WARM_STARTS``: ``"none"`` (PPO from scratch, the parity study's experts), ``"max_snr"``
  (clone max-SNR) and ``"planner"`` (clone ``planner.GreedyPlanner``, which reads the state:
  the clone learns to act like it from the observation alone);
- ``demonstrations``: a demonstrator's recorded observations and canonical actions on tasks,
  as a single-task expert (link flags hidden) or the multi-task PPO (task features appended) sees them;
- ``cloned_params``: the ``initial`` params ``ppo.train`` fine-tunes (``core``'s ``behaviour_clone``).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.agents import ppo
from decisions.core.agents.onpolicy.clone import behaviour_clone
from decisions.core.env import Environment
from decisions.telecom.comp.budget import WARM_STARTS
from decisions.telecom.comp.env import hide_links
from decisions.telecom.comp.tasks import Task, features_from_params

__all__ = ["CLONE_STEPS", "WARM_EPISODES", "WARM_STARTS", "cloned_params", "demonstrations", "demonstrator"]

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
    from decisions.telecom.comp.heuristics import SERVING_SET_POLICIES
    from decisions.telecom.comp.planner import GreedyPlanner

    if name == "max_snr":
        return SERVING_SET_POLICIES["max_snr"]
    if name == "planner":
        return GreedyPlanner()
    raise ValueError(f"warm_start: no demonstrator for {name!r}; choose from {', '.join(WARM_STARTS[1:])}")


def demonstrations(
    tasks: Sequence[Task], name: str, episodes: int, seed: int, *, task_features: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Demonstrator ``name``'s observations and canonical actions on every task.

    Args:
        tasks: the tasks (each gets ``episodes`` whole episodes).
        name: a demonstrator of ``WARM_STARTS``.
        episodes: episodes per task.
        seed: episode seed.
        task_features: observations as the multi-task PPO sees them (link flags, then the task's
            features); else as a single-task expert does (link flags hidden).

    Returns:
        ``(obs, actions)``: ``(N, obs_size)`` and ``(N, MAX_USERS)`` with ``N = len(tasks) *
        episodes * T``.
    """
    from decisions.telecom.comp.experts import rollout

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


def main(argv: Sequence[str] | None = None) -> int:
    """Print random, max-SNR, the planner and PPO experts with each warm start on one task (mean QoE)."""
    from decisions.telecom.comp.catalog import task_by_name
    from decisions.telecom.comp.experts import rollout, task_policy, train_expert
    from decisions.telecom.comp.heuristics import SERVING_SET_POLICIES
    from decisions.telecom.comp.planner import GreedyPlanner

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("task", help="a catalogue task's name, e.g. c7-u15-resource_fair-me-jt")
    parser.add_argument("--steps", type=int, default=600_000, help="PPO steps of each expert")
    parser.add_argument("--warm-starts", default="none,max_snr,planner",
                        help=f"comma-separated, of {', '.join(WARM_STARTS)}: one expert each")
    parser.add_argument("--episodes", type=int, default=16, help="evaluation episodes")
    args = parser.parse_args(argv)
    starts = args.warm_starts.split(",")
    if not set(starts) <= set(WARM_STARTS):
        parser.error(f"--warm-starts: choose from {', '.join(WARM_STARTS)}")
    task = task_by_name(args.task)
    keys = jax.random.split(jax.random.PRNGKey(1234), args.episodes)
    policies: dict[str, Any] = {"random": SERVING_SET_POLICIES["random"], "max_snr": SERVING_SET_POLICIES["max_snr"],
                                "planner": GreedyPlanner()}
    for warm in starts:
        result = train_expert(task, args.steps, warm_start=warm)
        policies[f"expert ({warm})"] = task_policy(result, observe_links=False)
    for name, policy in policies.items():
        print(f"{name:>20}: mean QoE {float(rollout(task, policy, keys)['qoe'].mean()):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
