"""One PPO policy for many homes: trained on a fixed set of CityLearn homes at once, scored on every home
(those it trained on and homes it never saw) beside the rule-based controller, MPC and the LP.

The split of homes is fixed here, before any result: ``TRAIN_HOMES`` train the policy (months 1-8),
``HELD_OUT_HOMES`` play no part in training or tuning. The held-out set holds homes 5 and 12 (where the
single-home agent was moved without retraining), home 14 (little PV: a quarter of the others') and
home 3 (the smallest load of the PV homes); the training set keeps home 1 (the single-home agent's)
and home 15, the one without PV generation, so that both kinds of home are seen. Every controller is
scored on the same held-out months (September-December) of each home; only the generalist has
parameters chosen on data (its learning rate, on the validation months 7-8 of the training homes by
candidates trained on their months 1-6; ``tune_generalist``): the rule-based controller's thresholds
follow the tariff's range, MPC has a fixed 24 h horizon and the LP none.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from decisions.core.agents import ppo
from decisions.core.agents.common import TrainResult, train_in_turn
from decisions.core.progress import Progress
from decisions.energy.building.agents import Overrides, agent_config, seed_params
from decisions.energy.building.evaluation import run_baselines
from decisions.energy.building.generalist_env import GeneralistEnv, generalist_params, home_params
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.simulate import agent_controller, simulate
from decisions.energy.building.spec import AgentName, AgentSettings
from decisions.energy.building.tuning import LEARNING_RATE_FACTORS, validation_scenario, validation_windows
from decisions.energy.building.windows import Window

TRAIN_HOMES = (1, 2, 4, 6, 7, 8, 9, 10, 11, 13, 15, 16, 17)
"""Building ids the generalist trains on (see the module docstring for why)."""
HELD_OUT_HOMES = (3, 5, 12, 14)
"""Building ids it never trains or tunes on: scored only."""

BASE = Scenario(relative_reward=True)
"""The scenario every home is run in: ToU tariff, train months 1-8, held-out months 9-12, saving reward."""


def check_split(train: Sequence[int], held_out: Sequence[int]) -> None:
    """Refuse a split where a held-out home is also a training home, or either side is empty.

    Raises:
        ValueError: naming the shared home or the empty side.
    """
    common = sorted(set(train) & set(held_out))
    if common:
        raise ValueError(f"home {common[0]} is both a training and a held-out home")
    if not train or not held_out:
        raise ValueError("the split needs at least one training and one held-out home")


def generalist_config(steps: int, overrides: Overrides | None = None) -> ppo.PPOConfig:
    """The single-home PPO's configuration (``agents.agent_config``) at ``steps`` environment steps."""
    return agent_config(AgentName.PPO, AgentSettings(names=("ppo",), on_policy_steps=steps), overrides)


def train_generalist(
    homes: Sequence[int],
    config: ppo.PPOConfig,
    *,
    key: jax.Array,
    seeds: int = 1,
    base: Scenario = BASE,
    progress: Progress | None = None,
) -> TrainResult:
    """Train ``seeds`` copies of one PPO policy, one after another, over ``homes`` (each environment
    draws a home at every reset) on ``base``'s training months; params with a leading seed axis."""
    env, params = GeneralistEnv(), generalist_params(homes, Split.TRAIN, base)

    def train_one(seed: int, seed_key: jax.Array, report: Progress | None) -> TrainResult:
        return ppo.train(env, config, key=seed_key, params=params, progress=report)

    named = None if progress is None else (lambda task, done, total: progress("generalist training", done, total))
    return train_in_turn(train_one, jax.random.split(key, seeds), named)


def generalist_costs(
    result: TrainResult, homes: Sequence[int], windows: Sequence[Window], base: Scenario = BASE
) -> np.ndarray:
    """The bill ($) of every trained seed on every home over every window: ``(seeds, homes, windows)``."""
    env, params = GeneralistEnv(), generalist_params(homes, Split.EVAL, base)
    singles = [home_params(params, i) for i in range(len(homes))]
    seeds = int(jax.tree_util.tree_leaves(result.params)[0].shape[0])
    costs = np.zeros((seeds, len(homes), len(windows)))
    for s in range(seeds):
        controller = agent_controller(result.policy, seed_params(result, s))
        for i, single in enumerate(singles):
            for w, window in enumerate(windows):
                costs[s, i, w] = simulate(env, single, controller, window).total_cost
    return costs


