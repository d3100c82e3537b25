"""CoMP's deployable policies: what a run saves so each user's serving cells can be decided later
without retraining, and each offered policy rebuilt as a compiled function of today's measurements.

A run saves, beside its report, its tasks and each deployable policy's study figures per task
(``deployable.msgpack``: the evaluation table's rows where the evaluate stage ran, else the same
figures of a short evaluation on the study's evaluation seed), and copies of the policies' files
(``expert_<task>.msgpack``, ``multitask_ppo.msgpack``). The deployable policies act on one step's
observation: each task's PPO expert, the multi-task PPO and the max-SNR and top-2 rules; the
(Prompt-)DTs read a history and a prompt, not one state, and are not offered.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from flax import serialization

from decisions.errors import InputError
from decisions.telecom.comp.sim.catalog import Task
from decisions.telecom.comp.study.folder import task_file

FILE = "deployable.msgpack"
"""The run's tasks and its deployable policies' figures."""

RULES = ("max_snr", "top2")
"""The heuristics offered (the random one is not a decision)."""

MULTITASK = "multitask_ppo"
EXPERT = "expert"
FIGURES = ("return_mean", "qoe", "mean_rate_mbps")
"""The figures kept of each policy on each task."""


@dataclass(frozen=True)
class Deployable:
    """The run's tasks, its policies' figures (one row per task and policy) and the files to copy."""

    tasks: Sequence[Task]
    scores: pd.DataFrame
    experts: dict[str, Path]
    multitask: Path | None


def deployable(folder: Path, tasks: Sequence[Task], eval_episodes: int, table: pd.DataFrame | None) -> Deployable:
    """What a run over the study ``folder`` offers (module docstring); ``table`` is the evaluate
    stage's, or None where it did not run."""
    experts = {t.name: task_file(folder, "experts", t, "msgpack") for t in tasks}
    experts = {name: path for name, path in experts.items() if path.is_file()}
    multitask = folder / "models" / f"{MULTITASK}.msgpack"
    multitask = multitask if multitask.is_file() else None
    offered = [EXPERT, *RULES, *([MULTITASK] if multitask else [])]
    if table is not None:
        rows = table[table["policy"].isin(offered)][["task", "policy", *FIGURES]]
    else:
        rows = _short_evaluation(folder, [t for t in tasks if t.name in experts], multitask, eval_episodes)
    return Deployable(list(tasks), rows.reset_index(drop=True), experts, multitask)


def _short_evaluation(folder: Path, tasks: Sequence[Task], multitask: Path | None, episodes: int) -> pd.DataFrame:
    """The deployable policies' figures on each task, as the evaluate stage measures them."""
    from decisions.telecom.comp.policies.experts import expert_policy
    from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
    from decisions.telecom.comp.policies.rollouts import evaluate_policy
    from decisions.telecom.comp.study.scoring import EVAL_SEED, expert_of

    rows = []
    for task in tasks:
        policies: dict[str, Any] = {EXPERT: expert_of(folder, task), **{r: SERVING_SET_POLICIES[r] for r in RULES}}
        if multitask is not None:
            policies[MULTITASK] = expert_policy(multitask)
        for name, policy in policies.items():
            scores = evaluate_policy(task, policy, episodes, seed=EVAL_SEED, rates=True)
            rows.append({"task": task.name, "policy": name, **{k: scores[k] for k in FIGURES}})
    return pd.DataFrame(rows, columns=["task", "policy", *FIGURES])


def save_deployable(directory: Path, d: Deployable) -> dict[str, Path]:
    """Write ``FILE`` and copy the policies' files into a run's folder; name -> path."""
    files = {}
    for name, source in d.experts.items():
        files[f"expert_{name}"] = Path(shutil.copyfile(source, directory / f"expert_{name}.msgpack"))
    if d.multitask is not None:
        files[MULTITASK] = Path(shutil.copyfile(d.multitask, directory / f"{MULTITASK}.msgpack"))
    path = directory / FILE
    saved = {"tasks": [t.to_dict() for t in d.tasks], "scores": d.scores.to_dict(orient="records")}
    path.write_bytes(serialization.msgpack_serialize(saved))
    files["deployable"] = path
    return files


def read_deployable(run_folder: Path) -> tuple[dict[str, Task], pd.DataFrame]:
    """The run's tasks by name and its policies' figures.

    Raises:
        InputError: (``run``) the run saved none (recorded before decisions could be taken).
    """
    path = run_folder / FILE
    if not path.is_file():
        raise InputError("run", "it saved no deployable policies (recorded before decisions could be taken)")
    saved = serialization.msgpack_restore(path.read_bytes())
    tasks = [Task.from_dict(t) for t in saved["tasks"]]
    return {t.name: t for t in tasks}, pd.DataFrame(saved["scores"], columns=["task", "policy", *FIGURES])
