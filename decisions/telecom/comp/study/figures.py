"""A finished study's figures for ``decisions bench comp``: its evaluation and headline figures, and the
joint-transmission study's with its DAgger stages."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.telecom.comp.sim.catalog import (
    JOINT_TRAINING_TASKS,
    JOINT_UNSEEN_TASKS,
    TRAINING_TASKS,
    UNSEEN_TASKS,
    Task,
)
from decisions.telecom.comp.study import dagger_ablation
from decisions.telecom.comp.study.budget import StudyBudget
from decisions.telecom.comp.study.folder import joint_study, shipped_study
from decisions.telecom.comp.study.scoring import evaluate, headline

__all__ = ["evaluated_study", "found", "joint_study_figures", "study_figures", "study_finished"]

def study_figures(
    episodes: int = 32,
    progress: Progress | None = None,
    *,
    folder: Path | None = None,
    tasks: tuple[Sequence[Task], Sequence[Task]] = (TRAINING_TASKS, UNSEEN_TASKS),
    prefix: str = "",
) -> dict[str, float]:
    """A finished study's evaluation on its training and unseen tasks and its headline figures, names
    prefixed with ``prefix`` (by default the shipped study)."""
    figures, _ = evaluated_study(episodes, progress, folder=folder, tasks=tasks)
    return {f"{prefix}{name}": value for name, value in figures.items()}


def evaluated_study(
    episodes: int,
    progress: Progress | None = None,
    *,
    folder: Path | None = None,
    tasks: tuple[Sequence[Task], Sequence[Task]] = (TRAINING_TASKS, UNSEEN_TASKS),
) -> tuple[dict[str, float], pd.DataFrame]:
    """``study_figures`` unprefixed, with the evaluation table they come from."""
    start = time.perf_counter()
    budget = StudyBudget(eval_episodes=episodes)
    table = evaluate(folder or shipped_study(), *tasks, budget, progress or (lambda *_: None))
    figures: dict[str, float] = {"study_evaluate_seconds": time.perf_counter() - start}
    sizes = tuple(s for s in budget.sizes if f"promptdt-{s}" in set(table.policy))
    figures.update(headline(table, sizes))
    return figures, table


def study_finished(folder: Path) -> bool:
    """Whether ``folder`` holds a trained study (its multi-task PPO and at least one PromptDT)."""
    models = folder / "models"
    return (models / "multitask_ppo.msgpack").exists() and any(models.glob("promptdt-*.msgpack"))




def found(lookup: Callable[[], Path]) -> Path | None:
    """The folder ``lookup`` returns, or None when the shipped data are missing."""
    try:
        return lookup()
    except FileNotFoundError:
        return None


def joint_study_figures(episodes: int, progress: Progress | None = None) -> dict[str, float]:
    """The shipped joint-transmission study's figures, prefixed ``joint_``, with its DAgger stages' when it
    kept them (none when it is missing or not trained)."""
    folder = found(joint_study)
    if not episodes or folder is None or not study_finished(folder):
        return {}
    joint, evaluation = evaluated_study(episodes, progress, folder=folder,
                                        tasks=(JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS))  # fmt: skip
    if dagger_ablation.has_stages(folder):
        table = dagger_ablation.score_stages(folder, JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS, episodes,
                                             progress or silent, evaluation)  # fmt: skip
        joint.update(dagger_ablation.stage_figures(table))
    return {f"joint_{k}": v for k, v in joint.items()}
