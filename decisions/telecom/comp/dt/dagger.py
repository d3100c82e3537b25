"""DAgger for the (Prompt-)DTs: the greedy planner labels the states the model itself visits.

``dagger_dataset``: a model's greedy episodes on a task, with the planner's action, reward and QoE in
every visited state (behaviour ``"dagger"``); ``concatenate``: the union of one task's datasets;
``dagger_rounds``: the rounds over all training tasks, fine-tuning the model on the union after each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import jax
import numpy as np
from jax import Array

from decisions.telecom.comp.dt.datasets import EPISODE_ARRAYS, OfflineDataset, task_dataset
from decisions.telecom.comp.dt.promptdt import PromptDTConfig
from decisions.telecom.comp.dt.saved import SavedDT
from decisions.telecom.comp.sim.catalog import Task

__all__ = ["DAGGER_SEED_OFFSET", "concatenate", "dagger_dataset", "dagger_rounds"]

DAGGER_SEED_OFFSET = 70_000
"""Added to the study seed (and the round) for the episodes a DAgger round plays."""


def dagger_dataset(
    model: SavedDT, task: Task, demos: OfflineDataset, episodes: int, seed: int, labeler: Callable[..., Array] | None = None
) -> OfflineDataset:
    """``episodes`` greedy episodes of ``model`` on ``task``, labelled by the planner.

    Returns:
        An ``OfflineDataset`` of behaviour ``"dagger"``: the observations the model acted on, the
        labeler's canonical actions there, and the reward and QoE those actions earn.
    """
    from decisions.telecom.comp.policies.planner import GreedyPlanner

    if int(episodes) != episodes or episodes < 1:
        raise ValueError(f"dagger_episodes: must be a positive integer, got {episodes!r}")
    keys = jax.random.split(jax.random.PRNGKey(seed), int(episodes))
    out = model.episodes(task, demos, keys, labeler=labeler or GreedyPlanner())
    # an advantage-conditioned model's labels carry the baseline's reward in the same states
    base = None if out.baseline_rewards is None else np.asarray(out.baseline_rewards)
    return task_dataset(task, np.asarray(out.obs), np.asarray(out.label_actions), np.asarray(out.label_rewards),
                        np.asarray(out.label_qoe), ["dagger"] * int(episodes), base)  # fmt: skip


def concatenate(datasets: Sequence[OfflineDataset]) -> OfflineDataset:
    """One task's datasets as one (episodes in order).

    Raises:
        ValueError: no datasets, or datasets of different tasks.
    """
    if not datasets:
        raise ValueError("datasets: need at least one")
    first = datasets[0]
    if any(d.task != first.task for d in datasets):
        raise ValueError("datasets: must all come from the same task")
    joined = {}
    for name in EPISODE_ARRAYS:  # an optional array is kept only when every dataset has it
        parts = [getattr(d, name) for d in datasets]
        joined[name] = np.concatenate(parts) if all(part is not None for part in parts) else None
    return replace(first, **joined)


def dagger_rounds(
    params: Any,
    config: PromptDTConfig,
    use_prompt: bool,
    data: Sequence[OfflineDataset],
    demos: Sequence[OfflineDataset],
    train: Callable[[list[OfflineDataset], Any, int], Any],
    *,
    rounds: int,
    episodes: int,
    seed: int,
    labeler: Callable[..., Array] | None = None,
    conditioned_on: str = "return",
) -> tuple[Any, list[OfflineDataset]]:
    """``rounds`` DAgger rounds: label the model's episodes on every task, add them, fine-tune.

    Returns:
        ``(params, data)``: the fine-tuned parameters and the aggregated data.
    """
    data = list(data)
    for r in range(rounds):
        model = SavedDT(params, config, use_prompt, conditioned_on)
        data = [
            concatenate([d, dagger_dataset(model, d.task, demo, episodes, seed + DAGGER_SEED_OFFSET + r, labeler)])
            for d, demo in zip(data, demos, strict=True)
        ]
        params = train(data, params, r)
    return params, data
