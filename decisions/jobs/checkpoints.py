"""Where a recorded job's trainers keep their checkpoints, so that a stopped run can be resumed.

``execute_recorded`` runs a job inside ``run_checkpoints(folder)`` (the run's own folder,
``run-<id>``). While it runs, ``checkpoint_file(name, ...)`` gives a domain job the file of one
trainer's checkpoint, ``run-<id>/checkpoints/<name>.msgpack``, and notes the trainer in that
folder's ``index.json`` (in the order the trainers start); outside a recorded run (a bench, a
direct ``run_job`` call) it is None and nothing is written. The trainers save after every chunk
(``core.agents.common.run_chunked``, ...), so a job stopped by ``kill -9`` and resumed
(``decisions runs resume``) redoes at most one chunk.

``resume_point(folder, stopped_at)`` reads what a stopped run's checkpoints hold: how far each
trainer got, which one was running when the process stopped and how much of its work is redone.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from decisions.store.records import RunRecord

SUBFOLDER = "checkpoints"
"""The folder of a run's checkpoints, inside the run's folder."""
INDEX = "index.json"
"""The list of the run's trainers (name, iterations, chunk length, steps per iteration), in start order."""

_FOLDER: ContextVar[Path | None] = ContextVar("decisions_run_checkpoints", default=None)


class CheckpointFor(Protocol):
    """``checkpoint_file``'s signature: what a domain passes down to the code that trains."""

    def __call__(self, name: str, *, iterations: int, every: int, steps_per_iteration: int = 1) -> Path | None: ...


@contextmanager
def run_checkpoints(run_folder: str | os.PathLike[str]) -> Iterator[Path]:
    """Let the code run in this block checkpoint its trainers into ``run_folder/checkpoints``.

    Yields:
        The checkpoint folder (created on the first checkpoint).
    """
    folder = Path(run_folder) / SUBFOLDER
    token = _FOLDER.set(folder)
    try:
        yield folder
    finally:
        _FOLDER.reset(token)


def checkpoint_folder() -> Path | None:
    """The checkpoint folder of the recorded run being executed, or None outside one."""
    return _FOLDER.get()


def checkpoint_file(name: str, *, iterations: int, every: int, steps_per_iteration: int = 1) -> Path | None:
    """The checkpoint file of one trainer of the running recorded job (None outside a recorded run).

    Call it just before the trainer starts: the trainer is noted in the folder's index (once), so
    the last trainer noted is the one a stopped process was running.

    Args:
        name: the trainer, unique in the job (``ppo-seed0``, ``expert-<task>``); a file name stem.
        iterations: the trainer's iterations (the unit its checkpoint counts, ``done``).
        every: iterations between two checkpoints (its chunk length).
        steps_per_iteration: steps one iteration stands for (environment steps; 1 for gradient steps).

    Returns:
        ``<run folder>/checkpoints/<name>.msgpack``, or None.
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
    """Write JSON atomically (a temporary file in the same folder, then ``os.replace``)."""
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
    """How far one trainer of a stopped run got, by its checkpoint."""

    name: str
    done: int
    """Iterations saved in its checkpoint (0 without one)."""
    iterations: int
    every: int
    steps_per_iteration: int
    saved_at: datetime | None
    """When its checkpoint was last written (None without one)."""

    @property
    def finished(self) -> bool:
        """Whether its checkpoint holds all its iterations."""
        return self.done >= self.iterations

    @property
    def redo(self) -> int:
        """Iterations the stopped process may have computed after the checkpoint: one chunk, none once finished."""
        return 0 if self.finished else min(self.every, self.iterations - self.done)


@dataclass(frozen=True)
class ResumePoint:
    """What a stopped run's checkpoints hold, in steps (iterations x ``steps_per_iteration``).

    ``current`` is the trainer the process was running when it stopped (the last one started),
    or None when no trainer had started.
    """

    trainers: tuple[TrainerProgress, ...]
    lost_seconds: float
    """Wall time between the current trainer's last checkpoint (or its start) and the stopped
    process's last sign of life: the work thrown away, to within one heartbeat; 0 when the
    current trainer had finished."""

    @property
    def current(self) -> TrainerProgress | None:
        """The trainer running when the process stopped."""
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
        """Steps the stopped process may have taken past the checkpoint and that are redone: at most one chunk."""
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
    """Read a stopped run's checkpoint folder.

    Args:
        folder: the run's checkpoint folder (``run-<id>/checkpoints``).
        stopped_at: the stopped process's last sign of life (its last heartbeat), aware UTC.

    Returns:
        Its trainers in start order, with their checkpoints' progress.
    """
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


def stopped_run_point(run_folder: Path, record: RunRecord) -> ResumePoint:
    """``resume_point`` of a stopped run's checkpoints (``run_folder/checkpoints``), its process's
    last sign of life taken from its record (finish time, else last heartbeat, else start)."""
    return resume_point(run_folder / SUBFOLDER, record.finished_at or record.heartbeat_at or record.started_at)


def _started(entry: dict[str, Any]) -> datetime | None:
    """When an index entry's trainer started."""
    try:
        return datetime.fromisoformat(str(entry.get("started_at")))
    except ValueError:
        return None
