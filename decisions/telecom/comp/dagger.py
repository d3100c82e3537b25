"""DAgger for the CoMP (Prompt-)DTs: the planner labels the states the model itself visits.

A (Prompt-)DT trained on the planner's episodes sees only states the planner leads to; its own
mistakes lead elsewhere, where it has no label, and compound. In a DAgger round the current
model plays greedy episodes on every training task (prompted and conditioned as at evaluation),
the greedy planner (``planner.GreedyPlanner``, which reads the state) labels every state the
model visited with its own action and that action's reward, and the model is fine-tuned on the
union of the earlier data and these episodes (Ross, Gordon and Bagnell 2011; the wealth
planner's distillation does the same on the DP). ``StudyBudget.dagger_rounds`` sets the rounds.

- ``dagger_dataset``: one task's labelled episodes of a model, as an ``OfflineDataset``
  (behaviour ``"dagger"``): the model's observations, the planner's actions, rewards and QoE;
- ``concatenate``: the union of one task's datasets;
- ``dagger_rounds``: the rounds over all training tasks, fine-tuning the model after each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import jax
import numpy as np
from jax import Array

from decisions.telecom.comp.datasets import EPISODE_ARRAYS, OfflineDataset, task_dataset
from decisions.telecom.comp.promptdt import PromptDTConfig
from decisions.telecom.comp.scoring import SavedDT
from decisions.telecom.comp.tasks import Task

__all__ = ["DAGGER_SEED_OFFSET", "concatenate", "dagger_dataset", "dagger_rounds"]

DAGGER_SEED_OFFSET = 70_000
"""Added to the study seed (and the round) for the episodes a DAgger round plays."""


def dagger_dataset(
    model: SavedDT, task: Task, demos: OfflineDataset, episodes: int, seed: int, labeler: Callable[..., Array] | None = None
) -> OfflineDataset:
    """``episodes`` greedy episodes of ``model`` on ``task``, labelled by the planner.

    Args:
        model: the (Prompt-)DT, prompted and conditioned with ``demos`` as at evaluation.
        task: the task played.
        demos: the task's demonstrations (its prompts).
        episodes: episodes played.
        seed: their seed.
        labeler: the labelling policy function (default ``planner.GreedyPlanner()``).

    Returns:
        An ``OfflineDataset`` of behaviour ``"dagger"``: the observations the model acted on, the
        labeler's canonical actions there, and the reward and QoE those actions earn.
    """
    from decisions.telecom.comp.planner import GreedyPlanner

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

    Args:
        params: the trained model's parameters.
        config: its architecture.
        use_prompt: whether it reads a prompt.
        data: each training task's training data.
        demos: each training task's demonstrations (prompts), in the same order.
        train: ``train(datasets, params, round) -> params``, the fine-tuning of one round.
        rounds: DAgger rounds (0: none).
        episodes: labelled episodes per task and round.
        seed: the study seed (round ``r`` plays seed ``seed + DAGGER_SEED_OFFSET + r``).
        labeler: the labelling policy function (default ``planner.GreedyPlanner()``).
        conditioned_on: the model's conditioning (``SavedDT.conditioned_on``).

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
