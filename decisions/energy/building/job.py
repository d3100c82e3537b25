"""The building batch job: validate a spec, train the agents, score them with the baselines, explain, record.

``prepare(spec, base_dir)`` validates a job spec (TOML tables ``[job]``, ``[scenario]``,
``[agents]``, ``[evaluation]``) into a ``BuildingJob``; ``run_job(job)`` trains every agent on
the training months (several seeds at once), scores agents and baselines on the held-out
months with the same simulator, explains the best continuous-action agent and returns a
``BuildingReport``; ``execute(job)`` does that inside a recorded run of the store.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from decisions.core.progress import Progress, silent
from decisions.energy.building.agents import AgentName, AgentSettings, score_seeds, seed_params, train_agent
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.evaluation import run_baselines
from decisions.energy.building.explain import BuildingExplanation, explain_controller
from decisions.energy.building.kpis import kpi_table
from decisions.energy.building.report import BuildingReport
from decisions.energy.building.scenario import Scenario
from decisions.energy.building.simulate import Trajectory
from decisions.errors import InputError
from decisions.jobs.record import execute_recorded
from decisions.jobs.validate import spec_data, validate_job

KIND = "building"
SECTIONS = ("scenario", "agents", "evaluation")


class EvaluationSettings(BaseModel):
    """How controllers are scored and explained."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    include_mpc: bool = Field(False, description="Also run the 24 h MPC baseline (one LP per hour).")
    explain: bool = Field(True, description="Explain the best continuous-action agent.")
    tree_depth: int = Field(5, ge=1, le=12, description="Depth of the surrogate decision tree.")


