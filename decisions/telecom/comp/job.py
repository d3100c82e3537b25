"""The CoMP batch job: generate data, train PromptDT and the baselines, evaluate (``study``).

``prepare(spec, base_dir)`` validates a job spec (TOML tables ``[job]``, ``[study]``,
``[tasks]``) into a ``CompJob``; ``execute(job)`` runs the chosen stages inside a recorded
run. The stages share one folder (``study.folder``, relative to the spec file), so
``stage = ["data"]``, ``["train"]`` and ``["evaluate"]`` can be three runs, or one run does
all three. The evaluate stage records the headline figures as run metrics and writes the
evaluation table and a chart; the optional ``"conditioning"`` stage checks how the (Prompt-)DTs
respond to a higher target return (``study.conditioning_check``) and writes its table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator

from decisions.core.progress import Progress, silent
from decisions.errors import InputError
from decisions.jobs.record import execute_recorded, save_tables
from decisions.jobs.validate import spec_data, validate_job
from decisions.telecom.comp.promptdt import SIZES
from decisions.telecom.comp.study import StudyBudget, dt_model_paths, run_study
from decisions.telecom.comp.tasks import TRAINING_TASKS, UNSEEN_TASKS, Task, task_by_name

KIND = "comp"
_STRICT = ConfigDict(extra="forbid", frozen=True)
Stage = Literal["data", "train", "evaluate", "conditioning"]
_DEFAULT = StudyBudget()


class StudySettings(BaseModel):
    """Where the study lives, which stages run and with what budget."""

    model_config = _STRICT

    folder: str = Field("comp_study", min_length=1, description="Folder of experts, data and models (relative to the spec file).")
    stages: tuple[Stage, ...] = Field(("data", "train", "evaluate"), min_length=1)
    expert_steps: int = Field(_DEFAULT.expert_steps, ge=3_200, le=10**9)
    multitask_steps: int = Field(_DEFAULT.multitask_steps, ge=3_200, le=10**10)
    episodes_per_behaviour: int = Field(_DEFAULT.episodes_per_behaviour, ge=0, le=10_000)
    expert_episodes: int = Field(_DEFAULT.expert_episodes, ge=1, le=100_000)
    demo_episodes: int = Field(_DEFAULT.demo_episodes, ge=1, le=1_000)
    demonstrator: Literal["best", "expert", "planner"] = Field(
        _DEFAULT.demonstrator,
        description="Per task: the better of expert and multi-task PPO, always the expert, or the greedy planner.",
    )
    select_episodes: int = Field(_DEFAULT.select_episodes, ge=2, le=10_000)
    dt_steps: int = Field(_DEFAULT.dt_steps, ge=1, le=10**7)
    dt_batch: int = Field(_DEFAULT.dt_batch, ge=1, le=4_096)
    sizes: tuple[str, ...] = Field(_DEFAULT.sizes, min_length=1)
    eval_episodes: int = Field(_DEFAULT.eval_episodes, ge=2, le=10_000)
    context_len: int = Field(_DEFAULT.context_len, ge=1, le=100)
    dt_learning_rate: float = Field(_DEFAULT.dt_learning_rate, gt=0.0, le=1.0)
    user_layers: int = Field(_DEFAULT.user_layers, ge=0, le=16)
    user_ids: StrictBool = _DEFAULT.user_ids
    target_offsets: tuple[float, ...] = Field(
        _DEFAULT.target_offsets, min_length=1, max_length=32,
        description="Conditioning stage: offsets added to the target return (reward units per episode).",
    )

    @field_validator("target_offsets")
    @classmethod
    def _finite_offsets(cls, offsets: tuple[float, ...]) -> tuple[float, ...]:
        if not all(math.isfinite(o) for o in offsets):
            raise ValueError("every offset must be a finite number")
        return offsets

    @field_validator("sizes")
    @classmethod
    def _known_sizes(cls, sizes: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [s for s in sizes if s not in SIZES]
        if unknown:
            raise ValueError(f"unknown size {unknown[0]!r} (known: {', '.join(SIZES)})")
        return sizes

    def budget(self) -> StudyBudget:
        """The ``StudyBudget`` of these settings."""
        return StudyBudget(**self.model_dump(exclude={"folder", "stages"}))


class TaskSettings(BaseModel):
    """Which tasks (by name, see ``tasks.TRAINING_TASKS`` / ``UNSEEN_TASKS``)."""

    model_config = _STRICT

    train: tuple[str, ...] = Field(tuple(t.name for t in TRAINING_TASKS), min_length=1)
    unseen: tuple[str, ...] = Field(tuple(t.name for t in UNSEEN_TASKS))

    @field_validator("train", "unseen")
    @classmethod
    def _known_tasks(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            task_by_name(name)  # ValueError "name: no task called ..."
        return names

    def resolve(self) -> tuple[list[Task], list[Task]]:
        """The training and unseen ``Task`` objects."""
        return [task_by_name(n) for n in self.train], [task_by_name(n) for n in self.unseen]


class CompJob(BaseModel):
    """A validated CoMP study job."""

    model_config = _STRICT

    name: str = Field("comp", min_length=1, max_length=200)
    seed: int = Field(0, ge=0)
    output_dir: str | None = Field(None, description="Where tables and the chart go (default: next to the store).")
    study: StudySettings = Field(default_factory=StudySettings)
    tasks: TaskSettings = Field(default_factory=TaskSettings)

    def config(self) -> dict[str, Any]:
        """JSON-ready configuration for the run store."""
        return self.model_dump(mode="json")


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> CompJob:
    """Validate a job spec into a ``CompJob``; a relative ``study.folder`` is taken from ``base_dir``.

    Raises:
        InputError: naming the first bad field (also an unseen task that is a training task,
            or a later stage whose inputs are missing from the folder).
    """
    sections = ("study", "tasks")
    job = validate_job(CompJob, spec_data(spec, sections), sections)
    folder = Path(job.study.folder)
    if not folder.is_absolute() and base_dir is not None:
        folder = base_dir / folder
    job = job.model_copy(update={"study": job.study.model_copy(update={"folder": str(folder)})})
    overlap = sorted(set(job.tasks.train) & set(job.tasks.unseen))
    if overlap:
        raise InputError("tasks.unseen", f"{overlap[0]} is also a training task")
    train, unseen = job.tasks.resolve()
    stages = job.study.stages
    if "train" in stages and "data" not in stages:
        for task in train:
            if not (folder / "data" / f"{task.name}.npz").exists():
                raise InputError("study.stages", f"no data for {task.name} in {folder}: run the data stage first")
    if "evaluate" in stages and "train" not in stages:
        if not (folder / "models" / "multitask_ppo.msgpack").exists():
            raise InputError("study.stages", f"no trained models in {folder}: run the train stage first")
        if "data" not in stages:
            _require_demos(folder, [*train, *unseen])
    if "conditioning" in stages and "train" not in stages:
        if not dt_model_paths(folder):
            raise InputError("study.stages", f"no (Prompt-)DT models in {folder}: run the train stage first")
        if "data" not in stages:
            _require_demos(folder, train)
    return job


def _require_demos(folder: Path, tasks: list[Task]) -> None:
    """Raise an ``InputError`` on ``study.stages`` naming the first task without demonstrations."""
    for task in tasks:
        if not (folder / "demos" / f"{task.name}.npz").exists():
            raise InputError("study.stages", f"no demonstrations of {task.name} in {folder}: run the data stage first")


@dataclass
class CompReport:
    """The result of a CoMP run: the evaluation and conditioning tables (when those stages ran)
    and the metrics."""

    metrics: dict[str, float]
    table: pd.DataFrame | None = None
    folder: Path = field(default_factory=Path)
    conditioning: pd.DataFrame | None = None

    def conditioning_references(self) -> dict[str, float]:
        """Mean training-task returns of the expert, multi-task PPO and max-SNR from the folder's
        ``evaluation.csv`` on the conditioning table's tasks (empty without one)."""
        path = self.folder / "evaluation.csv"
        if self.conditioning is None or not path.is_file():
            return {}
        table = pd.read_csv(path)
        rows = table[table.task.isin(set(self.conditioning.task))]
        means = rows.groupby("policy")["return_mean"].mean()
        return {name: float(means[name]) for name in ("expert", "multitask_ppo", "max_snr") if name in means.index}

    def save(self, directory: str | Path) -> dict[str, Path]:
        """Write the evaluation table (CSV) with its chart (PNG) and the conditioning table (CSV)."""
        tables = {"evaluation": self.table, "conditioning": self.conditioning}
        written = save_tables(directory, {name: t for name, t in tables.items() if t is not None})
        if self.table is not None:
            written["chart"] = save_chart(self.table, Path(directory) / "comp.png")
        if self.conditioning is not None:
            written["conditioning_chart"] = save_conditioning_chart(
                self.conditioning, Path(directory) / "conditioning.png", self.conditioning_references()
            )
        return written


