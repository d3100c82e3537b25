"""DAgger's own effect on a CoMP study's PromptDTs: each model before its DAgger rounds and after each.

``export_stages`` writes each earlier stage from a run's training checkpoints as
``models/dagger/<model>-r<r>.msgpack``; ``score_stages`` plays every stage on every network on the
evaluation's episode keys, with random play and the network's own expert, so ``expert_normalised_qoe``
is 0 for random and 1 for the network's own expert; ``stage_summary`` and ``stage_figures`` reduce it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import pandas as pd

from decisions.core.checkpoint import load_metadata
from decisions.core.progress import Progress, silent
from decisions.errors import InputError
from decisions.telecom.comp.dt.dt_train import params_from_training
from decisions.telecom.comp.dt.promptdt import PromptDTConfig
from decisions.telecom.comp.dt.saved import SavedDT, dt_scores, save_params
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.rollouts import evaluate_policy
from decisions.telecom.comp.sim.catalog import Task
from decisions.telecom.comp.study.folder import dt_model_paths
from decisions.telecom.comp.study.scoring import EVAL_SEED, expert_of, load_datasets, normalise

STAGES_FOLDER = "dagger"
"""Under the study's ``models/``: the earlier stages' model files (not read by the evaluation)."""

TABLE = "dagger_ablation.csv"
"""The scored table's name in the study folder."""


def stage_file(folder: Path, model: str, stage: int) -> Path:
    """Where the study ``folder`` keeps ``model``'s DAgger stage ``stage`` (0: before any round)."""
    return folder / "models" / STAGES_FOLDER / f"{model}-r{stage}.msgpack"


def save_stage(
    folder: Path, model: str, stage: int, params: Any, config: PromptDTConfig, use_prompt: bool, conditioning: str
) -> Path:
    """Write ``model``'s DAgger stage ``stage`` into the study ``folder`` (float16, as the study ships its
    models, with the model's conditioning); return the file."""
    out = stage_file(folder, model, stage)
    save_params(out, params, config, weights_dtype="float16", use_prompt=use_prompt, conditioning=conditioning,
                dagger_stage=stage)  # fmt: skip
    return out


def export_stages(checkpoints: Path, folder: Path) -> list[Path]:
    """Model files of every stage before the last of each study model, from its run's training checkpoints.

    Raises:
        InputError: (``checkpoints``) a study model has no training checkpoint there.
    """
    written = []
    for final in dt_model_paths(folder):
        meta = load_metadata(final)
        rounds = sorted(int(m.group(1)) for p in checkpoints.glob(f"{final.stem}-dagger*.msgpack")
                        if (m := re.fullmatch(rf"{re.escape(final.stem)}-dagger(\d+)", p.stem)))  # fmt: skip
        sources = [checkpoints / f"{final.stem}.msgpack"] + [checkpoints / f"{final.stem}-dagger{r}.msgpack" for r in rounds]
        if not sources[0].exists():
            raise InputError("checkpoints", f"{checkpoints} has no training checkpoint of {final.stem}")
        for stage, source in enumerate(sources[:-1]):
            params, config, use_prompt = params_from_training(source)
            written.append(save_stage(folder, final.stem, stage, params, config, use_prompt,
                                      meta.get("conditioning", "return")))  # fmt: skip
    return written


def stage_models(folder: Path) -> dict[tuple[str, int], SavedDT]:
    """Every stage of every study model with earlier stages kept: ``(model, stage)`` to the model (the last
    stage is the study's own). A model without kept stages is left out: its final model's stage is unknown."""
    models: dict[tuple[str, int], SavedDT] = {}
    for final in dt_model_paths(folder):
        stages = sorted((folder / "models" / STAGES_FOLDER).glob(f"{final.stem}-r*.msgpack"))
        if not stages:
            continue
        for path in stages:
            models[(final.stem, int(path.stem.rsplit("-r", 1)[1]))] = SavedDT.load(path)
        models[(final.stem, len(stages))] = SavedDT.load(final)
    return models


