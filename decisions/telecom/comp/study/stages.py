"""The CoMP study's stages: per-task experts -> offline data -> PromptDT and baselines -> one evaluation.

Every stage reads what the previous one wrote under one folder (``folder``), so stages can run as
separate jobs (``decisions run`` with ``stage = "data" | "train" | "evaluate"``) or at once:

- ``train_experts``: ``experts/<task>.msgpack``, one PPO expert per training and unseen task;
- ``train_multitask_model``: ``models/multitask_ppo.msgpack``, trained before the data when it can be
  a task's demonstrator;
- ``generate_data``: ``data/<task>.npz``, each training task's trajectories of its demonstrator (and
  weaker behaviours), and ``demos/<task>.npz``, a few fresh episodes of every task's demonstrator;
- ``train_dt_models``: ``models/promptdt-<size>.msgpack`` per size and ``dt.msgpack`` (no prompt);
- ``run_study``: the chosen stages, then ``evaluation.csv`` and ``conditioning.csv`` (``scoring``);
- ``ship_study``: a finished study without its training data, each task's best demonstration kept.

Every stage takes a ``StudyContext`` (``context``).
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
from decisions.telecom.comp.dt.dagger import dagger_rounds
from decisions.telecom.comp.dt.datasets import OfflineDataset, default_behaviours, generate_dataset
from decisions.telecom.comp.dt.dt_train import demonstrations, train_promptdt
from decisions.telecom.comp.dt.saved import ADVANTAGE_BASELINE_POLICY, save_params
from decisions.telecom.comp.policies.experts import budget_config, expert_policy, save_expert, train_expert
from decisions.telecom.comp.policies.multitask import train_multitask
from decisions.telecom.comp.sim.catalog import Task, task_by_name
from decisions.telecom.comp.study.context import StudyContext
from decisions.telecom.comp.study.dagger_ablation import save_stage
from decisions.telecom.comp.study.folder import evaluation_table, task_file, writable
from decisions.telecom.comp.study.scoring import (
    REFERENCE_POLICIES,
    choose_demonstrator,
    conditioning_check,
    conditioning_spread,
    evaluate,
    expert_of,
    headline,
    load_datasets,
)

if TYPE_CHECKING:
    from decisions.kit.checkpoints import CheckpointFor

__all__ = [
    "StudyResult",
    "expert_part",
    "generate_data",
    "run_study",
    "ship_study",
    "train_dt_models",
    "train_experts",
    "train_models",
    "train_multitask_model",
]

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


def train_experts(ctx: StudyContext) -> dict[str, float]:
    """Train (or keep, when its file exists) a PPO expert per task of ``ctx.tasks``; return each one's seconds.

    Each expert checkpoints to ``ctx.checkpoints("expert-<task>", ...)``. When the job's parts go to a
    runner (``decisions.kit.parts``) the missing experts train there at once, one task per worker
    (``expert_part``); each file is written as its expert comes back.
    """
    from decisions.kit import parts

    folder, budget, tasks = ctx.folder, ctx.budget, ctx.tasks
    missing = [task for task in tasks if not task_file(folder, "experts", task, "msgpack").exists()]
    if parts.distributed() and len(missing) > 1 and all(_catalogued(task) for task in missing):
        return _train_experts_as_parts(ctx, missing)
    seconds: dict[str, float] = {}
    for i, task in enumerate(tasks):
        ctx.progress("experts", i, len(tasks))
        path = task_file(folder, "experts", task, "msgpack")
        if path.exists():
            continue
        start = time.perf_counter()
        checkpoint = _ppo_checkpoint(ctx.checkpoints, f"expert-{task.name}", budget.expert_steps)
        result = train_expert(task, budget.expert_steps, seed=ctx.seed, checkpoint=checkpoint,
                              warm_start=budget.warm_start)  # fmt: skip
        _write_once(path, lambda p, r=result, t=task: save_expert(p, r, t))
        seconds[task.name] = time.perf_counter() - start
    ctx.progress("experts", len(tasks), len(tasks))
    return seconds


def _catalogued(task: Task) -> bool:
    """Whether ``task`` is the catalogue's task of its name (a worker rebuilds it from the name)."""
    try:
        return task_by_name(task.name) == task
    except ValueError:
        return False


