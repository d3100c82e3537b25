"""The building study: train the agents, score them with the baselines, explain the best."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.energy.building.agents import Overrides, score_seeds, seed_params, train_agent
from decisions.energy.building.deployable import deployment
from decisions.energy.building.evaluation import run_baselines
from decisions.energy.building.explain import IMPORTANCE_COLUMNS
from decisions.energy.building.kpis import kpi_table
from decisions.energy.building.replay import controller_name, explain_policy, is_continuous
from decisions.energy.building.report import BuildingReport
from decisions.energy.building.scenario import Scenario
from decisions.energy.building.simulate import Trajectory
from decisions.energy.building.spec import AgentName, AgentSettings, EvaluationSettings
from decisions.kit.checkpoints import checkpoint_file


def run_study(
    scenario: Scenario,
    agents: AgentSettings,
    evaluation: EvaluationSettings,
    *,
    seed: int = 0,
    progress: Progress = silent,
    overrides: Mapping[AgentName, Overrides] | None = None,
) -> BuildingReport:
    """Train every agent of ``agents``, score agents and baselines on the held-out months, explain the best.

    ``seed`` is the job's seed (agent keys, explanation); ``overrides``: per agent, config fields set
    over ``agents.agent_config``'s (e.g. those ``tuning.tune_agents`` chose); none by default.
    """
    progress("baselines", 0, 1)
    baselines = run_baselines(scenario, include_mpc=evaluation.include_mpc)
    progress("baselines", 1, 1)
    trained = _train_agents(scenario, agents, seed=seed, progress=progress, overrides=overrides)
    runs = controller_runs(baselines, trained.runs)
    kpis = controller_kpis(runs)
    summary = agent_summary(kpis, agents.names, trained.seconds)
    summary["explained_seed"] = -1  # the seed whose explanation the run records, on its agent's row
    metrics = headline_metrics(kpis, summary)
    explained = None
    importance = pd.DataFrame(columns=list(IMPORTANCE_COLUMNS))
    sensitivity = pd.DataFrame(columns=["feature", "importance", "std", "mean_gradient"])
    rules = ""
    continuous = [n for n in agents.names if is_continuous(n)]
    if evaluation.explain and continuous:
        progress("explanations", 0, 1)
        best = max(continuous, key=lambda n: summary.loc[n.value, "saving_vs_lp_mean"])
        seeds = seed_kpis(kpis, best)
        explained = (best.value, int(seeds["seed"].iloc[int(np.argmax(seeds["saving_fraction_of_lp"].to_numpy()))]))
        summary.loc[best.value, "explained_seed"] = explained[1]
        result = trained.results[best]
        chosen = explain_policy(
            best, explained[1], result.policy, seed_params(result, explained[1]), trained.runs[best][explained[1]],
            random_seed=seed, max_depth=evaluation.tree_depth,
        )
        importance = chosen.importance()
        sensitivity = chosen.explanation.forecast_sensitivity
        surrogate = chosen.explanation.surrogate
        rules = surrogate.rules
        metrics["surrogate_fidelity_agreement"] = float(surrogate.fidelity.agreement)
        metrics["surrogate_fidelity_r2"] = float(surrogate.fidelity.r2)
        progress("explanations", 1, 1)
    return BuildingReport(
        kpis=kpis,
        agents=summary,
        hourly=controller_hourly(runs),
        training=pd.concat(trained.curves, ignore_index=True) if trained.curves else pd.DataFrame(),
        importance=importance,
        forecast_sensitivity=sensitivity,
        rules=rules,
        metrics=metrics,
        explained=explained,
        policies={n.value: r for n, r in trained.results.items()},
        seeds=agents.seeds,
        deployment=deployment(scenario),
    )


class _Trained:
    """Every agent's training result, wall time, scored seed trajectories and training curve."""

    def __init__(self) -> None:
        self.results: dict[AgentName, Any] = {}
        self.seconds: dict[AgentName, float] = {}
        self.runs: dict[AgentName, list[Trajectory]] = {}
        self.curves: list[pd.DataFrame] = []


def _train_agents(
    scenario: Scenario,
    agents: AgentSettings,
    *,
    seed: int,
    progress: Progress,
    overrides: Mapping[AgentName, Overrides] | None,
) -> _Trained:
    """Train each agent (its seeds one after another, checkpointing inside a recorded run) and score its seeds."""
    trained = _Trained()
    keys = jax.random.split(jax.random.PRNGKey(seed), len(agents.names))
    for name, key in zip(agents.names, keys, strict=True):
        task = f"{name.value.upper()} training"
        start = time.perf_counter()
        result = train_agent(
            name, scenario, agents, key=key, progress=lambda t, d, n, task=task: progress(task, d, n),
            checkpoint=checkpoint_file, overrides=(overrides or {}).get(name),
        )
        trained.seconds[name] = time.perf_counter() - start
        trained.results[name] = result
        trained.runs[name] = score_seeds(name, result, scenario)
        curve = result.curve()
        curve.insert(0, "agent", name.value)
        trained.curves.append(curve)
    return trained


ControllerKey = tuple[str, int | None]
"""A controller's identity: ``(baseline name, None)`` or ``(agent name, seed)``."""