@dataclass(frozen=True)
class HomeBills:
    """Each home's bills ($) over the same windows: ``(homes, windows)`` arrays per controller."""

    homes: tuple[int, ...]
    no_battery: np.ndarray
    rule_based: np.ndarray
    perfect_foresight: np.ndarray
    mpc: np.ndarray | None

    @classmethod
    def of(cls, homes: Sequence[int], windows: Sequence[Window], *, mpc: bool, base: Scenario = BASE) -> HomeBills:
        """Run the baselines (and MPC when ``mpc``) of every home over every window."""
        names = ("no_battery", "rule_based", "perfect_foresight", "mpc")
        bills: dict[str, list[list[float]]] = {name: [] for name in names}
        for home in homes:
            scenario = base.model_copy(update={"buildings": (home,)})
            runs = [run_baselines(scenario, window, include_mpc=mpc) for window in windows]
            for name in names[: 4 if mpc else 3]:
                bills[name].append([run[name].total_cost for run in runs])
        return cls(
            tuple(homes),
            np.asarray(bills["no_battery"]),
            np.asarray(bills["rule_based"]),
            np.asarray(bills["perfect_foresight"]),
            np.asarray(bills["mpc"]) if mpc else None,
        )

    def saving(self, costs: np.ndarray) -> np.ndarray:
        """Saving ($) over no battery summed over the windows, per home (``costs``: ``(homes, windows)``)."""
        return (self.no_battery - costs).sum(axis=-1)

    def share_of_lp(self, costs: np.ndarray) -> np.ndarray:
        """Per home, the share of the LP's saving (summed over the windows)."""
        return self.saving(costs) / self.saving(self.perfect_foresight)

    def share_of_rule(self, costs: np.ndarray) -> np.ndarray:
        """Per home, the saving over the rule-based controller's (above 1: saves more)."""
        return self.saving(costs) / self.saving(self.rule_based)


@dataclass(frozen=True)
class Tuning:
    """The learning rate the generalist trains with, every candidate's validation share, and its time."""

    chosen: Overrides
    scores: list[tuple[Overrides, float]]
    rule_based_share: float
    seconds: float


def tune_generalist(
    homes: Sequence[int],
    steps: int,
    *,
    key: jax.Array,
    base: Scenario = BASE,
    progress: Progress | None = None,
) -> Tuning:
    """Choose the generalist's learning rate (the single-home PPO's x ``LEARNING_RATE_FACTORS``):
    candidates train on ``homes``' months 1-6 at ``steps`` steps, scored on their validation months 7-8
    (mean share of the LP saving over the homes); no held-out month or home plays a part."""
    started = time.perf_counter()
    tuning = validation_scenario(base)
    windows = validation_windows()
    bills = HomeBills.of(homes, windows, mpc=False, base=tuning)
    rate = float(generalist_config(steps).learning_rate)
    candidates: list[Overrides] = [{"learning_rate": float(f"{rate * f:.3g}")} for f in LEARNING_RATE_FACTORS]
    scores: list[tuple[Overrides, float]] = []
    for i, candidate in enumerate(candidates):
        if progress is not None:
            progress("generalist tuning", i, len(candidates))
        result = train_generalist(homes, generalist_config(steps, candidate), key=key, base=tuning)
        costs = generalist_costs(result, homes, windows, tuning)
        scores.append((candidate, float(np.mean([bills.share_of_lp(seed).mean() for seed in costs]))))
    chosen = scores[int(np.argmax([score for _, score in scores]))][0]
    rule = float(bills.share_of_lp(bills.rule_based).mean())
    return Tuning(chosen, scores, rule, time.perf_counter() - started)


