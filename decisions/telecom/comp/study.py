"""The CoMP study: per-task experts -> offline data -> PromptDT and baselines -> one evaluation.

Every stage reads what the previous one wrote under one folder, so stages can run as
separate jobs (``decisions run`` with ``stage = "data" | "train" | "evaluate"``) or at once:

- ``experts/<task>.msgpack``: one PPO expert per training and unseen task (``train_experts``);
- ``models/multitask_ppo.msgpack``: the multi-task PPO baseline (``train_multitask_model``),
  trained before the data because it can be a task's demonstrator;
- ``data/<task>.npz``: each training task's offline trajectories of its demonstrator (the
  per-task expert; the multi-task PPO where it does better on the task,
  ``choose_demonstrator``; or the greedy planner of ``planner``), optionally with weaker
  behaviours (noisy expert, max-SNR, top-2, random, noisy max-SNR), and ``demos/<task>.npz``:
  a few fresh episodes of every task's demonstrator, training and unseen, the prompts at
  evaluation (for an unseen task its only data) (``generate_data``);
- ``models/``: ``promptdt-<size>.msgpack`` for each size and ``dt.msgpack`` (no prompt, the
  smallest size) (``train_dt_models``);
- ``evaluation.csv`` and (optional) ``conditioning.csv``: the tables of ``scoring``'s
  ``evaluate`` and ``conditioning_check`` (re-exported here, with ``headline``);
- ``StudyBudget`` (defined in ``budget``, light) says how much of each stage runs;
- ``ship_study``: copy a finished study into the package (``SHIPPED_STUDY``), without the
  training data and with only each task's best demonstration, the one the evaluation prompts with.

With ``checkpoints`` (``decisions.jobs.checkpoints.checkpoint_file``, given by the job inside a
recorded run) every PPO expert, the multi-task PPO and every (Prompt-)DT training save their state
after every chunk into the run's folder and resume from it, so a stopped run redoes at most one chunk.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pandas as pd

from decisions.core.agents.common import config_checkpoint
from decisions.core.progress import Progress, silent
from decisions.telecom.comp.budget import StudyBudget
from decisions.telecom.comp.dagger import dagger_rounds
from decisions.telecom.comp.dagger_ablation import save_stage
from decisions.telecom.comp.datasets import OfflineDataset, default_behaviours, generate_dataset
from decisions.telecom.comp.dt_train import demonstrations, save_params, train_promptdt
from decisions.telecom.comp.experts import (
    budget_config,
    expert_policy,
    save_expert,
    train_expert,
    train_multitask,
)
from decisions.telecom.comp.folder import dt_model_paths, evaluation_table, task_file
from decisions.telecom.comp.scoring import (
    ADVANTAGE_BASELINE_POLICY,
    BASELINES,
    EVAL_SEED,
    REFERENCE_POLICIES,
    REFERENCES,
    SavedDT,
    _expert,
    _load_data,
    choose_demonstrator,
    conditioning_check,
    conditioning_spread,
    evaluate,
    headline,
)
from decisions.telecom.comp.tasks import TRAINING_TASKS, UNSEEN_TASKS, Task, task_by_name

if TYPE_CHECKING:
    from decisions.jobs.checkpoints import CheckpointFor

__all__ = [
    "BASELINES",
    "EVAL_SEED",
    "REFERENCES",
    "REFERENCE_POLICIES",
    "SavedDT",
    "StudyBudget",
    "StudyResult",
    "choose_demonstrator",
    "conditioning_check",
    "conditioning_spread",
    "dt_model_paths",
    "evaluate",
    "generate_data",
    "headline",
    "run_study",
    "ship_study",
    "train_experts",
    "train_dt_models",
    "train_models",
    "train_multitask_model",
]

SHIPPED_STUDY = Path(__file__).resolve().parent / "trained"
"""The study folder shipped with the package: experts, demos, models and ``evaluation.csv``
of the measured study (no training data), read by ``decisions bench comp`` and the app."""
JOINT_STUDY = Path(__file__).resolve().parent / "trained_joint"
"""The joint-transmission study's folder in the package (issue 25; ``examples/comp_joint.toml``), read
by ``decisions bench comp`` once its models are trained."""
DEMO_SEED_OFFSET = 50_000
"""Added to the study seed for the demonstration (prompt) episodes."""
SELECT_SEED_OFFSET = 60_000
"""Added to the study seed for the episodes on which each task's demonstrator is chosen."""


