"""Where a recorded job's trainers keep their checkpoints, and what a stopped run's checkpoints hold.

Inside ``run_checkpoints(run_folder)`` a trainer's file is ``<run_folder>/checkpoints/<name>.msgpack``,
noted in that folder's ``index.json`` in start order; outside it there is none.
"""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from decisions.kit.context import set_within

SUBFOLDER = "checkpoints"
INDEX = "index.json"

_FOLDER: ContextVar[Path | None] = ContextVar("decisions_run_checkpoints", default=None)


class CheckpointFor(Protocol):
    """``checkpoint_file``'s signature: what a domain passes down to the code that trains."""

    def __call__(self, name: str, *, iterations: int, every: int, steps_per_iteration: int = 1) -> Path | None: ...


def run_checkpoints(run_folder: str | os.PathLike[str]) -> AbstractContextManager[Path]:
    """Let the code in this block checkpoint into ``run_folder/checkpoints`` (yielded; created on first use)."""
    return set_within(_FOLDER, Path(run_folder) / SUBFOLDER)


def checkpoint_folder() -> Path | None:
    """The checkpoint folder of the recorded run being executed, or None outside one."""
    return _FOLDER.get()


def checkpoint_file(name: str, *, iterations: int, every: int, steps_per_iteration: int = 1) -> Path | None:
    """The checkpoint file of trainer ``name`` of the running recorded job, or None outside one.

    Call it just before the trainer starts: it is noted once in the index, so the last noted is
    the one a stopped process was running. ``every`` is its chunk length in iterations.

    Raises:
        ValueError: ``name`` is not a plain file name.
    """
    folder = checkpoint_folder()
    if folder is None:
        return None
    if not name or Path(name).name != name or name.startswith("."):
        raise ValueError(f"checkpoint name must be a plain file name, got {name!r}")
    entries = read_index(folder)
    if all(entry["name"] != name for entry in entries):
        entry = {
            "name": name, "iterations": int(iterations), "every": int(every),
            "steps_per_iteration": int(steps_per_iteration), "started_at": datetime.now(UTC).isoformat(),
        }
        _write_json(folder / INDEX, [*entries, entry])
    return folder / f"{name}.msgpack"


def read_index(folder: Path) -> list[dict[str, Any]]:
    """The trainers noted in a checkpoint folder's index, in start order (empty when there is none)."""
    try:
        entries = json.loads((folder / INDEX).read_text())
    except (OSError, ValueError):
        return []
    return [e for e in entries if isinstance(e, dict) and "name" in e] if isinstance(entries, list) else []


def _write_json(path: Path, data: Any) -> None:
    """Write JSON atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle, indent=1)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class TrainerProgress:
    """How far one trainer of a stopped run got: iterations ``done`` and ``saved_at`` (0 and None without a checkpoint)."""

    name: str
    done: int
    iterations: int
    every: int
    steps_per_iteration: int
    saved_at: datetime | None

    @property
    def finished(self) -> bool:
        """Whether its checkpoint holds all its iterations."""
        return self.done >= self.iterations

    @property
    def redo(self) -> int:
        """Iterations computed after the checkpoint and redone: at most one chunk."""
        return 0 if self.finished else min(self.every, self.iterations - self.done)


@dataclass(frozen=True)
class ResumePoint:
    """What a stopped run's checkpoints hold, in steps (iterations x ``steps_per_iteration``).

    ``lost_seconds`` is the wall time from the current trainer's last checkpoint (or start) to
    the process's last sign of life; 0 when it had finished.
    """

    trainers: tuple[TrainerProgress, ...]
    lost_seconds: float

    @property
    def current(self) -> TrainerProgress | None:
        """The trainer running when the process stopped (the last started), or None."""
        return self.trainers[-1] if self.trainers else None

    @property
    def from_step(self) -> int:
        """The step the current trainer resumes from."""
        current = self.current
        return 0 if current is None else current.done * current.steps_per_iteration

    @property
    def kept_steps(self) -> int:
        """Steps of every trainer restored from the checkpoints (not trained again)."""
        return sum(t.done * t.steps_per_iteration for t in self.trainers)

    @property
    def lost_steps_max(self) -> int:
        """Steps redone past the current checkpoint: at most one chunk."""
        current = self.current
        return 0 if current is None else current.redo * current.steps_per_iteration

    def metrics(self, resumed_times: int) -> dict[str, float]:
        """The run metrics recording this resume (``resumed_times`` is its count, 1 for the first)."""
        return {
            "resumed_times": float(resumed_times),
            "resumed_from_step": float(self.from_step),
            "resumed_steps_kept": float(self.kept_steps),
            "resume_lost_steps_max": float(self.lost_steps_max),
            "resume_lost_seconds": self.lost_seconds,
        }

    def summary(self) -> str:
        """One line: where the run resumes and what is redone."""
        current = self.current
        if current is None:
            return "no trainer had saved a checkpoint: the job starts again from the beginning"
        where = (
            f"{current.name} from step {self.from_step:,} of {current.iterations * current.steps_per_iteration:,}"
        )
        kept = f"{len(self.trainers) - 1} earlier trainer(s) restored, " if len(self.trainers) > 1 else ""
        if current.finished:
            return f"{kept}{current.name} had finished: no training step is redone"
        return (
            f"{kept}{where}; at most {self.lost_steps_max:,} steps (one checkpoint interval, "
            f"{self.lost_seconds:.1f} s of work) are redone"
        )


def resume_point(folder: Path, stopped_at: datetime | None) -> ResumePoint:
    """Read a run's checkpoint folder; ``stopped_at`` is its process's last sign of life (aware UTC)."""
    from decisions.core.checkpoint import load_metadata  # light: msgpack, no compilation

    entries = read_index(folder)
    trainers = []
    for entry in entries:
        path = folder / f"{entry['name']}.msgpack"
        done, saved = 0, None
        if path.is_file():
            try:
                done = int(load_metadata(path).get("done", 0))
                saved = datetime.fromtimestamp(path.stat().st_mtime, UTC)
            except (OSError, ValueError, TypeError):
                done, saved = 0, None
        trainers.append(TrainerProgress(
            name=str(entry["name"]), done=done, iterations=int(entry.get("iterations", 0)),
            every=int(entry.get("every", 1)), steps_per_iteration=int(entry.get("steps_per_iteration", 1)),
            saved_at=saved,
        ))
    lost = 0.0
    if trainers and not trainers[-1].finished and stopped_at is not None:
        since = trainers[-1].saved_at or _started(entries[-1])
        if since is not None:
            lost = max((stopped_at - since).total_seconds(), 0.0)
    return ResumePoint(tuple(trainers), lost)


def _started(entry: dict[str, Any]) -> datetime | None:
    """When an index entry's trainer started."""
    try:
        return datetime.fromisoformat(str(entry.get("started_at")))
    except ValueError:
        return None
