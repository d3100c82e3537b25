"""Scoring a CoMP study folder: every policy on every task, to one table and its headline figures.

Reads what the study's stages wrote (experts, demos, models) and writes nothing. ``evaluate`` plays
every policy (and the greedy planner, a reference that reads the state) on every task on common random
numbers; ``headline`` reduces the table; ``conditioning_check`` conditions every (Prompt-)DT on more
return than the best demonstration's. Normalised QoE per task: ``(qoe - qoe_random) / (qoe_best -
qoe_random)``, ``qoe_best`` the best of the task's expert and the heuristics.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import jax
import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.telecom.comp.dt.datasets import OfflineDataset
from decisions.telecom.comp.dt.saved import SavedDT, dt_scores
from decisions.telecom.comp.dt.sizes import SIZES
from decisions.telecom.comp.policies.experts import expert_policy
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.planner import GreedyPlanner
from decisions.telecom.comp.policies.rollouts import TaskPolicy, evaluate_policy
from decisions.telecom.comp.sim.catalog import Task
from decisions.telecom.comp.sim.qoe import RATE_COLUMNS
from decisions.telecom.comp.study.folder import dt_model_paths, task_file

__all__ = [
    "BASELINES",
    "EVAL_SEED",
    "REFERENCES",
    "REFERENCE_POLICIES",
    "EvalBudget",
    "choose_demonstrator",
    "conditioning_check",
    "conditioning_spread",
    "dt_model_paths",
    "evaluate",
    "headline",
]

BASELINES = ("max_snr", "top2", "random")
"""Heuristic baselines evaluated beside the learnt policies."""
REFERENCE_POLICIES: dict[str, GreedyPlanner] = {"planner": GreedyPlanner()}
"""Policies evaluated as references, not baselines, by name: the greedy planner (``planner``)
reads the environment state, which no learnt policy sees, so ``headline`` does not ask PromptDT
to beat it. The planner is also the ``"planner"`` demonstrator."""
OWN = "own"
"""The evaluation table's split of a network of one's own."""
REFERENCES = tuple(REFERENCE_POLICIES)
"""The reference policies' names."""
EVAL_SEED = 77_000
"""Evaluation episode seed (disjoint from the data seeds)."""


class EvalBudget(Protocol):
    """What the scoring reads of a study budget (``study.StudyBudget`` is one)."""

    @property
    def eval_episodes(self) -> int:
        """Evaluation episodes per policy and task."""
        ...

    @property
    def target_offsets(self) -> tuple[float, ...]:
        """Offsets (reward units, per episode) added to the conditioning return by ``conditioning_check``."""
        ...


def expert_of(folder: Path, task: Task) -> Any:
    """The saved PPO expert of ``task`` (raises ``FileNotFoundError`` when the data stage has not run)."""
    path = task_file(folder, "experts", task, "msgpack")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no expert for task {task.name} (run the data stage first)")
    return expert_policy(path)


def load_datasets(folder: Path, kind: str, tasks: Sequence[Task]) -> list[OfflineDataset]:
    """Each task's ``kind`` (``data`` or ``demos``) dataset, in order (raises ``FileNotFoundError`` on a missing one)."""
    out = []
    for task in tasks:
        path = task_file(folder, kind, task, "npz")
        if not path.exists():
            raise FileNotFoundError(f"{path}: no data for task {task.name} (run the data stage first)")
        out.append(OfflineDataset.load(path))
    return out


def choose_demonstrator(task: Task, candidates: dict[str, TaskPolicy], episodes: int, seed: int) -> str:
    """The name of the candidate with the highest mean return on ``task`` over ``episodes``
    common episodes (the same users and movement for every candidate); ties go to the first."""
    returns = {name: evaluate_policy(task, policy, episodes, seed=seed)["return_mean"] for name, policy in candidates.items()}
    return max(returns, key=lambda name: returns[name])