DT_CHECKPOINT_EVERY = 50
"""Gradient steps between two checkpoints of a (Prompt-)DT training (its progress cadence)."""


def _ppo_checkpoint(checkpoints: CheckpointFor | None, name: str, total_env_steps: int) -> Path | None:
    """The checkpoint file of a PPO training of ``total_env_steps`` (None without ``checkpoints``)."""
    return config_checkpoint(checkpoints, name, budget_config(total_env_steps))


def _write_once(path: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file, so an interrupted stage never leaves a half file behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.stem + ".partial" + path.suffix)
    write(tmp)
    tmp.replace(path)


def train_experts(
    folder: Path,
    tasks: Sequence[Task],
    budget: StudyBudget,
    seed: int = 0,
    progress: Progress = silent,
    checkpoints: CheckpointFor | None = None,
) -> dict[str, float]:
    """Train (or keep, when its file exists) a PPO expert per task; return each one's training seconds.

    With ``checkpoints``, each expert's training checkpoints to ``checkpoints("expert-<task>", ...)``.
    When the job's parts go to a runner (``decisions run --backend ray``, ``decisions.jobs.parts``),
    the missing experts train there at once, one task per worker (``expert_part``), the same
    experts as in turn here; each file is written as its expert comes back, so a stopped study
    keeps the experts that finished.
    """
    from decisions.jobs import parts

    missing = [task for task in tasks if not task_file(folder, "experts", task, "msgpack").exists()]
    if parts.distributed() and len(missing) > 1 and all(_catalogued(task) for task in missing):
        return _train_experts_as_parts(folder, missing, budget, seed, progress)
    seconds: dict[str, float] = {}
    for i, task in enumerate(tasks):
        progress("experts", i, len(tasks))
        path = task_file(folder, "experts", task, "msgpack")
        if path.exists():
            continue
        start = time.perf_counter()
        checkpoint = _ppo_checkpoint(checkpoints, f"expert-{task.name}", budget.expert_steps)
        result = train_expert(task, budget.expert_steps, seed=seed, checkpoint=checkpoint, warm_start=budget.warm_start)
        _write_once(path, lambda p, r=result, t=task: save_expert(p, r, t))
        seconds[task.name] = time.perf_counter() - start
    progress("experts", len(tasks), len(tasks))
    return seconds


def _catalogued(task: Task) -> bool:
    """Whether ``task`` is the catalogue's task of its name (a worker rebuilds it from the name)."""
    try:
        return task_by_name(task.name) == task
    except ValueError:
        return False


def expert_part(config: dict[str, Any]) -> tuple[bytes, float]:
    """One task's PPO expert, trained as a part of ``train_experts`` on a runner's worker.

    Args:
        config: ``task`` (a catalogue task's name), ``steps`` (environment steps), ``seed`` and
            optionally ``warm_start`` (``StudyBudget.warm_start``, default ``"none"``).

    Returns:
        The expert's msgpack file (``save_expert``) as bytes, and its training seconds.
    """
    task = task_by_name(config["task"])
    start = time.perf_counter()
    result = train_expert(task, config["steps"], seed=config["seed"], warm_start=config.get("warm_start", "none"))
    seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="decisions-expert-") as scratch:
        path = Path(scratch) / "expert.msgpack"
        save_expert(path, result, task)
        return path.read_bytes(), seconds


def _train_experts_as_parts(
    folder: Path, tasks: Sequence[Task], budget: StudyBudget, seed: int, progress: Progress
) -> dict[str, float]:
    """``train_experts`` through the job's parts runner: every missing expert at once, then their files."""
    from decisions.jobs.parts import run_parts

    configs = [
        {"task": task.name, "steps": budget.expert_steps, "seed": seed, "warm_start": budget.warm_start} for task in tasks
    ]
    trained = run_parts(expert_part, configs, label="experts", progress=progress)
    seconds: dict[str, float] = {}
    for task, (blob, train_seconds) in zip(tasks, trained, strict=True):
        _write_once(task_file(folder, "experts", task, "msgpack"), lambda p, b=blob: p.write_bytes(b))
        seconds[task.name] = train_seconds
    return seconds