def expert_part(config: dict[str, Any]) -> tuple[bytes, float]:
    """One task's PPO expert, trained as a part of ``train_experts`` on a runner's worker.

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


def _train_experts_as_parts(ctx: StudyContext, tasks: Sequence[Task]) -> dict[str, float]:
    """``train_experts`` through the job's parts runner: every missing expert at once, then their files."""
    from decisions.kit.parts import run_parts

    budget = ctx.budget
    configs = [{"task": task.name, "steps": budget.expert_steps, "seed": ctx.seed, "warm_start": budget.warm_start}
               for task in tasks]  # fmt: skip
    trained = run_parts(expert_part, configs, label="experts", progress=ctx.progress)
    seconds: dict[str, float] = {}
    for task, (blob, train_seconds) in zip(tasks, trained, strict=True):
        _write_once(task_file(ctx.folder, "experts", task, "msgpack"), lambda p, b=blob: p.write_bytes(b))
        seconds[task.name] = train_seconds
    return seconds


def generate_data(ctx: StudyContext) -> dict[str, str]:
    """Write each training task's offline data and every task's few demonstrations (a file that exists is
    kept: the same seed would write it again); return each task's demonstrator by task name.

    A task's demonstrator is its expert; with ``budget.demonstrator == "best"`` the better of its expert
    and the multi-task PPO (which must exist) on episodes of their own seed; with ``"planner"`` the greedy
    planner. Demonstrations use their own episode seed too, so prompts are not training episodes.
    """
    budget, folder = ctx.budget, ctx.folder
    multitask = None
    if budget.demonstrator == "best":
        path = folder / "models" / "multitask_ppo.msgpack"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no multi-task PPO to choose demonstrators with (train it first)")
        multitask = expert_policy(path)
    chosen: dict[str, str] = {}
    total = len(ctx.tasks)
    for i, task in enumerate(ctx.tasks):
        ctx.progress("data", i, total)
        candidates = {"expert": expert_of(folder, task)}
        if multitask is not None:
            candidates["multitask_ppo"] = multitask
        chosen[task.name] = name = _demonstrator(ctx, task, candidates)
        _write_task_data(ctx, task, candidates, name, training=i < len(ctx.train_tasks))
    ctx.progress("data", total, total)
    return chosen


def _demonstrator(ctx: StudyContext, task: Task, candidates: dict[str, Any]) -> str:
    """The name of ``task``'s demonstrator among ``candidates`` (the planner is added to them when chosen)."""
    if ctx.budget.demonstrator == "planner":
        candidates["planner"] = REFERENCE_POLICIES["planner"]
        return "planner"
    if len(candidates) > 1:
        return choose_demonstrator(task, candidates, ctx.budget.select_episodes, ctx.seed + SELECT_SEED_OFFSET)
    return "expert"


def _write_task_data(ctx: StudyContext, task: Task, candidates: dict[str, Any], name: str, *, training: bool) -> None:
    """Write ``task``'s offline data (a training task's) and its demonstrations, each unless it exists."""
    budget = ctx.budget
    baseline = ADVANTAGE_BASELINE_POLICY if budget.conditioning == "advantage" else None  # its rewards recorded too
    data_file, demos_file = task_file(ctx.folder, "data", task, "npz"), task_file(ctx.folder, "demos", task, "npz")
    if training and not data_file.exists():
        behaviours = default_behaviours(candidates["expert"]) if budget.episodes_per_behaviour else {}
        counts = dict.fromkeys(behaviours, budget.episodes_per_behaviour)
        behaviours[name], counts[name] = candidates[name], budget.expert_episodes
        _write_once(data_file, generate_dataset(task, behaviours, counts, ctx.seed, baseline=baseline).save)
    if not demos_file.exists():
        demos = generate_dataset(task, {name: candidates[name]}, budget.demo_episodes, ctx.seed + DEMO_SEED_OFFSET,
                                 baseline=baseline)  # fmt: skip
        _write_once(demos_file, demos.save)