class BuildingJob(BaseModel):
    """A validated building job."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("building", min_length=1, max_length=200)
    seed: int = Field(0, ge=0)
    output_dir: str | None = Field(None, description="Where tables and charts go (default: next to the store).")
    scenario: Scenario = Field(default_factory=Scenario)
    agents: AgentSettings = Field(default_factory=AgentSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)

    def config(self) -> dict[str, Any]:
        """JSON-ready configuration for the run store."""
        return self.model_dump(mode="json")


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> BuildingJob:
    """Validate a job spec into a ``BuildingJob``.

    A CSV tariff's ``path`` is relative to ``base_dir`` (the spec file's folder).

    Raises:
        InputError: naming the first bad field.
    """
    data = spec_data(spec, SECTIONS)
    scenario = data.setdefault("scenario", {})
    tariff = scenario.get("tariff")
    if isinstance(tariff, Mapping) and isinstance(tariff.get("path"), str) and base_dir is not None:
        scenario["tariff"] = {**tariff, "path": str(Path(base_dir) / tariff["path"])}
    job = validate_job(BuildingJob, data, SECTIONS)
    if AgentName.DQN in job.agents.names and job.scenario.num_buildings > 1:
        raise InputError("agents.names", "dqn acts on discrete levels of one battery; choose one building")
    return job


def run_job(job: BuildingJob, *, progress: Progress = silent) -> BuildingReport:
    """Train every agent, score agents and baselines on the held-out months, explain the best.

    Args:
        job: the validated job.
        progress: ``(task, done, total)`` callback.

    Returns:
        The report (tables, metrics, trained agents).
    """
    scenario = job.scenario
    progress("baselines", 0, 1)
    trajectories = run_baselines(scenario, include_mpc=job.evaluation.include_mpc)
    progress("baselines", 1, 1)
    keys = jax.random.split(jax.random.PRNGKey(job.seed), len(job.agents.names))
    results: dict[AgentName, Any] = {}
    seconds: dict[AgentName, float] = {}
    agent_runs: dict[AgentName, list[Trajectory]] = {}
    curves = []
    for name, key in zip(job.agents.names, keys, strict=True):
        task = f"{name.value.upper()} training"
        start = time.perf_counter()
        result = train_agent(name, scenario, job.agents, key=key, progress=lambda t, d, n, task=task: progress(task, d, n))
        seconds[name] = time.perf_counter() - start
        results[name] = result
        agent_runs[name] = score_seeds(name, result, scenario)
        for seed, trajectory in enumerate(agent_runs[name]):
            trajectories[f"{name.value}_seed{seed}"] = trajectory
        curve = result.curve()
        curve.insert(0, "agent", name.value)
        curves.append(curve)
    kpis = kpi_table(trajectories)
    agents = agent_summary(kpis, job.agents.names, seconds)
    agents["explained_seed"] = -1  # the seed whose explanation the run records, on its agent's row
    metrics = headline_metrics(kpis, agents)

    importance = pd.DataFrame(columns=["group", "importance", "std", "permutation", "permutation_std"])
    sensitivity = pd.DataFrame(columns=["feature", "importance", "std", "mean_gradient"])
    rules, explained = "", ""
    continuous = [n for n in job.agents.names if n is not AgentName.DQN]
    if job.evaluation.explain and continuous:
        progress("explanations", 0, 1)
        best = max(continuous, key=lambda n: agents.loc[n.value, "saving_vs_lp_mean"])
        seed = int(np.argmax([kpis.loc[f"{best.value}_seed{s}", "saving_fraction_of_lp"]
                              for s in range(job.agents.seeds)]))
        explained = f"{best.value}_seed{seed}"
        agents.loc[best.value, "explained_seed"] = seed
        explanation = explain_agent(best, results[best], seed, agent_runs[best][seed], scenario, job)
        importance = explanation.importance.rename(columns={"feature": "group"}).merge(
            explanation.permutation.rename(
                columns={"feature": "group", "importance": "permutation", "std": "permutation_std"}
            )[["group", "permutation", "permutation_std"]],
            on="group",
        )
        sensitivity = explanation.forecast_sensitivity
        rules = explanation.surrogate.rules
        metrics["surrogate_fidelity_agreement"] = float(explanation.surrogate.fidelity.agreement)
        metrics["surrogate_fidelity_r2"] = float(explanation.surrogate.fidelity.r2)
        progress("explanations", 1, 1)
    hourly = pd.concat(
        [t.to_frame().assign(controller=name) for name, t in trajectories.items()], ignore_index=True
    )
    return BuildingReport(
        kpis=kpis,
        agents=agents,
        hourly=hourly,
        training=pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(),
        importance=importance,
        forecast_sensitivity=sensitivity,
        rules=rules,
        metrics=metrics,
        explained=explained,
        policies={n.value: r for n, r in results.items()},
    )


def agent_summary(kpis: pd.DataFrame, names: tuple[AgentName, ...], seconds: Mapping[AgentName, float]) -> pd.DataFrame:
    """One row per agent: mean and std over seeds of the cost ratio and the share of the LP saving."""
    rows = {}
    for name in names:
        seeds = kpis[kpis.index.str.startswith(f"{name.value}_seed")]
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
    """Flat figures for the store and the bench: per agent and the best agent's share of the LP saving."""
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
    for name in ("rule_based", "mpc"):
        if name in kpis.index:
            metrics[f"saving_vs_lp_{name}"] = float(kpis.loc[name, "saving_fraction_of_lp"])
    metrics["lp_saving_usd"] = float(kpis.loc["perfect_foresight", "saving_usd"])
    metrics["no_battery_cost_usd"] = float(kpis.loc["no_battery", "cost_usd"])
    return metrics


def explain_agent(
    name: AgentName, result: Any, seed: int, trajectory: Trajectory, scenario: Scenario, job: BuildingJob
) -> BuildingExplanation:
    """Explain one seed of a continuous-action agent over the states it visited on the held-out window."""
    params = seed_params(result, seed)
    key = jax.random.PRNGKey(0)

    def action_fn(obs: jax.Array) -> jax.Array:
        return result.policy(params, obs, key)[0]

    env = BuildingEnv(scenario.num_buildings)
    assert trajectory.observations is not None
    return explain_controller(
        action_fn, trajectory.observations, env.feature_names(), seed=job.seed, max_depth=job.evaluation.tree_depth
    )


def execute(
    job: BuildingJob, *, url: str | None = None, progress: Progress = silent, sweep_id: str | None = None
) -> int:
    """Run a job inside a recorded run: config, metrics, tables, charts and every trained seed are stored.

    Returns:
        The run id. On an exception the run is recorded as failed and the exception re-raised.
    """

    def save_policies(report: BuildingReport, folder: Path) -> dict[str, Path]:
        files = {}
        for name, result in report.policies.items():
            for seed in range(job.agents.seeds):
                path = folder / f"{name}_seed{seed}.msgpack"
                AgentName(name).module.save_policy(path, result, seed=seed)
                files[f"policy_{name}_seed{seed}"] = path
        return files

    return execute_recorded(
        KIND, job.name, job.config(), lambda: run_job(job, progress=progress),
        url=url, sweep_id=sweep_id, output_dir=job.output_dir, extra_files=save_policies,
    )
