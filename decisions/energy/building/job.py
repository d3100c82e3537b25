"""The building batch job: train the agents, score them with the baselines, explain, record.

``spec.prepare(spec, base_dir)`` (re-exported here) validates a job spec (TOML tables
``[job]``, ``[scenario]``, ``[agents]``, ``[evaluation]``) into a ``BuildingJob`` without JAX;
``run_job(job)`` trains every agent on the training months (several seeds at once), scores
agents and baselines on the held-out months with the same simulator, explains the best continuous-action agent and returns a
``BuildingReport``; ``execute(job)`` does that inside a recorded run of the store, saving every
trained seed's policy (``replay.save_policies``); ``recorded_job(config)`` rebuilds the job of a
recorded run. Inside a recorded run every seed's training checkpoints into the run's folder
(``decisions.jobs.checkpoints``), so a stopped run resumes (``decisions runs resume``).

Controllers are identified by the pair ``(controller, seed)``: the ``kpis`` and ``hourly``
tables carry a ``controller`` column (a baseline's or an agent's name) and a ``seed`` column
(the agent seed; empty for a baseline).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np
import pandas as pd
from pydantic import ValidationError

from decisions.core.progress import Progress, silent
from decisions.energy.building.agents import Overrides, score_seeds, seed_params, train_agent
from decisions.energy.building.evaluation import run_baselines
from decisions.energy.building.explain import IMPORTANCE_COLUMNS
from decisions.energy.building.kpis import kpi_table
from decisions.energy.building.replay import controller_name, explain_policy, is_continuous
from decisions.energy.building.report import BuildingReport
from decisions.energy.building.simulate import Trajectory
from decisions.energy.building.spec import (  # the light spec module, re-exported for existing callers
    JOB_MODEL,
    AgentName,
    BuildingJob,
    EvaluationSettings,
    prepare,
)
from decisions.errors import from_validation_error
from decisions.jobs.checkpoints import checkpoint_file

__all__ = [
    "JOB_MODEL", "REPORT_MODEL", "AgentName", "BuildingJob", "ControllerKey", "EvaluationSettings",
    "agent_summary", "baseline_kpis", "controller_hourly", "controller_kpis", "controller_runs",
    "headline_metrics", "prepare", "recorded_job", "run_job", "seed_kpis",
]

REPORT_MODEL = BuildingReport
RESUMABLE = True
"""Its agents checkpoint into the run's folder: a stopped run can be resumed."""


def run_job(
    job: BuildingJob,
    *,
    progress: Progress = silent,
    overrides: Mapping[AgentName, Overrides] | None = None,
) -> BuildingReport:
    """Train every agent, score agents and baselines on the held-out months, explain the best.

    Args:
        job: the validated job.
        progress: ``(task, done, total)`` callback.
        overrides: per agent, config fields set over ``agents.agent_config``'s (e.g. the
            learning rates ``tuning.tune_agents`` chose on a validation window); none by default.

    Returns:
        The report (tables, metrics, trained agents).
    """
    scenario = job.scenario
    progress("baselines", 0, 1)
    baselines = run_baselines(scenario, include_mpc=job.evaluation.include_mpc)
    progress("baselines", 1, 1)
    keys = jax.random.split(jax.random.PRNGKey(job.seed), len(job.agents.names))
    results: dict[AgentName, Any] = {}
    seconds: dict[AgentName, float] = {}
    agent_runs: dict[AgentName, list[Trajectory]] = {}
    curves = []
    for name, key in zip(job.agents.names, keys, strict=True):
        task = f"{name.value.upper()} training"
        start = time.perf_counter()
        result = train_agent(
            name, scenario, job.agents, key=key, progress=lambda t, d, n, task=task: progress(task, d, n),
            checkpoint=checkpoint_file, overrides=(overrides or {}).get(name),
        )
        seconds[name] = time.perf_counter() - start
        results[name] = result
        agent_runs[name] = score_seeds(name, result, scenario)
        curve = result.curve()
        curve.insert(0, "agent", name.value)
        curves.append(curve)
    runs = controller_runs(baselines, agent_runs)
    kpis = controller_kpis(runs)
    agents = agent_summary(kpis, job.agents.names, seconds)
    agents["explained_seed"] = -1  # the seed whose explanation the run records, on its agent's row
    metrics = headline_metrics(kpis, agents)

    importance = pd.DataFrame(columns=list(IMPORTANCE_COLUMNS))
    sensitivity = pd.DataFrame(columns=["feature", "importance", "std", "mean_gradient"])
    rules, explained = "", None
    continuous = [n for n in job.agents.names if is_continuous(n)]
    if job.evaluation.explain and continuous:
        progress("explanations", 0, 1)
        best = max(continuous, key=lambda n: agents.loc[n.value, "saving_vs_lp_mean"])
        seeds = seed_kpis(kpis, best)
        seed = int(seeds["seed"].iloc[int(np.argmax(seeds["saving_fraction_of_lp"].to_numpy()))])
        agents.loc[best.value, "explained_seed"] = seed
        explained = (best.value, seed)
        result = results[best]
        chosen = explain_policy(
            best,
            seed,
            result.policy,
            seed_params(result, seed),
            agent_runs[best][seed],
            random_seed=job.seed,
            max_depth=job.evaluation.tree_depth,
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
        agents=agents,
        hourly=controller_hourly(runs),
        training=pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(),
        importance=importance,
        forecast_sensitivity=sensitivity,
        rules=rules,
        metrics=metrics,
        explained=explained,
        policies={n.value: r for n, r in results.items()},
        seeds=job.agents.seeds,
    )


ControllerKey = tuple[str, int | None]
"""A controller's identity: ``(baseline name, None)`` or ``(agent name, seed)``."""


def controller_runs(
    baselines: Mapping[str, Trajectory], agent_runs: Mapping[AgentName, Sequence[Trajectory]]
) -> dict[ControllerKey, Trajectory]:
    """Every controller's trajectory keyed by its identity: the baselines, then each agent's seeds.

    Args:
        baselines: baseline name -> trajectory (``run_baselines``).
        agent_runs: agent -> the trajectory of each seed, in seed order (``score_seeds``).

    Returns:
        ``{(controller, seed): trajectory}``, seed None for a baseline.
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
    """One row per agent: mean and std over seeds of the cost ratio and the share of the LP saving.

    Args:
        kpis: ``controller_kpis`` of the run.
        names: the trained agents, in order.
        seconds: training wall time per agent.

    Returns:
        Indexed by ``agent``: ``family``, ``cost_mean`` / ``_std``, ``saving_vs_lp_mean`` /
        ``_std`` / ``_best_seed``, ``seeds``, ``train_seconds``.
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

    Returns:
        Metric name -> value.
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


def recorded_job(config: Mapping[str, Any]) -> BuildingJob:
    """The job of a recorded run, rebuilt from the configuration the store holds (``BuildingJob.config``).

    Raises:
        InputError: the configuration no longer validates (naming the first bad field).
    """
    try:
        return BuildingJob.model_validate(config)
    except ValidationError as exc:
        raise from_validation_error(exc, data=config) from None