def train_dt_models(ctx: StudyContext) -> dict[str, float]:
    """Train the PromptDT sizes and the plain DT on the training data (a model whose file exists is kept);
    return the seconds of those trained.

    The plain DT has the first (smallest) size. With ``budget.dagger_rounds`` each model then runs its
    DAgger rounds (``dagger.dagger_rounds``), the model before each round kept as its DAgger stage
    (``dagger_ablation.save_stage``). Each training checkpoints to ``ctx.checkpoints("<model>", ...)`` (a
    DAgger round to ``"<model>-dagger<r>"``) every ``DT_CHECKPOINT_EVERY`` steps.
    """
    budget = ctx.budget
    data = load_datasets(ctx.folder, "data", ctx.train_tasks)
    demos = load_datasets(ctx.folder, "demos", ctx.train_tasks) if budget.dagger_rounds else []
    models = ctx.folder / "models"
    seconds: dict[str, float] = {}
    runs = [(f"promptdt-{s}", s, True) for s in budget.sizes] + [("dt", budget.sizes[0], False)]
    for name, size, use_prompt in runs:
        if (models / f"{name}.msgpack").exists():
            continue
        start = time.perf_counter()
        params, metrics = _train_dt(ctx, name, budget.dt_config(size), use_prompt, data, demos)
        seconds[name] = time.perf_counter() - start
        steps = budget.dt_steps + budget.dagger_rounds * budget.dagger_steps
        _write_once(
            models / f"{name}.msgpack",
            lambda p, pr=params, c=budget.dt_config(size), m=metrics, n=steps: save_params(
                p, pr, c, weights_dtype="float16", use_prompt=bool(m["use_prompt"]), steps=n, conditioning=budget.conditioning,
                final_loss=float(np.mean(m["loss"][-50:])), final_accuracy=float(np.mean(m["accuracy"][-50:])),
            ),
        )
    return seconds


def _train_dt(
    ctx: StudyContext, name: str, config: Any, use_prompt: bool, data: list[Any], demos: list[Any]
) -> tuple[Any, dict[str, Any]]:
    """One (Prompt-)DT ``name`` trained on ``data``, then through its DAgger rounds; its params and last metrics."""
    budget, folder = ctx.budget, ctx.folder

    def train(datasets: list[Any], steps: int, run: str, initial: Any = None) -> tuple[Any, dict[str, Any]]:
        checkpoint = None
        if ctx.checkpoints is not None:
            checkpoint = ctx.checkpoints(run, iterations=steps, every=min(DT_CHECKPOINT_EVERY, steps))
        if budget.conditioning == "advantage":
            datasets = [d.advantage_view() for d in datasets]
        return train_promptdt(
            datasets, config, steps, budget.dt_batch, seed=ctx.seed, use_prompt=use_prompt,
            progress=lambda _t, d, n: ctx.progress(run, d, n), log_every=DT_CHECKPOINT_EVERY,
            checkpoint=checkpoint, initial=initial,
        )

    params, metrics = train(data, budget.dt_steps, name)
    if not budget.dagger_rounds:
        return params, metrics
    last = [metrics]

    def fine_tune(datasets: list[Any], initial: Any, r: int) -> Any:
        save_stage(folder, name, r, initial, config, use_prompt, budget.conditioning)
        tuned, last[0] = train(datasets, budget.dagger_steps, f"{name}-dagger{r + 1}", initial)
        return tuned

    params, _ = dagger_rounds(params, config, use_prompt, data, demos, fine_tune, rounds=budget.dagger_rounds,
                              episodes=budget.dagger_episodes, seed=ctx.seed, conditioned_on=budget.conditioning)  # fmt: skip
    return params, last[0]


def train_multitask_model(ctx: StudyContext) -> float | None:
    """Train the multi-task PPO baseline on the training tasks, or keep it when its file exists; return the
    training seconds (None when kept). It checkpoints to ``ctx.checkpoints("multitask_ppo", ...)``."""
    path = ctx.folder / "models" / "multitask_ppo.msgpack"
    if path.exists():
        return None
    budget, start = ctx.budget, time.perf_counter()
    result = train_multitask(
        ctx.train_tasks, budget.multitask_steps, seed=ctx.seed,
        progress=lambda _t, d, n: ctx.progress("multitask_ppo", d, n),
        checkpoint=_ppo_checkpoint(ctx.checkpoints, "multitask_ppo", budget.multitask_steps),
        warm_start=budget.warm_start,
    )
    _write_once(path, lambda p: save_expert(p, result, ctx.train_tasks))
    return time.perf_counter() - start


