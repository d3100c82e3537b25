"""``StudyContext``: what every stage of a CoMP study reads (light: no JAX)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from decisions.core.progress import Progress, silent
from decisions.telecom.comp.sim.catalog import TRAINING_TASKS, UNSEEN_TASKS, Task
from decisions.telecom.comp.study.budget import StudyBudget

if TYPE_CHECKING:
    from decisions.kit.checkpoints import CheckpointFor


@dataclass(frozen=True)
class StudyContext:
    """A study's folder, budget, tasks, seed, progress callback and (inside a recorded run) checkpoints.

    With ``checkpoints`` (``decisions.kit.checkpoints.checkpoint_file``) every training saves its state
    after every chunk and resumes from it, so a stopped run redoes at most one chunk.
    """

    folder: Path
    budget: StudyBudget = StudyBudget()
    train_tasks: tuple[Task, ...] = TRAINING_TASKS
    unseen_tasks: tuple[Task, ...] = UNSEEN_TASKS
    seed: int = 0
    progress: Progress = silent
    checkpoints: CheckpointFor | None = None
    own_tasks: tuple[Task, ...] = ()
    """Networks of one's own (``sim.catalog.OwnTask``): scored apart from the study's tasks."""

    def __post_init__(self) -> None:
        """Hold the folder as a ``Path`` and the tasks as tuples."""
        object.__setattr__(self, "folder", Path(self.folder))
        object.__setattr__(self, "train_tasks", tuple(self.train_tasks))
        object.__setattr__(self, "unseen_tasks", tuple(self.unseen_tasks))
        object.__setattr__(self, "own_tasks", tuple(self.own_tasks))

    @property
    def tasks(self) -> tuple[Task, ...]:
        """The training tasks, then the unseen ones, then one's own."""
        return (*self.train_tasks, *self.unseen_tasks, *self.own_tasks)