def generalist_figures(
    progress: Progress | None = None,
    *,
    steps: int = 20_000_000,
    seeds: int = 1,
    tune: bool = True,
    tune_budget: float = 1.0,
    mpc: bool = True,
    train_homes: Sequence[int] = TRAIN_HOMES,
    held_out_homes: Sequence[int] = HELD_OUT_HOMES,
    seed: int = 0,
) -> dict[str, Any]:
    """Tune (when ``tune``, at ``tune_budget`` of ``steps``), train and score the generalist; the bench's
    ``generalist_*`` figures (``decisions.energy.building.bench``'s docstring names each).

    Raises:
        ValueError: the split shares a home or leaves a side empty.
    """
    check_split(train_homes, held_out_homes)
    report = progress or (lambda task, done, total: None)
    key = jax.random.PRNGKey(seed)
    figures: dict[str, Any] = {
        "generalist_train_homes": " ".join(map(str, train_homes)),
        "generalist_heldout_homes": " ".join(map(str, held_out_homes)),
        "generalist_seeds": seeds,
    }
    overrides: Overrides = {}
    tune_steps = max(10_000, round(steps * tune_budget))
    if tune:
        tuning = tune_generalist(train_homes, tune_steps, key=jax.random.fold_in(key, 1), progress=report)
        overrides = tuning.chosen
        figures["generalist_tuning_scores"] = "; ".join(
            f"learning_rate={c['learning_rate']:g}: {s:.3f}" for c, s in tuning.scores
        )
        figures["generalist_validation_saving_vs_lp"] = max(s for _, s in tuning.scores)
        figures["generalist_validation_rule_based_saving_vs_lp"] = tuning.rule_based_share
        figures["generalist_tuning_seconds"] = tuning.seconds
    config = generalist_config(steps, overrides)
    figures["generalist_learning_rate"] = float(config.learning_rate)
    figures["generalist_tuned_on"] = tuned_on(tune_steps if tune else None, mpc)
    started = time.perf_counter()
    result = train_generalist(train_homes, config, key=jax.random.fold_in(key, 2), seeds=seeds, progress=report)
    figures["generalist_train_seconds"] = time.perf_counter() - started
    figures["generalist_env_steps"] = int(result.env_steps)
    window = BASE.eval_window()
    for group, homes in (("train", tuple(train_homes)), ("heldout", tuple(held_out_homes))):
        report(f"scoring {group} homes", 0, 1)
        bills = HomeBills.of(homes, [window], mpc=mpc)
        costs = generalist_costs(result, homes, [window])
        figures.update(group_figures(group, bills, costs))
        report(f"scoring {group} homes", 1, 1)
    return figures


def tuned_on(tune_steps: int | None, mpc: bool) -> str:
    """What each controller's parameters were chosen on (the bench's ``generalist_tuned_on``); ``tune_steps``:
    the tuning candidates' steps, None when the generalist was not tuned."""
    agent = (
        "generalist: learning rate on validation months 7-8 of the training homes (candidates trained on "
        f"months 1-6, {tune_steps:,} steps)"
        if tune_steps is not None
        else "generalist: not tuned (the single-home PPO's values)"
    )
    mpc_text = "MPC: nothing tuned (24 h horizon, yesterday's load and PV)" if mpc else "MPC: not run"
    return (f"{agent}; rule-based: nothing tuned (thresholds from the tariff's range); {mpc_text}; "
            "LP: perfect foresight; no controller sees the scored months before scoring")


def group_figures(group: str, bills: HomeBills, costs: np.ndarray) -> dict[str, float]:
    """Per home and over ``group``'s homes: the generalist's (mean over seeds, ``costs``: ``(seeds, homes,
    windows)``), the rule-based controller's and MPC's shares of the LP saving and of the rule's saving."""
    agent_lp = np.mean([bills.share_of_lp(seed) for seed in costs], axis=0)
    agent_rule = np.mean([bills.share_of_rule(seed) for seed in costs], axis=0)
    rule_lp = bills.share_of_lp(bills.rule_based)
    figures: dict[str, float] = {}
    for i, home in enumerate(bills.homes):
        figures[f"generalist_b{home}_saving_vs_lp"] = float(agent_lp[i])
        figures[f"generalist_b{home}_saving_vs_rule"] = float(agent_rule[i])
        figures[f"generalist_b{home}_rule_based_saving_vs_lp"] = float(rule_lp[i])
    figures[f"generalist_saving_vs_lp_{group}_mean"] = float(agent_lp.mean())
    figures[f"generalist_saving_vs_lp_{group}_min"] = float(agent_lp.min())
    figures[f"generalist_saving_vs_rule_{group}_min"] = float(agent_rule.min())
    figures[f"generalist_saving_vs_rule_{group}_mean"] = float(agent_rule.mean())
    figures[f"rule_based_saving_vs_lp_{group}_mean"] = float(rule_lp.mean())
    if bills.mpc is not None:
        mpc_lp, mpc_rule = bills.share_of_lp(bills.mpc), bills.share_of_rule(bills.mpc)
        for i, home in enumerate(bills.homes):
            figures[f"generalist_b{home}_mpc_saving_vs_lp"] = float(mpc_lp[i])
        figures[f"mpc_saving_vs_lp_{group}_mean"] = float(mpc_lp.mean())
        figures[f"mpc_saving_vs_rule_{group}_min"] = float(mpc_rule.min())
        figures[f"mpc_saving_vs_rule_{group}_mean"] = float(mpc_rule.mean())
    return figures