def controller_runs(
    baselines: Mapping[str, Trajectory], agent_runs: Mapping[AgentName, Sequence[Trajectory]]
) -> dict[ControllerKey, Trajectory]:
    """Every controller's trajectory keyed by ``(controller, seed)``: the baselines (seed None), then each
    agent's seeds in order (``score_seeds``).
    """
    runs: dict[ControllerKey, Trajectory] = {(name, None): t for name, t in baselines.items()}
    for agent, trajectories in agent_runs.items():
        for seed, trajectory in enumerate(trajectories):
            runs[(AgentName(agent).value, seed)] = trajectory
    return runs


def _identity_columns(frame: pd.DataFrame, keys: Sequence[ControllerKey]) -> pd.DataFrame:
    """``frame`` (one row per key, in order) led by the ``controller`` and nullable ``seed`` columns."""
    frame = frame.reset_index(drop=True)
    frame.insert(0, "controller", [controller for controller, _ in keys])
    frame.insert(1, "seed", pd.array([seed for _, seed in keys], dtype="Int64"))
    return frame


def controller_kpis(runs: Mapping[ControllerKey, Trajectory]) -> pd.DataFrame:
    """One row per controller: ``controller``, ``seed`` (empty for a baseline), then ``kpi_table``'s KPIs.

    Args:
        runs: ``controller_runs``, including the ``no_battery`` and ``perfect_foresight`` baselines.

    Returns:
        The KPI table in the order of ``runs`` (index 0, 1, ...).
    """
    names = [controller_name(controller, seed) for controller, seed in runs]
    table = kpi_table(dict(zip(names, runs.values(), strict=True))).loc[names]
    return _identity_columns(table, list(runs))


def controller_hourly(runs: Mapping[ControllerKey, Trajectory]) -> pd.DataFrame:
    """Every controller's hourly table (``Trajectory.to_frame``) stacked, with ``controller`` and ``seed`` last."""
    hourly = pd.concat([t.to_frame().assign(controller=c, seed=s) for (c, s), t in runs.items()], ignore_index=True)
    hourly["seed"] = hourly["seed"].astype("Int64")
    return hourly


def baseline_kpis(kpis: pd.DataFrame) -> pd.DataFrame:
    """The baselines' rows of a ``controller_kpis`` table, indexed by name."""
    return kpis[kpis["seed"].isna()].set_index("controller")


def seed_kpis(kpis: pd.DataFrame, agent: AgentName | str) -> pd.DataFrame:
    """One agent's seed rows of a ``controller_kpis`` table, in seed order."""
    rows = kpis[(kpis["controller"] == AgentName(agent).value) & kpis["seed"].notna()]
    return rows.sort_values("seed")


def agent_summary(kpis: pd.DataFrame, names: tuple[AgentName, ...], seconds: Mapping[AgentName, float]) -> pd.DataFrame:
    """One row per agent of ``names``: mean and std over seeds of the cost ratio and the share of the LP saving.

    Indexed by ``agent``: ``family``, ``cost_mean`` / ``_std``, ``saving_vs_lp_mean`` / ``_std`` /
    ``_best_seed``, ``seeds``, ``train_seconds`` (from ``seconds``).
    """
    rows = {}
    for name in names:
        seeds = seed_kpis(kpis, name)
        rows[name.value] = {
            "family": "on-policy" if name.on_policy else "off-policy",
            "cost_mean": float(seeds["cost"].mean()),
            "cost_std": float(seeds["cost"].std(ddof=1)) if len(seeds) > 1 else 0.0,
            "saving_vs_lp_mean": float(seeds["saving_fraction_of_lp"].mean()),
            "saving_vs_lp_std": float(seeds["saving_fraction_of_lp"].std(ddof=1)) if len(seeds) > 1 else 0.0,
            "saving_vs_lp_best_seed": float(seeds["saving_fraction_of_lp"].max()),
            "seeds": len(seeds),
            "train_seconds": float(seconds[name]),
        }
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "agent"
    return frame


def headline_metrics(kpis: pd.DataFrame, agents: pd.DataFrame) -> dict[str, float]:
    """Flat figures for the store and the bench: per agent and the best agent's share of the LP saving.

    Args:
        kpis: ``controller_kpis`` of the run.
        agents: ``agent_summary`` of the run.
    """
    metrics: dict[str, float] = {}
    for name, row in agents.iterrows():
        metrics[f"saving_vs_lp_{name}"] = float(row["saving_vs_lp_mean"])
        metrics[f"saving_vs_lp_{name}_std"] = float(row["saving_vs_lp_std"])
        metrics[f"train_seconds_{name}"] = float(row["train_seconds"])
    if len(agents):
        metrics["best_agent_saving_vs_lp"] = float(agents["saving_vs_lp_mean"].max())
        for family in ("on-policy", "off-policy"):
            rows = agents[agents["family"] == family]
            if len(rows):
                metrics[f"best_{family.replace('-', '_')}_saving_vs_lp"] = float(rows["saving_vs_lp_mean"].max())
    baselines = baseline_kpis(kpis)
    for name in ("rule_based", "mpc"):
        if name in baselines.index:
            metrics[f"saving_vs_lp_{name}"] = float(baselines.loc[name, "saving_fraction_of_lp"])
    metrics["lp_saving_usd"] = float(baselines.loc["perfect_foresight", "saving_usd"])
    metrics["no_battery_cost_usd"] = float(baselines.loc["no_battery", "cost_usd"])
    return metrics
