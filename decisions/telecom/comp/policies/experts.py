"""Per-task PPO experts for CoMP: their configuration, training and files.

- ``EXPERT_CONFIG``: the default ``PPOConfig`` for ``CompEnv``;
- ``train_expert`` / ``save_expert`` / ``load_expert`` / ``expert_policy``: one PPO policy per ``Task``
  with the core PPO, saved as msgpack with the task(s) in the metadata (multi-task PPO in ``multitask``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from decisions.core.agents import ppo
from decisions.core.agents.common import ProgressFn, TrainResult
from decisions.core.agents.onpolicy import ActorCriticPolicy
from decisions.core.agents.onpolicy.io import read_policy
from decisions.errors import InputError
from decisions.telecom.comp.policies.presets import EXPERT_STEPS
from decisions.telecom.comp.policies.rollouts import (
    EXPERT_ENV,
    OBS_FEATURES,
    TaskPolicy,
    seed_key,
    task_policy,
)
from decisions.telecom.comp.policies.warm_start import warm_start_params
from decisions.telecom.comp.sim.catalog import Task

__all__ = [
    "EXPERT_CONFIG",
    "budget_config",
    "expert_config",
    "expert_policy",
    "fit_budget",
    "load_expert",
    "read_expert",
    "save_expert",
    "train_expert",
]

PyTree = Any

EXPERT_FORMAT = "decisions.telecom.comp.expert/1"
"""The ``comp_format`` entry of a saved expert's description (what an actor-critic policy file holds
besides the policy, and its format version: never changes with the code's layout)."""

EXPERT_CONFIG = ppo.PPOConfig(
    num_envs=32,
    rollout_steps=100,
    total_env_steps=EXPERT_STEPS,
    gamma=0.5,
    gae_lambda=0.9,
    learning_rate=1e-3,
    entropy_coef=0.001,
    hidden=(64, 64),
    epochs=4,
    minibatches=4,
    log_every=5,
    unit_width=OBS_FEATURES,
)
"""Default PPO for ``CompEnv`` (override with ``expert_config(**changes)``): set networks over the users
(``unit_width``), a short horizon (serving-set actions make a step's reward depend on its own action),
one whole episode per environment per iteration."""


def expert_config(**changes: Any) -> ppo.PPOConfig:
    """``EXPERT_CONFIG`` with ``changes`` (e.g. ``total_env_steps``), validated."""
    return replace(EXPERT_CONFIG, **changes)


def budget_config(total_env_steps: int | None, config: ppo.PPOConfig = EXPERT_CONFIG) -> ppo.PPOConfig:
    """The PPO configuration ``train_expert`` and ``train_multitask`` run with for a budget."""
    return fit_budget(config, total_env_steps)


def fit_budget(config: ppo.PPOConfig, total_env_steps: int | None) -> ppo.PPOConfig:
    """``config`` with ``total_env_steps`` (at least one iteration's worth)."""
    if total_env_steps is None:
        return config
    if int(total_env_steps) != total_env_steps or total_env_steps < 1:
        raise ValueError(f"total_env_steps: must be a positive integer, got {total_env_steps!r}")
    return replace(config, total_env_steps=max(int(total_env_steps), config.batch_size))


def train_expert(
    task: Task,
    total_env_steps: int | None = None,
    seed: int = 0,
    progress: ProgressFn | None = None,
    *,
    config: ppo.PPOConfig = EXPERT_CONFIG,
    checkpoint: str | os.PathLike[str] | None = None,
    warm_start: str = "none",
) -> TrainResult:
    """Train a PPO expert on one task, in ``EXPERT_ENV`` (link flags hidden).

    Returns:
        The core ``TrainResult`` (deterministic policy); ``task_policy(result, observe_links=False)``
        runs it on ``ENV``'s observations.
    """
    config = fit_budget(config, total_env_steps)
    initial = warm_start_params([task], warm_start, EXPERT_ENV, config, seed, task_features=False)
    return ppo.train(
        EXPERT_ENV, config, key=seed_key(seed), params=task.params(), progress=progress, checkpoint=checkpoint,
        initial=initial,
    )


def save_expert(
    path: str | os.PathLike[str],
    result: TrainResult,
    task: Task | Sequence[Task],
    observe_links: bool | None = None,
) -> None:
    """Write a PPO expert (msgpack via ``ppo.save_policy``) with its task(s) in the metadata.
    """
    tasks = [task] if isinstance(task, Task) else list(task)
    if not tasks or not all(isinstance(t, Task) for t in tasks):
        raise ValueError("task: must be a Task or a non-empty sequence of Tasks")
    if observe_links is None:
        observe_links = not isinstance(task, Task)
    extra = {
        "comp_format": EXPERT_FORMAT,
        "observe_links": bool(observe_links),
        "multitask": not isinstance(task, Task),
        "tasks": [t.to_dict() for t in tasks],
        "env_steps": int(result.env_steps),
    }
    ppo.save_policy(path, result, extra=extra)


def read_expert(
    path: str | os.PathLike[str],
) -> tuple[ActorCriticPolicy, PyTree, Task | tuple[Task, ...], dict[str, Any]]:
    """``(policy, params, task, description)`` of a file written by ``save_expert`` (see ``load_expert``).

    Raises:
        FileNotFoundError: the file does not exist.
        InputError: (``expert``, a ``ValueError``) the file is not a saved CoMP expert.
    """
    policy, params, description = read_policy(path, field="expert")
    found = description.get("comp_format")
    if found != EXPERT_FORMAT:
        raise InputError("expert", f"{path}: not a saved CoMP expert (comp_format {found!r}, not {EXPERT_FORMAT!r})")
    tasks = tuple(Task.from_dict(d) for d in description["tasks"])
    return policy, params, (tasks if description.get("multitask") else tasks[0]), description


def load_expert(path: str | os.PathLike[str]) -> tuple[ActorCriticPolicy, PyTree, Task | tuple[Task, ...]]:
    """Read a file written by ``save_expert``.

    Returns:
        ``(policy, params, task)``: ``task`` is the ``Task`` of a single-task expert or the
        tuple of tasks of a multi-task one. ``task_policy((policy, params))`` gives a ``TaskPolicy``.

    Raises:
        InputError: (a ``ValueError``) the file is not a saved CoMP expert.
    """
    policy, params, task, _ = read_expert(path)
    return policy, params, task


def expert_policy(path: str | os.PathLike[str]) -> TaskPolicy:
    """The ``TaskPolicy`` of a file written by ``save_expert``, hiding the link flags when it was
    trained without them (files written before that choice was recorded saw them)."""
    policy, params, _, description = read_expert(path)
    return task_policy((policy, params), observe_links=bool(description.get("observe_links", True)))
