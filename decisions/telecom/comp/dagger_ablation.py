"""DAgger's own effect on a CoMP study's PromptDTs: each size before its DAgger rounds and after each.

A study with ``dagger_rounds`` trains every (Prompt-)DT on the demonstrator's data, then runs its DAgger
rounds (``dagger``). The recorded run keeps each training's last checkpoint
(``<run>/checkpoints/<model>.msgpack`` before any round, ``<model>-dagger<r>.msgpack`` after round ``r``),
and the study's ``models/<model>.msgpack`` is the last round's model:

- ``export_stages(checkpoints, folder)`` writes every earlier stage as a model file beside the study's,
  ``models/dagger/<model>-r<r>.msgpack`` (``r`` = 0 before any round), float16 as the study ships its
  models, with the final model's conditioning, so the ablation can be scored again from the package;
- ``score_stages(folder, train, unseen, episodes)``: every stage of every model on every network on the
  evaluation's episode keys (common random numbers), with random play and the network's own expert,
  so ``expert_normalised_qoe`` is issue 25's scale (0 random, 1 the network's own expert);
- ``stage_summary``: mean and worst of that score per model, stage and split; ``stage_figures`` the same as
  flat figures (``decisions bench comp`` adds them, prefixed ``joint_``, when the joint study has stages).

``python -m decisions.telecom.comp.dagger_ablation --spec examples/comp_joint.toml --checkpoints RUN/checkpoints``
exports (when ``--checkpoints`` is given), scores, writes ``<folder>/dagger_ablation.csv`` and prints the summary.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import pandas as pd

from decisions.core.checkpoint import load_metadata
from decisions.core.progress import Progress, silent
from decisions.errors import InputError
from decisions.telecom.comp.dt_train import params_from_training, save_params
from decisions.telecom.comp.experts import evaluate_policy
from decisions.telecom.comp.folder import dt_model_paths, evaluation_table
from decisions.telecom.comp.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.promptdt import PromptDTConfig
from decisions.telecom.comp.scoring import EVAL_SEED, SavedDT, _dt_scores, _expert, _load_data, _normalise
from decisions.telecom.comp.tasks import Task

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
    and the evaluation's ``normalised_qoe`` / ``expert_normalised_qoe`` (``scoring._normalise``); random play
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
        demos = _load_data(folder, "demos", [task])[0]
        refs = {"random": SERVING_SET_POLICIES["random"], "expert": _expert(folder, task)}
        for name, policy in refs.items():
            scores = known.get(name) or evaluate_policy(task, policy, episodes, seed=EVAL_SEED)
            rows.append({"task": task.name, "split": split, "policy": name, "stage": -1,
                         "qoe": scores["qoe"], "return_mean": scores["return_mean"]})  # fmt: skip
        for (name, stage), model in models.items():
            reused = known.get(name) if stage == finals[name] else None
            scores = reused or _dt_scores(model, task, demos, keys)
            rows.append({"task": task.name, "split": split, "policy": name, "stage": stage,
                         "qoe": scores["qoe"], "return_mean": scores["return_mean"]})  # fmt: skip
    progress("dagger ablation", len(tasks), len(tasks))
    return _normalise(pd.DataFrame(rows))


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


def run(spec: Path, checkpoints: Path | None = None, episodes: int | None = None) -> pd.DataFrame:
    """Export the stages (with ``checkpoints``), score them, write ``<folder>/dagger_ablation.csv``; return the
    table. At the spec's episodes, random, the experts and the final models are read from the study's
    ``evaluation.csv`` (played on the same keys) when it exists.

    Raises:
        InputError: a bad field of the spec, or (``checkpoints``) a model without its training checkpoint.
        SpecError: the spec cannot be read.
    """
    from decisions.jobs.spec import load_toml
    from decisions.telecom.comp.spec import prepare

    job = prepare(load_toml(spec), spec.parent)
    folder = Path(job.study.folder).resolve()
    if checkpoints is not None:
        for path in export_stages(checkpoints, folder):
            print(f"wrote {path}")
    train, unseen = job.tasks.resolve()
    episodes = episodes or job.study.eval_episodes
    evaluation = evaluation_table(folder)
    reuse = evaluation.exists() and episodes == job.study.eval_episodes  # the same episode keys
    table = score_stages(folder, train, unseen, episodes, evaluation=pd.read_csv(evaluation) if reuse else None)
    table.to_csv(folder / TABLE, index=False)
    return table


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


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: ``run``, then print the summary; bad input exits 2 with one line on stderr."""
    import sys

    from decisions.jobs.spec import SpecError

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spec", type=Path, required=True, help="the study's job spec (its folder and tasks)")
    parser.add_argument("--checkpoints", type=Path, help="the training run's checkpoints folder (exports the stages)")
    parser.add_argument("--episodes", type=int, help="episodes per policy and network (default: the spec's)")
    args = parser.parse_args(argv)
    try:
        table = run(args.spec, args.checkpoints, args.episodes)
    except (InputError, SpecError) as err:
        print(f"error: {err}", file=sys.stderr)
        raise SystemExit(2) from None
    with pd.option_context("display.width", 200, "display.precision", 3):
        print(stage_summary(table))


if __name__ == "__main__":
    main()