def generate_data(
    folder: Path,
    train_tasks: Sequence[Task],
    unseen_tasks: Sequence[Task],
    budget: StudyBudget,
    seed: int = 0,
    progress: Progress = silent,
) -> dict[str, str]:
    """Write each training task's offline data and every task's few demonstrations (a file that exists is
    kept: it is what the same seed would write again, and the planner's episodes are slow).

    Each task's demonstrator is its expert; with ``budget.demonstrator == "best"`` the
    better of its expert and the multi-task PPO (``models/multitask_ppo.msgpack``, which must
    exist) on episodes of their own seed (``seed + SELECT_SEED_OFFSET``); with ``"planner"``
    the greedy planner (``planner.GreedyPlanner``). The demonstrations use their own episode
    seed too (``seed + DEMO_SEED_OFFSET``), so a training task's prompts are not episodes the
    models were trained on.

    Returns:
        Each task's demonstrator (``"expert"``, ``"multitask_ppo"`` or ``"planner"``) by task name.
    """
    multitask = None
    if budget.demonstrator == "best":
        path = folder / "models" / "multitask_ppo.msgpack"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no multi-task PPO to choose demonstrators with (train it first)")
        multitask = expert_policy(path)
    chosen: dict[str, str] = {}
    baseline = ADVANTAGE_BASELINE_POLICY if budget.conditioning == "advantage" else None  # its rewards recorded too
    total = len(train_tasks) + len(unseen_tasks)
    for i, task in enumerate([*train_tasks, *unseen_tasks]):
        progress("data", i, total)
        candidates = {"expert": _expert(folder, task)}
        if multitask is not None:
            candidates["multitask_ppo"] = multitask
        if budget.demonstrator == "planner":
            candidates["planner"] = REFERENCE_POLICIES["planner"]
            name = "planner"
        elif len(candidates) > 1:
            name = choose_demonstrator(task, candidates, budget.select_episodes, seed + SELECT_SEED_OFFSET)
        else:
            name = "expert"
        chosen[task.name] = name
        data_file, demos_file = task_file(folder, "data", task, "npz"), task_file(folder, "demos", task, "npz")
        if i < len(train_tasks) and not data_file.exists():
            behaviours = default_behaviours(candidates["expert"]) if budget.episodes_per_behaviour else {}
            counts = dict.fromkeys(behaviours, budget.episodes_per_behaviour)
            behaviours[name], counts[name] = candidates[name], budget.expert_episodes
            data = generate_dataset(task, behaviours, counts, seed, baseline=baseline)
            _write_once(data_file, data.save)
        if not demos_file.exists():
            demos = generate_dataset(task, {name: candidates[name]}, budget.demo_episodes, seed + DEMO_SEED_OFFSET,
                                     baseline=baseline)  # fmt: skip
            _write_once(demos_file, demos.save)
    progress("data", total, total)
    return chosen