def save_chart(table: pd.DataFrame, path: Path) -> Path:
    """Bars of mean normalised QoE per policy, training tasks beside unseen tasks."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pivot = table.pivot_table(index="policy", columns="split", values="normalised_qoe", aggfunc="mean")
    pivot = pivot.sort_values(pivot.columns[0])
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    pivot.plot.barh(ax=ax)
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("normalised QoE (0 random, 1 best of expert and heuristics)")
    ax.set_title("CoMP cell selection: PromptDT against baselines")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def save_conditioning_chart(table: pd.DataFrame, path: Path, references: Mapping[str, float] | None = None) -> Path:
    """Mean return over the training tasks against the target-return offset, a line per (Prompt-)DT,
    with ``references`` (policy name -> mean return, e.g. the expert's) as dashed lines for scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    means = table.pivot_table(index="offset", columns="policy", values="return_mean", aggfunc="mean")
    fig, ax = plt.subplots(figsize=(7, 4.2), constrained_layout=True)
    means.plot(ax=ax, marker="o")
    for i, (name, value) in enumerate((references or {}).items()):
        ax.axhline(value, color=f"C{len(means.columns) + i}", ls="--", lw=1.0, label=f"{name} (evaluation)")
    ax.legend(fontsize=8)
    ax.set_xlabel("offset added to the best demonstration's return (reward units per episode)")
    ax.set_ylabel("mean episode return, training tasks")
    ax.set_title("Does asking for more return change what the (Prompt-)DTs do?")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def run_job(job: CompJob, *, progress: Progress = silent) -> CompReport:
    """Run the job's stages; the report carries the evaluation table and the figures."""
    train, unseen = job.tasks.resolve()
    folder = Path(job.study.folder)
    result = run_study(folder, job.study.budget(), job.study.stages, train, unseen, seed=job.seed, progress=progress)
    return CompReport(metrics=result.figures, table=result.table, folder=folder, conditioning=result.conditioning)


def execute(job: CompJob, *, url: str | None = None, progress: Progress = silent, sweep_id: str | None = None) -> int:
    """Run a job inside a recorded run (metrics, evaluation table, chart).

    Returns:
        The run id. On an exception the run is recorded as failed and the exception re-raised.
    """
    return execute_recorded(
        KIND, job.name, job.config(), lambda: run_job(job, progress=progress),
        url=url, sweep_id=sweep_id, output_dir=job.output_dir,
    )