def evaluate(
    folder: Path,
    train_tasks: Sequence[Task],
    unseen_tasks: Sequence[Task],
    budget: EvalBudget,
    progress: Progress = silent,
    own_tasks: Sequence[Task] = (),
) -> pd.DataFrame:
    """Every policy on every task (common random numbers), with normalised QoE.

    A network of one's own (``own_tasks``, split ``own``) has the expert and the (Prompt-)DTs only where
    the folder holds its expert and demonstrations (the data stage made them): they need them; the
    multi-task PPO, the baselines and the planner need nothing of the network.

    Returns:
        One row per (task, policy): ``task``, ``split`` (``train`` / ``unseen`` / ``own``), ``policy``,
        ``qoe``, ``jain_qoe``, ``return_mean``, the operators' ``RATE_COLUMNS`` and the normalised
        scores (``normalised_qoe``, ``expert_normalised_qoe``).
    """
    dt_models = {path.stem: SavedDT.load(path) for path in dt_model_paths(folder)}
    multitask = expert_policy(folder / "models" / "multitask_ppo.msgpack")
    keys = jax.random.split(jax.random.PRNGKey(EVAL_SEED), budget.eval_episodes)
    rows: list[dict[str, Any]] = []
    tasks = [(t, "train") for t in train_tasks] + [(t, "unseen") for t in unseen_tasks] + [(t, OWN) for t in own_tasks]
    for i, (task, split) in enumerate(tasks):
        progress("evaluate", i, len(tasks))
        learnt = split != OWN or _has_own_expert(folder, task)
        policies: dict[str, Any] = {"expert": expert_of(folder, task)} if learnt else {}
        policies["multitask_ppo"] = multitask
        policies.update({name: SERVING_SET_POLICIES[name] for name in BASELINES})
        policies.update(REFERENCE_POLICIES)
        for name, policy in policies.items():
            scores = evaluate_policy(task, policy, budget.eval_episodes, seed=EVAL_SEED, rates=True)
            rows.append({"task": task.name, "split": split, "policy": name, **_pick(scores)})
        demos = load_datasets(folder, "demos", [task])[0] if learnt else None
        for name, model in dt_models.items() if learnt else ():
            rows.append({"task": task.name, "split": split, "policy": name, **dt_scores(model, task, demos, keys)})
    progress("evaluate", len(tasks), len(tasks))
    table = pd.DataFrame(rows)
    return normalise(table)


def _has_own_expert(folder: Path, task: Task) -> bool:
    """Whether the folder holds the expert and the demonstrations of a network of one's own."""
    return task_file(folder, "experts", task, "msgpack").exists() and task_file(folder, "demos", task, "npz").exists()


def _pick(scores: dict[str, float]) -> dict[str, float]:
    return {k: scores[k] for k in ("return_mean", "qoe", "jain_qoe", *RATE_COLUMNS)}


def conditioning_check(
    folder: Path, train_tasks: Sequence[Task], budget: EvalBudget, progress: Progress = silent
) -> pd.DataFrame:
    """Every (Prompt-)DT of ``folder/models`` conditioned on more return than it saw.

    A Decision Transformer is meant to act better when asked for a higher return-to-go. Each
    model plays every training task conditioned on the return of the task's best demonstration
    (the evaluation's target) plus each of ``budget.target_offsets``, on the evaluation's
    episode keys (common random numbers), so any change in return comes from the conditioning.

    Returns:
        One row per (task, policy, offset): ``task``, ``policy``, ``offset``, ``target``
        (the return conditioned on), ``return_mean`` and ``qoe``.
    """
    dt_models = {path.stem: SavedDT.load(path) for path in dt_model_paths(folder)}
    if not dt_models:
        raise FileNotFoundError(f"{folder / 'models'}: no (Prompt-)DT models (run the train stage first)")
    keys = jax.random.split(jax.random.PRNGKey(EVAL_SEED), budget.eval_episodes)
    rows: list[dict[str, Any]] = []
    for i, task in enumerate(train_tasks):
        progress("conditioning", i, len(train_tasks))
        demos = load_datasets(folder, "demos", [task])[0]
        for name, model in dt_models.items():
            target = float(model.conditioning(demos)[1])
            for offset in budget.target_offsets:
                scores = dt_scores(model, task, demos, keys, offset)
                rows.append({
                    "task": task.name, "policy": name, "offset": float(offset), "target": target + offset,
                    "return_mean": scores["return_mean"], "qoe": scores["qoe"],
                })
    progress("conditioning", len(train_tasks), len(train_tasks))
    return pd.DataFrame(rows)


