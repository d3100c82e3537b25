"""Scoring a CoMP study folder: every policy on every task, to one table and its headline figures.

Reads what the stages of ``study`` wrote under one folder (``experts/<task>.msgpack``,
``demos/<task>.npz``, ``models/``) and writes nothing (``study`` re-exports the public names):

- ``choose_demonstrator``: the candidate policy with the highest mean return on a task, on
  common episodes (the ``study`` data stage's choice of demonstrator);
- ``SavedDT`` and ``dt_model_paths``: the (Prompt-)DTs of ``models/``, conditioned on a task's
  best demonstration;
- ``evaluate``: every policy (and the greedy planner, a reference that reads the state) on
  every task, on common random numbers (the same episode keys give all policies the same
  users and movement), to one table; ``headline`` reduces it;
- ``conditioning_check``: every (Prompt-)DT conditioned on more return than the best
  demonstration's; ``conditioning_spread`` reduces it.

Normalised QoE (D4RL-style): per task, ``(qoe - qoe_random) / (qoe_best - qoe_random)``
where ``qoe_best`` is the best of the per-task expert and the heuristics on that task, so 0 is
random play and 1 the best known policy. PromptDT and DT are conditioned on the return of
the task's best demonstration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.core.checkpoint import load_metadata
from decisions.core.progress import Progress, silent
from decisions.telecom.comp.budget import SIZES
from decisions.telecom.comp.datasets import OfflineDataset
from decisions.telecom.comp.dt_train import demonstrations, load_params, make_dt_policy, make_prompt
from decisions.telecom.comp.experts import TaskPolicy, evaluate_policy, expert_policy, task_policy
from decisions.telecom.comp.folder import dt_model_paths, task_file
from decisions.telecom.comp.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.planner import GreedyPlanner
from decisions.telecom.comp.promptdt import PromptDTConfig
from decisions.telecom.comp.qoe import RATE_COLUMNS, rate_figures
from decisions.telecom.comp.tasks import Task

__all__ = [
    "BASELINES",
    "EVAL_SEED",
    "REFERENCES",
    "REFERENCE_POLICIES",
    "EvalBudget",
    "SavedDT",
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


def _expert(folder: Path, task: Task) -> Any:
    """The saved PPO expert of ``task`` (raises ``FileNotFoundError`` when the data stage has not run)."""
    path = task_file(folder, "experts", task, "msgpack")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no expert for task {task.name} (run the data stage first)")
    return expert_policy(path)


def _load_data(folder: Path, kind: str, tasks: Sequence[Task]) -> list[OfflineDataset]:
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


@partial(jax.jit, static_argnames=("config", "use_prompt", "baseline", "labeler"))
def _dt_episodes(
    params: Any, prompt: Any, target: Array, keys: Array, net: Any, config: PromptDTConfig, use_prompt: bool,
    baseline: Any = None, labeler: Any = None,
) -> Any:
    """Greedy (Prompt-)DT episodes, vmapped over keys; one compile per architecture, any task."""
    rollout = make_dt_policy(params, config, prompt if use_prompt else None, target, baseline=baseline, labeler=labeler)
    return jax.vmap(rollout, in_axes=(0, None))(keys, net)


ADVANTAGE_BASELINE_POLICY = task_policy(SERVING_SET_POLICIES["max_snr"])
"""The baseline of advantage conditioning (``StudyBudget.conditioning``): max-SNR, as a ``TaskPolicy``
(for ``generate_dataset``'s ``baseline``)."""
ADVANTAGE_BASELINE = ADVANTAGE_BASELINE_POLICY.fn
"""Its function (for ``make_dt_policy``'s ``baseline``)."""


@dataclass(frozen=True)
class SavedDT:
    """A (Prompt-)DT read from a study folder: weights, architecture, whether it reads a prompt and
    what it is conditioned on (``"return"`` or ``"advantage"``, ``StudyBudget.conditioning``)."""

    params: Any
    config: PromptDTConfig
    use_prompt: bool
    conditioned_on: str = "return"

    @classmethod
    def load(cls, path: Path) -> SavedDT:
        """Read a model written by ``study.train_dt_models``."""
        params, config = load_params(path)
        meta = load_metadata(path)
        return cls(params, config, bool(meta.get("use_prompt", True)), str(meta.get("conditioning", "return")))

    @property
    def baseline(self) -> Any:
        """The baseline policy function of an advantage-conditioned model (None for return)."""
        return ADVANTAGE_BASELINE if self.conditioned_on == "advantage" else None

    def conditioning(self, demos: OfflineDataset) -> tuple[Any, Array]:
        """``(prompt, target)``: the task's best demonstration (by return) and its return, or for an
        advantage-conditioned model its advantage over the baseline (and a prompt in those units)."""
        best = int(demonstrations(demos, 1)[0])
        view = demos.advantage_view() if self.conditioned_on == "advantage" else demos
        return make_prompt(view, self.config, index=best), jnp.asarray(view.returns()[best], jnp.float32)

    def episodes(
        self, task: Task, demos: OfflineDataset, keys: Array, offset: float = 0.0, labeler: Any = None
    ) -> Any:
        """Greedy episodes on ``task`` (a ``DTRollout`` with a leading key axis), conditioned on
        the best demonstration's return (or advantage) plus ``offset``; with ``labeler`` (a
        ``TaskPolicy`` function) also its action in every visited state (``make_dt_policy``)."""
        prompt, target = self.conditioning(demos)
        return _dt_episodes(self.params, prompt, target + offset, keys, task.params(), self.config, self.use_prompt,
                            self.baseline, labeler)  # fmt: skip


def _dt_scores(model: SavedDT, task: Task, demos: OfflineDataset, keys: Array, offset: float = 0.0) -> dict[str, float]:
    """QoE, fairness and return of a (Prompt-)DT on ``task`` conditioned on ``demos`` (their best
    return plus ``offset``)."""
    out = model.episodes(task, demos, keys, offset)
    rewards = np.asarray(out.rewards, np.float64)
    return {
        "return_mean": float(rewards.sum(axis=1).mean()),
        "qoe": float(((rewards + 1.0) / 2.0).mean()),
        "jain_qoe": float(np.asarray(out.jain_qoe).mean()),
        **rate_figures(np.asarray(out.user_rate), np.asarray(task.params().user_mask)),
    }


def evaluate(
    folder: Path,
    train_tasks: Sequence[Task],
    unseen_tasks: Sequence[Task],
    budget: EvalBudget,
    progress: Progress = silent,
) -> pd.DataFrame:
    """Every policy on every task (common random numbers), with normalised QoE.

    Returns:
        One row per (task, policy): ``task``, ``split`` (``train`` / ``unseen``), ``policy``,
        ``qoe``, ``jain_qoe``, ``return_mean``, the operators' ``RATE_COLUMNS`` and the normalised
        scores (``normalised_qoe``, ``expert_normalised_qoe``).
    """
    dt_models = {path.stem: SavedDT.load(path) for path in dt_model_paths(folder)}
    multitask = expert_policy(folder / "models" / "multitask_ppo.msgpack")
    keys = jax.random.split(jax.random.PRNGKey(EVAL_SEED), budget.eval_episodes)
    rows: list[dict[str, Any]] = []
    tasks = [(t, "train") for t in train_tasks] + [(t, "unseen") for t in unseen_tasks]
    for i, (task, split) in enumerate(tasks):
        progress("evaluate", i, len(tasks))
        demos = _load_data(folder, "demos", [task])[0]
        policies: dict[str, Any] = {"expert": _expert(folder, task), "multitask_ppo": multitask}
        policies.update({name: SERVING_SET_POLICIES[name] for name in BASELINES})
        policies.update(REFERENCE_POLICIES)
        for name, policy in policies.items():
            scores = evaluate_policy(task, policy, budget.eval_episodes, seed=EVAL_SEED, rates=True)
            rows.append({"task": task.name, "split": split, "policy": name, **_pick(scores)})
        for name, model in dt_models.items():
            rows.append({"task": task.name, "split": split, "policy": name, **_dt_scores(model, task, demos, keys)})
    progress("evaluate", len(tasks), len(tasks))
    table = pd.DataFrame(rows)
    return _normalise(table)


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
        demos = _load_data(folder, "demos", [task])[0]
        for name, model in dt_models.items():
            target = float(model.conditioning(demos)[1])
            for offset in budget.target_offsets:
                scores = _dt_scores(model, task, demos, keys, offset)
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


def _normalise(table: pd.DataFrame) -> pd.DataFrame:
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
    """The issue's figures from ``evaluate``'s table.

    - ``promptdt_vs_multitask_ppo``: mean normalised QoE of the best PromptDT size over the
      multi-task PPO's, on the training tasks;
    - ``promptdt_beats_baselines``: 1 when that PromptDT's mean normalised QoE on the training
      tasks is at or above every baseline's but the per-task expert's (and the ``REFERENCES``,
      which are not baselines), else 0;
    - ``<reference>_vs_multitask_ppo``: the same ratio for each of the ``REFERENCES`` evaluated;
      ``planner_vs_multitask_ppo`` approaches the best any policy can reach (see ``planner``);
    - ``qoe_<size>``: mean QoE of each size on the training tasks, and
      ``qoe_non_decreasing_with_size`` (1 or 0).

    On the unseen tasks (when the table has any), "PromptDT" is the size best on the training
    tasks, and the figures are on the same normalised scale (0 random, 1 the best of the
    expert and the heuristics on each task):

    - ``unseen_normalised_qoe_<policy>`` and ``unseen_median_normalised_qoe_<policy>``: the mean
      and the median over the unseen tasks of each policy's normalised QoE (the median is robust
      to a task whose random-to-best gap is tiny, see ``unseen_min_qoe_gap``);
    - ``unseen_normalised_vs_expert``, ``unseen_normalised_vs_multitask_ppo``: PromptDT's mean
      normalised QoE over the expert's (1 when the expert is the best on every task), over the
      multi-task PPO's;
    - ``unseen_normalised_non_decreasing_with_size``: 1 when the sizes' mean normalised QoE does not
      decrease with size, else 0;
    - ``unseen_min_qoe_gap``: the smallest random-to-best raw QoE gap, the normalisation's denominator;
    - ``unseen_qoe_vs_expert``, ``unseen_qoe_vs_multitask_ppo``: PromptDT's mean raw QoE over the
      expert's, the multi-task PPO's, each with random's raw ratio to the same reference beside it
      (``unseen_qoe_vs_expert_random``, ``unseen_qoe_vs_multitask_ppo_random``): QoE lies in
      ``[0, 1]`` and random play already scores most of it, so a raw ratio reads only against random's.

    On the scale of issue 25, 0 random and 1 each network's own expert (``expert_normalised_qoe``):

    - ``promptdt_vs_expert_unseen`` and ``..._worst``: PromptDT's mean and smallest score over the
      unseen networks (the expert's is 1 on each);
    - ``promptdt_vs_multitask_ppo_unseen``: PromptDT's mean score over the multi-task PPO's, and
      ``..._worst`` the smallest per-network ratio (PromptDT's QoE gain over random divided by the
      multi-task PPO's, on each network);
    - ``expert_normalised_qoe_<policy>`` and ``unseen_expert_normalised_qoe_<policy>``: every
      policy's mean score on the training and the unseen networks;
    - ``unseen_expert_normalised_non_decreasing_with_size``: 1 when the sizes' mean score on the unseen
      networks does not decrease with size (small, medium, large), else 0;
    - ``raw_qoe_<policy>`` and ``unseen_raw_qoe_<policy>``: every policy's mean raw QoE, printed
      beside the normalised figures; likewise ``<rate column>_<policy>`` and ``unseen_<rate column>_<policy>``
      for each of the operators' ``RATE_COLUMNS`` (mean over the networks; the cell-edge rate is each
      network's 5th percentile, averaged).
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
    if len(unseen):
        out.update(_unseen_figures(unseen, best, names))
        out.update(_rate_figures(unseen, "unseen_"))
        if "expert_normalised_qoe" in unseen:
            out.update(_own_expert_figures(unseen, best, names))
    return out


def _own_expert_figures(unseen: pd.DataFrame, best: str, names: Sequence[str]) -> dict[str, float]:
    """``headline``'s figures on issue 25's scale (0 random, 1 the network's own expert) on the unseen rows."""
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