def train_models(ctx: StudyContext) -> dict[str, float]:
    """Train the PromptDT sizes, the plain DT and (unless the data stage did) the multi-task PPO baseline;
    return training seconds."""
    seconds = train_dt_models(ctx)
    multitask = train_multitask_model(ctx)
    if multitask is not None:
        seconds["multitask_ppo"] = multitask
    return seconds


class StudyResult(NamedTuple):
    """What ``run_study`` returns: the evaluation table (None unless ``"evaluate"`` ran), the
    timings and headline figures, and the conditioning table (None unless ``"conditioning"`` ran)."""

    table: pd.DataFrame | None
    figures: dict[str, float]
    conditioning: pd.DataFrame | None = None


def run_study(ctx: StudyContext, stages: Sequence[str] = ("data", "train", "evaluate")) -> StudyResult:
    """Run the chosen stages in order; return the tables of the stages that ran and the timings/figures.

    ``"data"`` trains the missing experts (and, for ``demonstrator = "best"``, the multi-task PPO) first,
    then writes the datasets; ``"evaluate"`` writes ``evaluation.csv`` (the app reads it), ``"conditioning"``
    ``conditioning.csv``, both into the folder unless it is a shipped study (a read-only input: its
    tables are only returned). The figures include ``multitask_demonstrated_tasks`` and, with
    ``"conditioning"``, the ``conditioning_spread`` figures.

    Raises:
        InputError: a data or train stage on a shipped study (``folder.writable``).
    """
    write_tables = writable(ctx.folder, list(stages))
    figures: dict[str, float] = {}
    if "data" in stages:
        figures.update(_data_stage(ctx))
    if "train" in stages:
        for name, sec in train_models(ctx).items():
            figures[f"train_seconds_{name}"] = sec
    table = conditioning = None
    if "evaluate" in stages:
        table, seconds = _timed(lambda: evaluate(ctx.folder, ctx.train_tasks, ctx.unseen_tasks, ctx.budget,
                                                 ctx.progress, ctx.own_tasks))  # fmt: skip
        figures["evaluate_seconds"] = seconds
        if write_tables:
            _write_once(evaluation_table(ctx.folder), lambda p: table.to_csv(p, index=False))
        figures.update(headline(table, ctx.budget.sizes))
    if "conditioning" in stages:
        conditioning, seconds = _timed(lambda: conditioning_check(ctx.folder, ctx.train_tasks, ctx.budget,
                                                                  ctx.progress))  # fmt: skip
        figures["conditioning_seconds"] = seconds
        if write_tables:
            _write_once(ctx.folder / "conditioning.csv", lambda p: conditioning.to_csv(p, index=False))
        figures.update(conditioning_spread(conditioning))
    return StudyResult(table, figures, conditioning)


def _timed(work: Callable[[], Any]) -> tuple[Any, float]:
    """``work()`` and its wall seconds."""
    start = time.perf_counter()
    return work(), time.perf_counter() - start


def _data_stage(ctx: StudyContext) -> dict[str, float]:
    """The data stage: the experts, the multi-task PPO when it can demonstrate, then the datasets; its figures."""
    figures: dict[str, float] = {"experts_seconds": _timed(lambda: train_experts(ctx))[1]}
    if ctx.budget.demonstrator == "best":
        multitask = train_multitask_model(ctx)
        if multitask is not None:
            figures["train_seconds_multitask_ppo"] = multitask
    chosen, figures["data_seconds"] = _timed(lambda: generate_data(ctx))
    figures["multitask_demonstrated_tasks"] = float(sum(name == "multitask_ppo" for name in chosen.values()))
    return figures


def ship_study(source: Path, target: Path) -> None:
    """Copy the finished study in ``source`` to ``target`` without its training data, each task's
    demonstrations cut to the best episode (all ``evaluate`` uses), so ``target`` evaluates as ``source``
    does. ``FileNotFoundError`` when ``source`` lacks ``experts/``, ``models/``, ``demos/`` or its table.
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