def conditioning_spread(table: pd.DataFrame) -> dict[str, float]:
    """``conditioning_return_spread_<policy>``: the largest minus the smallest mean return over the
    training tasks across the offsets of ``conditioning_check``'s table (0: the target is ignored)."""
    means = table.groupby(["policy", "offset"])["return_mean"].mean()
    return {
        f"conditioning_return_spread_{policy}": float(group.max() - group.min())
        for policy, group in means.groupby(level="policy")
    }


_BEST_OF = ("expert", *BASELINES)
"""The policies whose best QoE on a task is 1 on the normalised scale (random's is 0)."""


def normalise(table: pd.DataFrame) -> pd.DataFrame:
    reference = set(_BEST_OF)
    out = []
    for _, group in table.groupby("task", sort=False):
        low = float(group.loc[group.policy == "random", "qoe"].iloc[0])
        high = float(group.loc[group.policy.isin(reference), "qoe"].max())
        own = float(group.loc[group.policy == "expert", "qoe"].iloc[0]) if (group.policy == "expert").any() else high
        group = group.copy()
        group["normalised_qoe"] = (group["qoe"] - low) / max(high - low, 1e-9)
        group["expert_normalised_qoe"] = (group["qoe"] - low) / max(own - low, 1e-9)
        out.append(group)
    return pd.concat(out, ignore_index=True)


def headline(table: pd.DataFrame, sizes: Sequence[str] = tuple(SIZES)) -> dict[str, float]:
    """The headline figures of ``evaluate``'s table (every one defined in ``data/comp/BENCH_FIGURES.md``).

    On the training tasks, the best PromptDT size against the multi-task PPO, the baselines and the
    ``REFERENCES``; on the unseen tasks the same size on the normalised scale, on raw QoE (beside random's
    ratio) and on the scale of each network's own expert (``expert_normalised_qoe``); every policy's raw
    QoE and the operators' ``RATE_COLUMNS``; on the networks of one's own, ``_own_network_figures``.
    """
    train = table[table.split == "train"]
    unseen = table[table.split == "unseen"]
    norm = train.groupby("policy")["normalised_qoe"].mean()
    qoe = train.groupby("policy")["qoe"].mean()
    names = [f"promptdt-{s}" for s in sizes if f"promptdt-{s}" in norm.index]
    best = max(names, key=lambda n: norm[n])
    out: dict[str, float] = {f"qoe_{n}": float(qoe[n]) for n in names}
    out.update({f"normalised_qoe_{p}": float(v) for p, v in norm.items()})
    out["promptdt_vs_multitask_ppo"] = float(norm[best] / norm["multitask_ppo"])
    others = [p for p in norm.index if p not in ("expert", *REFERENCES) and not p.startswith("promptdt-")]
    out["promptdt_beats_baselines"] = float(all(norm[best] >= norm[p] for p in others))
    for name in REFERENCES:
        if name in norm.index:
            out[f"{name}_vs_multitask_ppo"] = float(norm[name] / norm["multitask_ppo"])
    sizes_qoe = [float(qoe[n]) for n in names]
    out["qoe_non_decreasing_with_size"] = float(_non_decreasing(sizes_qoe))
    out.update({f"raw_qoe_{p}": float(v) for p, v in qoe.items()})
    out.update(_rate_figures(train, ""))
    if "expert_normalised_qoe" in train:
        out.update({f"expert_normalised_qoe_{p}": float(v)
                    for p, v in train.groupby("policy")["expert_normalised_qoe"].mean().items()})  # fmt: skip
    out.update(_own_network_figures(table[table.split == OWN]))
    if len(unseen):
        out.update(_unseen_figures(unseen, best, names))
        out.update(_rate_figures(unseen, "unseen_"))
        if "expert_normalised_qoe" in unseen:
            out.update(_own_expert_figures(unseen, best, names))
    return out