def score_stages(
    folder: Path,
    train: Sequence[Task],
    unseen: Sequence[Task],
    episodes: int,
    progress: Progress = silent,
    evaluation: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One row per (task, model, stage): ``task``, ``split``, ``policy``, ``stage``, ``qoe``, ``return_mean``,
    and the evaluation's ``normalised_qoe`` / ``expert_normalised_qoe`` (``scoring.normalise``); random play
    and the own expert as ``stage`` -1 rows of their own policy.

    ``evaluation``: the study's ``scoring.evaluate`` table at the same ``episodes`` (the same keys); its
    random, expert and final-model rows are taken from it instead of being played again.
    """
    models = stage_models(folder)
    finals: dict[str, int] = {}
    for name, stage in models:
        finals[name] = max(stage, finals.get(name, stage))
    keys = jax.random.split(jax.random.PRNGKey(EVAL_SEED), episodes)
    tasks = [(t, "train") for t in train] + [(t, "unseen") for t in unseen]
    rows: list[dict[str, Any]] = []
    for i, (task, split) in enumerate(tasks):
        progress("dagger ablation", i, len(tasks))
        known = _evaluated(evaluation, task.name)
        demos = load_datasets(folder, "demos", [task])[0]
        refs = {"random": SERVING_SET_POLICIES["random"], "expert": expert_of(folder, task)}
        for name, policy in refs.items():
            scores = known.get(name) or evaluate_policy(task, policy, episodes, seed=EVAL_SEED)
            rows.append({"task": task.name, "split": split, "policy": name, "stage": -1,
                         "qoe": scores["qoe"], "return_mean": scores["return_mean"]})  # fmt: skip
        for (name, stage), model in models.items():
            reused = known.get(name) if stage == finals[name] else None
            scores = reused or dt_scores(model, task, demos, keys)
            rows.append({"task": task.name, "split": split, "policy": name, "stage": stage,
                         "qoe": scores["qoe"], "return_mean": scores["return_mean"]})  # fmt: skip
    progress("dagger ablation", len(tasks), len(tasks))
    return normalise(pd.DataFrame(rows))


def _evaluated(evaluation: pd.DataFrame | None, task: str) -> dict[str, dict[str, float]]:
    """The evaluation table's ``qoe`` and ``return_mean`` per policy on ``task`` (empty without a table)."""
    if evaluation is None:
        return {}
    rows = evaluation[evaluation.task == task]
    return {str(r.policy): {"qoe": float(r.qoe), "return_mean": float(r.return_mean)} for r in rows.itertuples()}


def stage_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and worst ``expert_normalised_qoe`` and mean raw QoE per model, stage and split."""
    dts = table[table.stage >= 0]
    grouped = dts.groupby(["policy", "stage", "split"])
    return pd.DataFrame({
        "mean": grouped.expert_normalised_qoe.mean(), "worst": grouped.expert_normalised_qoe.min(),
        "raw_qoe": grouped.qoe.mean(),
    }).unstack("split")


def stage_figures(table: pd.DataFrame) -> dict[str, float]:
    """``score_stages``' table as flat figures: ``dagger_<model>_r<stage>_<split>`` (mean score) and
    ``..._<split>_worst`` (worst network), for the bench."""
    summary = stage_summary(table)
    figures: dict[str, float] = {}
    for (model, stage), row in summary.iterrows():
        for split in summary["mean"].columns:
            figures[f"dagger_{model}_r{stage}_{split}"] = float(row[("mean", split)])
            figures[f"dagger_{model}_r{stage}_{split}_worst"] = float(row[("worst", split)])
    return figures


def has_stages(folder: Path) -> bool:
    """Whether ``folder`` holds earlier DAgger stages (``export_stages``) to score."""
    return any((folder / "models" / STAGES_FOLDER).glob("*.msgpack"))
