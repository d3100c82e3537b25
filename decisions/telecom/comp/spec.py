"""The CoMP job's spec: its validated model and ``prepare``, on light modules only (no JAX).

``prepare(spec, base_dir)`` validates a job spec (TOML tables ``[job]``, ``[study]``,
``[tasks]``) into a ``CompJob``: the budget against ``budget.StudyBudget``'s choices, the task
names against ``catalog``, and that a later stage's inputs are in the folder, so a bad spec is
refused before the study's modules (JAX) load; ``job.run_job`` runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, field_validator

from decisions.core.numbers import Float32
from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.kit.base import JobBase, Section, spec_path
from decisions.kit.shipped import shipped_data
from decisions.telecom.comp.dt.sizes import SIZES
from decisions.telecom.comp.own_network import OwnNetwork, read_files
from decisions.telecom.comp.sim.catalog import TRAINING_TASKS, UNSEEN_TASKS, Task, task_by_name
from decisions.telecom.comp.study.budget import StudyBudget
from decisions.telecom.comp.study.folder import dt_model_paths, task_file, writable

KIND = "comp"
Stage = Literal["data", "train", "evaluate", "conditioning"]
_DEFAULT = StudyBudget()


class StudySettings(Settings):
    """Where the study lives, which stages run and with what budget."""

    folder: str = Field("comp_study", min_length=1, description=(
        "Folder of experts, data and models (relative to the spec file; 'shipped:comp/trained' is the shipped data's)."))
    stages: tuple[Stage, ...] = Field(
        ("data", "train", "evaluate"), min_length=1,
        description=(
            "Which stages this job runs. The spec defines the whole study: settings of stages not run"
            " are accepted and kept for later stage runs (the same spec with another stages list)."
        ),
    )
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
    warm_start: Literal["none", "max_snr", "planner"] = Field(
        _DEFAULT.warm_start,
        description="What the experts and the multi-task PPO start from: scratch, or a cloned demonstrator.",
    )
    dt_steps: int = Field(_DEFAULT.dt_steps, ge=1, le=10**7)
    conditioning: Literal["return", "advantage"] = Field(
        _DEFAULT.conditioning, description="(Prompt-)DT conditioning: return-to-go or advantage over max-SNR.",
    )
    dagger_rounds: int = Field(_DEFAULT.dagger_rounds, ge=0, le=100, description="DAgger rounds (demonstrator 'planner').")
    dagger_episodes: int = Field(_DEFAULT.dagger_episodes, ge=1, le=10_000)
    dagger_steps: int = Field(_DEFAULT.dagger_steps, ge=1, le=10**7)
    dt_batch: int = Field(_DEFAULT.dt_batch, ge=1, le=4_096)
    sizes: tuple[str, ...] = Field(_DEFAULT.sizes, min_length=1)
    eval_episodes: int = Field(_DEFAULT.eval_episodes, ge=2, le=10_000)
    context_len: int = Field(_DEFAULT.context_len, ge=1, le=100)
    dt_learning_rate: float = Field(_DEFAULT.dt_learning_rate, gt=0.0, le=1.0)
    user_layers: int = Field(_DEFAULT.user_layers, ge=0, le=16)
    user_ids: StrictBool = _DEFAULT.user_ids
    target_offsets: tuple[Annotated[float, Float32(1e6)], ...] = Field(
        _DEFAULT.target_offsets, min_length=1, max_length=32,
        description="Conditioning stage: offsets added to the target return (reward units per episode).",
    )

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


class TaskSettings(Settings):
    """Which tasks (by name, see ``catalog.TRAINING_TASKS`` / ``UNSEEN_TASKS``)."""

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


class CompJob(JobBase, name="comp"):
    """A validated CoMP study job; ``network``, a network of one's own, is evaluated beside its tasks."""

    SPEC_PATHS = ("network.cells_file", "network.users_file")

    study: Section[StudySettings]
    tasks: Section[TaskSettings]
    network: Section[OwnNetwork]

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """Read the ``network`` table's files into its cells and users (``own_network.read_files``), so
        the job carries the network itself.

        Raises:
            InputError: the first bad cell of a file (naming the file, row and column).
        """
        del base_dir
        read_files(data)

    def own_tasks(self) -> list[Task]:
        """The network of one's own as a task (``sim.catalog.OwnTask``), or none."""
        return [self.network.task()] if self.network.cells else []


JOB_MODEL = CompJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> CompJob:
    """Validate a job spec into a ``CompJob``; a relative ``study.folder`` is taken from ``base_dir``, a
    ``shipped:<path>`` one from the shipped data (``decisions.kit.shipped``).

    Raises:
        InputError: naming the first bad field (also a folder that is a file, DAgger rounds without the
            planner as demonstrator, an unseen task that is a training task, or a later stage whose
            inputs are missing from the folder).
    """
    job = CompJob.from_spec(spec, base_dir)
    folder = _study_folder(job.study.folder, base_dir)
    if folder.exists() and not folder.is_dir():
        raise InputError("study.folder", f"{folder} is a file, not a folder")
    job = job.model_copy(update={"study": job.study.model_copy(update={"folder": str(folder)})})
    writable(folder, job.study.stages)  # a stage that would write into a shipped study is refused now
    try:
        job.study.budget()  # the checks across fields (DAgger needs the planner's demonstrations)
    except ValueError as err:
        field, _, problem = str(err).partition(": ")
        raise InputError(f"study.{field}", problem or str(err)) from None
    overlap = sorted(set(job.tasks.train) & set(job.tasks.unseen))
    if overlap:
        raise InputError("tasks.unseen", f"{overlap[0]} is also a training task")
    train, unseen = job.tasks.resolve()
    stages = job.study.stages
    if "train" in stages and "data" not in stages:
        for task in train:
            if not task_file(folder, "data", task, "npz").exists():
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


SHIPPED_PREFIX = "shipped:"
"""A ``study.folder`` starting with it names a folder of the shipped data (``shipped:comp/trained``)."""


def _study_folder(value: str, base_dir: Path | None) -> Path:
    """The study folder a spec names (``InputError`` on shipped data that are missing)."""
    if not value.startswith(SHIPPED_PREFIX):
        return spec_path(value, base_dir)
    try:
        return shipped_data(*Path(value.removeprefix(SHIPPED_PREFIX)).parts)
    except FileNotFoundError as err:
        raise InputError("study.folder", str(err)) from None


def _require_demos(folder: Path, tasks: list[Task]) -> None:
    """Raise an ``InputError`` on ``study.stages`` naming the first task without demonstrations."""
    for task in tasks:
        if not task_file(folder, "demos", task, "npz").exists():
            raise InputError("study.stages", f"no demonstrations of {task.name} in {folder}: run the data stage first")
