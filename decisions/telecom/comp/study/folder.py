"""Where a CoMP study folder keeps the files its stages write and read (light: no JAX).

The job's spec (``spec``) checks that a later stage's inputs exist before the study's modules
load; ``scoring`` and ``stages`` read and write the same paths. The shipped studies are found through
``decisions.kit.shipped``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from decisions.errors import InputError
from decisions.kit.shipped import is_shipped, shipped_data
from decisions.telecom.comp.sim.catalog import Task


def shipped_study() -> Path:
    """The measured study shipped as data (experts, demos, models, ``evaluation.csv``; no training data),
    read by ``decisions bench comp`` and the app (raises ``FileNotFoundError`` when the shipped data are missing)."""
    return shipped_data("comp", "trained")


def joint_study() -> Path:
    """The shipped joint-transmission study's folder (raises ``FileNotFoundError`` when missing)."""
    return shipped_data("comp", "trained_joint")


def writable(folder: Path, stages: Sequence[str]) -> bool:
    """Whether the study may write into ``folder``: False for a shipped study (a read-only input).

    Raises:
        InputError: (``study.stages``) a stage that writes into the folder (data, train) on a shipped study.
    """
    if not is_shipped(folder):
        return True
    writers = [stage for stage in stages if stage in ("data", "train")]
    if writers:
        raise InputError("study.stages", f"{', '.join(writers)} would write into the shipped study {folder} "
                         "(read-only): name a study folder of your own")
    return False


def task_file(folder: Path, kind: str, task: Task, suffix: str) -> Path:
    """The file of ``task`` in the ``kind`` subfolder (``experts``, ``data``, ``demos``) of a study folder."""
    return folder / kind / f"{task.name}.{suffix}"


def evaluation_table(folder: Path) -> Path:
    """The evaluate stage's table of a study folder (``scoring.evaluate``: every policy on every task)."""
    return folder / "evaluation.csv"


def dt_model_paths(folder: Path) -> list[Path]:
    """The (Prompt-)DT checkpoints of a study folder: the PromptDT sizes, then the plain DT."""
    models = folder / "models"
    return sorted(models.glob("promptdt-*.msgpack")) + sorted(models.glob("dt.msgpack"))
