"""Choose the agents' hyperparameters on a validation window inside the training months."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from decisions.core.agents.common import ProgressFn, TrainResult
from decisions.energy.building.agents import Overrides, agent_config, score_seeds, train_agent
from decisions.energy.building.dataset import load_district
from decisions.energy.building.evaluation import run_baselines
from decisions.energy.building.scenario import Scenario
from decisions.energy.building.simulate import Trajectory
from decisions.energy.building.spec import AgentName, AgentSettings
from decisions.energy.building.windows import Window, month_blocks

VALIDATION_MONTHS = (7, 8)
"""Calendar months held out of the tuning runs' training and scored to choose among candidates."""

LEARNING_RATE_FACTORS = (1.0, 1 / 3, 3.0)
"""Learning rates tried, as factors of the agent's default (the default first)."""

LIBRARY_ON_POLICY = {"gamma": 0.99, "log_std_init": 0.0}
"""``OnPolicyConfig``'s own discount and initial log-std."""

TrainFn = Callable[..., TrainResult]
"""``train_agent``'s signature: ``(name, scenario, settings, *, key, progress, overrides)``."""


def default_grid(name: AgentName, settings: AgentSettings | None = None) -> tuple[Overrides, ...]:
    """An agent's candidates (config overrides, the default first): its default learning rate, a third of it
    and three times it; for PPO and A2C also ``LIBRARY_ON_POLICY`` at the default learning rate.
    """
    rate = float(agent_config(name, settings or AgentSettings()).learning_rate)
    grid: list[Overrides] = [{"learning_rate": float(f"{rate * f:.3g}")} for f in LEARNING_RATE_FACTORS]
    if name.on_policy:
        grid.append({"learning_rate": rate, **LIBRARY_ON_POLICY})
    return tuple(grid)


def validation_scenario(scenario: Scenario, validation_months: Sequence[int] = VALIDATION_MONTHS) -> Scenario:
    """The scenario of the tuning runs: same homes, battery, tariff and reward, trained on
    ``scenario.train_months`` less ``validation_months``, "held out" on the validation months.

    Raises:
        ValueError: a validation month is not a training month, or no training month is left.
    """
    validation = tuple(sorted(validation_months))
    outside = sorted(set(validation) - set(scenario.train_months))
    if outside:
        raise ValueError(f"validation month {outside[0]} is not a training month of the scenario")
    train = tuple(m for m in scenario.train_months if m not in validation)
    if not train:
        raise ValueError("no training month is left outside the validation months")
    return Scenario.model_validate({**scenario.model_dump(), "train_months": train, "eval_months": validation})


def validation_windows(validation_months: Sequence[int] = VALIDATION_MONTHS) -> list[Window]:
    """The contiguous stretches of the data year in the validation months, in time order."""
    return month_blocks(load_district(), validation_months)


def lp_share(reference: Sequence[float], optimum: Sequence[float], costs: Sequence[float]) -> float:
    """Share of the LP's saving over several windows: ``sum(reference - costs) / sum(reference - optimum)``
    (1 for the LP; NaN when the LP saves nothing).
    """
    lp_saving = float(np.sum(reference) - np.sum(optimum))
    return float(np.sum(reference) - np.sum(costs)) / lp_saving if lp_saving else float("nan")


@dataclass(frozen=True)
class ValidationBaselines:
    """The validation windows' baseline bills ($), one entry per window."""

    windows: tuple[Window, ...]
    no_battery: tuple[float, ...]
    perfect_foresight: tuple[float, ...]
    rule_based: tuple[float, ...]

    @classmethod
    def of(cls, scenario: Scenario, windows: Sequence[Window]) -> ValidationBaselines:
        """Run the baselines of ``scenario`` over each window."""
        runs = [run_baselines(scenario, w) for w in windows]

        def bills(name: str) -> tuple[float, ...]:
            return tuple(r[name].total_cost for r in runs)

        return cls(tuple(windows), bills("no_battery"), bills("perfect_foresight"), bills("rule_based"))

    def share(self, costs: Sequence[float]) -> float:
        """``lp_share`` of a controller's bill on each window."""
        return lp_share(self.no_battery, self.perfect_foresight, costs)


def validation_share(
    name: AgentName, result: TrainResult, scenario: Scenario, baselines: ValidationBaselines
) -> np.ndarray:
    """Each trained seed's share of the LP saving over the validation windows.

    Args:
        result: its training (a leading seed axis on the params).
        scenario: ``validation_scenario(...)`` (the scoring environment's scenario).
        baselines: the same windows' baseline bills.
    """
    runs: list[list[Trajectory]] = [score_seeds(name, result, scenario, w) for w in baselines.windows]
    seeds = len(runs[0])
    return np.array([baselines.share([window_runs[s].total_cost for window_runs in runs]) for s in range(seeds)])