def train_dt_models(
    folder: Path,
    train_tasks: Sequence[Task],
    budget: StudyBudget,
    seed: int = 0,
    progress: Progress = silent,
    checkpoints: CheckpointFor | None = None,
) -> dict[str, float]:
    """Train the PromptDT sizes and the plain DT on the training data (a model whose file exists is kept,
    as experts are); return the seconds of those trained.

    The plain DT has the first (smallest) size: the smallest PromptDT is its direct
    counterpart, with and without the prompt. With ``budget.dagger_rounds`` each model then runs
    its DAgger rounds (``dagger.dagger_rounds``: its own episodes, labelled by the planner, added
    to its data; fine-tuned after each), and the model before each round is kept as its DAgger stage
    (``dagger_ablation.save_stage``: the run's checkpoints go when it succeeds). With ``checkpoints``,
    each training checkpoints to ``checkpoints("<model>", ...)`` (a DAgger round to ``"<model>-dagger<r>"``) every
    ``DT_CHECKPOINT_EVERY`` steps.
    """
    data = _load_data(folder, "data", train_tasks)
    demos = _load_data(folder, "demos", train_tasks) if budget.dagger_rounds else []
    models = folder / "models"
    seconds: dict[str, float] = {}
    runs = [(f"promptdt-{s}", s, True) for s in budget.sizes] + [("dt", budget.sizes[0], False)]
    for name, size, use_prompt in runs:
        if (models / f"{name}.msgpack").exists():
            continue
        config = budget.dt_config(size)

        def train(datasets: list[Any], steps: int, run: str, initial: Any = None, *, c: Any = config,
                  prompt: bool = use_prompt) -> tuple[Any, dict[str, Any]]:
            checkpoint = None
            if checkpoints is not None:
                checkpoint = checkpoints(run, iterations=steps, every=min(DT_CHECKPOINT_EVERY, steps))
            if budget.conditioning == "advantage":
                datasets = [d.advantage_view() for d in datasets]
            return train_promptdt(
                datasets, c, steps, budget.dt_batch, seed=seed, use_prompt=prompt,
                progress=lambda _t, d, n: progress(run, d, n), log_every=DT_CHECKPOINT_EVERY,
                checkpoint=checkpoint, initial=initial,
            )

        start = time.perf_counter()
        params, metrics = train(data, budget.dt_steps, name)
        if budget.dagger_rounds:
            last = [metrics]

            def fine_tune(datasets: list[Any], initial: Any, r: int, *, label: str = name, log: list = last,
                          c: Any = config, prompt: bool = use_prompt) -> Any:
                save_stage(folder, label, r, initial, c, prompt, budget.conditioning)
                tuned, log[0] = train(datasets, budget.dagger_steps, f"{label}-dagger{r + 1}", initial)
                return tuned

            params, _ = dagger_rounds(params, config, use_prompt, data, demos, fine_tune, rounds=budget.dagger_rounds,
                                      episodes=budget.dagger_episodes, seed=seed, conditioned_on=budget.conditioning)  # fmt: skip
            metrics = last[0]
        seconds[name] = time.perf_counter() - start
        steps = budget.dt_steps + budget.dagger_rounds * budget.dagger_steps
        _write_once(
            models / f"{name}.msgpack",
            lambda p, pr=params, c=config, m=metrics, n=steps: save_params(
                p, pr, c, weights_dtype="float16", use_prompt=bool(m["use_prompt"]), steps=n, conditioning=budget.conditioning,
                final_loss=float(np.mean(m["loss"][-50:])), final_accuracy=float(np.mean(m["accuracy"][-50:])),
            ),
        )
    return seconds


def train_multitask_model(
    folder: Path,
    train_tasks: Sequence[Task],
    budget: StudyBudget,
    seed: int = 0,
    progress: Progress = silent,
    checkpoints: CheckpointFor | None = None,
) -> float | None:
    """Train the multi-task PPO baseline (needs only the tasks, not the data), or keep it when its
    file exists, as experts are kept; return the training seconds (None when kept). With
    ``checkpoints``, its training checkpoints to ``checkpoints("multitask_ppo", ...)``."""
    path = folder / "models" / "multitask_ppo.msgpack"
    if path.exists():
        return None
    start = time.perf_counter()
    result = train_multitask(
        train_tasks, budget.multitask_steps, seed=seed, progress=lambda _t, d, n: progress("multitask_ppo", d, n),
        checkpoint=_ppo_checkpoint(checkpoints, "multitask_ppo", budget.multitask_steps), warm_start=budget.warm_start,
    )
    _write_once(path, lambda p: save_expert(p, result, tuple(train_tasks)))
    return time.perf_counter() - start


def train_models(
    folder: Path,
    train_tasks: Sequence[Task],
    budget: StudyBudget,
    seed: int = 0,
    progress: Progress = silent,
    checkpoints: CheckpointFor | None = None,
) -> dict[str, float]:
    """Train the PromptDT sizes, the plain DT and (unless the data stage did) the multi-task PPO
    baseline; return training seconds (``checkpoints`` as for ``train_dt_models``)."""
    seconds = train_dt_models(folder, train_tasks, budget, seed, progress, checkpoints)
    multitask = train_multitask_model(folder, train_tasks, budget, seed, progress, checkpoints)
    if multitask is not None:
        seconds["multitask_ppo"] = multitask
    return seconds


class StudyResult(NamedTuple):
    """What ``run_study`` returns: the evaluation table (None unless ``"evaluate"`` ran), the
    timings and headline figures, and the conditioning table (None unless ``"conditioning"`` ran)."""

    table: pd.DataFrame | None
    figures: dict[str, float]
    conditioning: pd.DataFrame | None = None