def _own_network_figures(own: pd.DataFrame) -> dict[str, float]:
    """``own_<figure>_<policy>``: each policy's QoE, normalised QoE and ``RATE_COLUMNS`` on the networks of
    one's own (none without them; they stay out of every other figure)."""
    if not len(own):
        return {}
    means = own.groupby("policy")[["qoe", "normalised_qoe"]].mean()
    out = {f"own_{column}_{policy}": float(means.loc[policy, column]) for column in means for policy in means.index}
    out.update(_rate_figures(own, "own_"))
    return out


def _own_expert_figures(unseen: pd.DataFrame, best: str, names: Sequence[str]) -> dict[str, float]:
    """``headline``'s figures on the own-expert scale (0 random, 1 the network's own expert) on the unseen rows."""
    score = unseen.pivot_table(index="task", columns="policy", values="expert_normalised_qoe")
    out = {f"unseen_expert_normalised_qoe_{p}": float(v) for p, v in score.mean().items()}
    out["unseen_expert_normalised_non_decreasing_with_size"] = float(
        _non_decreasing([float(score[n].mean()) for n in names]))
    out.update({f"unseen_raw_qoe_{p}": float(v) for p, v in unseen.groupby("policy")["qoe"].mean().items()})
    out["promptdt_vs_expert_unseen"] = float(score[best].mean())
    out["promptdt_vs_expert_unseen_worst"] = float(score[best].min())
    if "multitask_ppo" in score:
        out["promptdt_vs_multitask_ppo_unseen"] = float(score[best].mean() / score["multitask_ppo"].mean())
        per_network = score[best] / score["multitask_ppo"].where(score["multitask_ppo"].abs() > 1e-9)
        out["promptdt_vs_multitask_ppo_unseen_worst"] = float(per_network.min())
    return out


def _rate_figures(rows: pd.DataFrame, prefix: str) -> dict[str, float]:
    """``<prefix><column>_<policy>``: each policy's mean over the networks of each of ``RATE_COLUMNS`` the
    table has (a table written before they were measured has none)."""
    present = [c for c in RATE_COLUMNS if c in rows]
    means = rows.groupby("policy")[present].mean()
    return {f"{prefix}{c}_{p}": float(means.loc[p, c]) for c in present for p in means.index}


def _non_decreasing(values: Sequence[float]) -> bool:
    """Whether ``values`` never decrease."""
    return all(b >= a for a, b in zip(values, values[1:], strict=False))


def _unseen_figures(unseen: pd.DataFrame, best: str, names: Sequence[str]) -> dict[str, float]:
    """``headline``'s figures on the unseen tasks' rows (see ``headline``), ``best`` the PromptDT compared."""
    norm = unseen.groupby("policy")["normalised_qoe"]
    mean, median = norm.mean(), norm.median()
    q_unseen = unseen.groupby("policy")["qoe"].mean()
    reference = unseen[unseen.policy.isin(_BEST_OF)].groupby("task")["qoe"].max()
    random = unseen[unseen.policy == "random"].set_index("task")["qoe"]
    out = {f"unseen_normalised_qoe_{p}": float(v) for p, v in mean.items()}
    out.update({f"unseen_median_normalised_qoe_{p}": float(v) for p, v in median.items()})
    out["unseen_min_qoe_gap"] = float((reference - random.reindex(reference.index)).min())
    out["unseen_normalised_non_decreasing_with_size"] = float(_non_decreasing([float(mean[n]) for n in names]))
    for ref in ("expert", "multitask_ppo"):
        out[f"unseen_normalised_vs_{ref}"] = float(mean[best] / mean[ref])
        out[f"unseen_qoe_vs_{ref}"] = float(q_unseen[best] / q_unseen[ref])
        out[f"unseen_qoe_vs_{ref}_random"] = float(q_unseen["random"] / q_unseen[ref])
    return out