@dataclass(frozen=True)
class TuningResult:
    """What ``tune_agents`` chose and why."""

    chosen: dict[AgentName, Overrides]
    """Per agent, the winning candidate (the overrides to train with)."""
    scores: dict[AgentName, list[tuple[Overrides, float]]]
    """Per agent, every candidate with its mean validation share over the tuning seeds."""
    env_steps: dict[AgentName, int]
    """Per agent, environment steps of one tuning run (per seed)."""
    seeds: int
    """Seeds trained per candidate."""
    train_months: tuple[int, ...]
    """Months the candidates trained on."""
    validation_months: tuple[int, ...]
    """Months they were scored on."""
    rule_based_share: float
    """The rule-based controller's share of the LP saving on the validation windows."""
    seconds: float
    """Wall time of the whole tuning (training, scoring, baselines)."""

    def figures(self, settings: AgentSettings | None = None) -> dict[str, Any]:
        """Flat figures (see ``decisions.energy.building.bench``'s docstring for each name).

        Args:
            settings: budgets the chosen values are read back with (default ``AgentSettings()``).
        """
        settings = settings or AgentSettings()
        figures: dict[str, Any] = {
            "hyperparameters_tuned_on": (
                f"validation months {_months(self.validation_months)} (candidates trained on months "
                f"{_months(self.train_months)}, {self.seeds} seed(s) each)"
            ),
            "validation_saving_vs_lp_rule_based": self.rule_based_share,
            "tuning_seconds": self.seconds,
        }
        for name, chosen in self.chosen.items():
            config = agent_config(name, settings, chosen)
            keys = sorted({k for candidate, _ in self.scores[name] for k in candidate})
            for key in keys:
                figures[f"tuned_{name.value}_{key}"] = float(getattr(config, key))
            best = next(score for candidate, score in self.scores[name] if candidate == chosen)
            figures[f"validation_saving_vs_lp_{name.value}"] = best
            figures[f"tuning_scores_{name.value}"] = "; ".join(
                f"{_label(candidate)}: {score:.3f}" for candidate, score in self.scores[name]
            )
            figures[f"tuning_env_steps_{name.value}"] = self.env_steps[name]
        return figures


def _months(months: Sequence[int]) -> str:
    """``"1-6"`` for a run of consecutive months, else ``"1, 3, 5"``."""
    months = sorted(months)
    if len(months) > 1 and months == list(range(months[0], months[-1] + 1)):
        return f"{months[0]}-{months[-1]}"
    return ", ".join(str(m) for m in months)


def _label(candidate: Overrides) -> str:
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in candidate.items())


def tune_agents(
    scenario: Scenario,
    settings: AgentSettings,
    *,
    key: jax.Array,
    budget_fraction: float = 0.25,
    seeds: int = 1,
    grid: Mapping[AgentName, Sequence[Overrides]] | None = None,
    validation_months: Sequence[int] = VALIDATION_MONTHS,
    progress: ProgressFn | None = None,
    train: TrainFn = train_agent,
) -> TuningResult:
    """Choose each agent's candidate on the validation months (see the module docstring).

    Every candidate of an agent trains ``seeds`` seed(s) from ``key`` at ``budget_fraction`` (in (0, 1])
    of its step budget on ``scenario``'s training months less ``validation_months``; ``grid`` (default
    ``default_grid``) lists the candidates per agent, ``train`` is the trainer (``agents.train_agent``).

    Raises:
        ValueError: a bad fraction, seed count or validation month.
    """
    if not 0 < budget_fraction <= 1:
        raise ValueError(f"budget_fraction: must be in (0, 1], got {budget_fraction}")
    if seeds < 1:
        raise ValueError(f"seeds: must be >= 1, got {seeds}")
    started = time.perf_counter()
    tuning_scenario = validation_scenario(scenario, validation_months)
    budget = AgentSettings(
        names=settings.names,
        seeds=seeds,
        on_policy_steps=max(10_000, round(settings.on_policy_steps * budget_fraction)),
        off_policy_steps=max(5_000, round(settings.off_policy_steps * budget_fraction)),
    )
    baselines = ValidationBaselines.of(tuning_scenario, validation_windows(validation_months))
    grids = {
        name: default_grid(name, settings) if grid is None else tuple(grid.get(name, ({},)))
        for name in settings.names
    }
    total = sum(len(g) for g in grids.values())
    done = 0
    chosen: dict[AgentName, Overrides] = {}
    scores: dict[AgentName, list[tuple[Overrides, float]]] = {}
    env_steps: dict[AgentName, int] = {}
    for name, agent_key in zip(settings.names, jax.random.split(key, len(settings.names)), strict=True):
        scores[name] = []
        for candidate in grids[name]:
            if progress is not None:
                progress(f"{name.value.upper()} tuning", done, total)
            result = train(name, tuning_scenario, budget, key=agent_key, overrides=dict(candidate))
            env_steps[name] = int(result.env_steps)
            share = float(np.mean(validation_share(name, result, tuning_scenario, baselines)))
            scores[name].append((dict(candidate), share))
            done += 1
        chosen[name] = scores[name][int(np.argmax([s for _, s in scores[name]]))][0]
    if progress is not None:
        progress("tuning", done, total)
    return TuningResult(
        chosen=chosen,
        scores=scores,
        env_steps=env_steps,
        seeds=seeds,
        train_months=tuning_scenario.train_months,
        validation_months=tuning_scenario.eval_months,
        rule_based_share=baselines.share(baselines.rule_based),
        seconds=time.perf_counter() - started,
    )