def run_study(
    folder: Path,
    budget: StudyBudget = StudyBudget(),
    stages: Sequence[str] = ("data", "train", "evaluate"),
    train_tasks: Sequence[Task] = TRAINING_TASKS,
    unseen_tasks: Sequence[Task] = UNSEEN_TASKS,
    seed: int = 0,
    progress: Progress = silent,
    checkpoints: CheckpointFor | None = None,
) -> StudyResult:
    """Run the chosen stages in order; return the tables of the stages that ran and the timings/figures.

    With ``checkpoints`` every training checkpoints there (see the module's docstring).

    ``"data"`` trains the missing experts (and, for ``demonstrator = "best"``, the multi-task
    PPO) first, then writes the datasets; ``"evaluate"`` also writes ``evaluation.csv`` into
    the folder (the app reads it there), ``"conditioning"`` writes ``conditioning.csv``. The
    figures include ``multitask_demonstrated_tasks``, the number of tasks whose demonstrator is
    the multi-task PPO, and with ``"conditioning"`` the ``conditioning_spread`` figures.
    """
    folder = Path(folder)
    figures: dict[str, float] = {}
    if "data" in stages:
        start = time.perf_counter()
        train_experts(folder, [*train_tasks, *unseen_tasks], budget, seed, progress, checkpoints)
        figures["experts_seconds"] = time.perf_counter() - start
        if budget.demonstrator == "best":
            multitask = train_multitask_model(folder, train_tasks, budget, seed, progress, checkpoints)
            if multitask is not None:
                figures["train_seconds_multitask_ppo"] = multitask
        start = time.perf_counter()
        chosen = generate_data(folder, train_tasks, unseen_tasks, budget, seed, progress)
        figures["data_seconds"] = time.perf_counter() - start
        figures["multitask_demonstrated_tasks"] = float(sum(name == "multitask_ppo" for name in chosen.values()))
    if "train" in stages:
        for name, sec in train_models(folder, train_tasks, budget, seed, progress, checkpoints).items():
            figures[f"train_seconds_{name}"] = sec
    table = conditioning = None
    if "evaluate" in stages:
        start = time.perf_counter()
        table = evaluate(folder, train_tasks, unseen_tasks, budget, progress)
        figures["evaluate_seconds"] = time.perf_counter() - start
        _write_once(evaluation_table(folder), lambda p: table.to_csv(p, index=False))
        figures.update(headline(table, budget.sizes))
    if "conditioning" in stages:
        start = time.perf_counter()
        conditioning = conditioning_check(folder, train_tasks, budget, progress)
        figures["conditioning_seconds"] = time.perf_counter() - start
        _write_once(folder / "conditioning.csv", lambda p: conditioning.to_csv(p, index=False))
        figures.update(conditioning_spread(conditioning))
    return StudyResult(table, figures, conditioning)


def ship_study(source: Path, target: Path = SHIPPED_STUDY) -> None:
    """Copy the finished study in ``source`` to ``target`` (by default the package's ``SHIPPED_STUDY``).

    Experts, models and ``evaluation.csv`` are copied as they are; the training data are left
    out, and each task's demonstrations are cut to its best episode, the only one ``evaluate``
    prompts and conditions with, so an evaluation of ``target`` reproduces that of ``source``.

    Raises:
        FileNotFoundError: ``source`` lacks one of ``experts/``, ``models/``, ``demos/`` or
            ``evaluation.csv`` (the study is not finished).
    """
    source, target = Path(source), Path(target)
    needed = [source / "experts", source / "models", source / "demos", evaluation_table(source)]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        raise FileNotFoundError(f"study: {', '.join(missing)} missing; run every stage first")
    if source.resolve() == target.resolve():
        raise ValueError(f"study: source and target are the same folder ({source})")
    target.mkdir(parents=True, exist_ok=True)
    for kind in ("experts", "models", "demos"):
        shutil.rmtree(target / kind, ignore_errors=True)
    for kind in ("experts", "models"):
        shutil.copytree(source / kind, target / kind)
    (target / "demos").mkdir()
    for path in sorted((source / "demos").glob("*.npz")):
        demos = OfflineDataset.load(path)
        best = demos.take(demonstrations(demos, 1))
        _write_once(target / "demos" / path.name, best.save)
    shutil.copy(evaluation_table(source), evaluation_table(target))
