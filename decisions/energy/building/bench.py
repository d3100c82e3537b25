"""``decisions bench building``: the figures the building slice promises, measured.

``run_bench()`` returns one flat dict (printed as JSON by the CLI):

- ``env_steps_per_second``: environment steps per second of ``VmapEnv(BuildingEnv(1), 1024)``
  scanned 1000 steps with zero actions under one ``jit`` (no policy; compile excluded; best of
  3), the observation and reward consumed so nothing is dead code;
  ``env_steps_per_second_autoreset``: the same inside ``AutoResetEnv`` (a reset computed every step);
- per building ``b`` of ``BENCH_BUILDINGS``, on the default held-out window (September-December):
  ``b<b>_no_battery_cost``, ``b<b>_rule_based_saving`` and ``b<b>_lp_saving`` (fractions of the
  no-battery bill) and ``b<b>_rule_based_share_of_lp`` (``saving_fraction_of_lp``);
- the default building job (PPO, A2C, SAC, DQN, 3 seeds each, building 1, held-out months):
  ``best_agent_saving_vs_lp`` (the best agent's mean over seeds of its share of the LP saving),
  ``saving_vs_lp_<agent>`` / ``_std`` / ``_best_seed``, ``train_seconds_<agent>`` (all seeds,
  compile included), ``best_on_policy_saving_vs_lp`` / ``best_off_policy_saving_vs_lp``,
  ``surrogate_fidelity_agreement`` / ``_r2`` of the explained agent, and
  ``transfer_b<b>_saving_vs_lp``: the best agent, trained on building 1, on other homes.

(PPO against SNAPO on gas storage is a gas storage figure: ``decisions bench gas_storage``.)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from decisions.core.wrappers import AutoResetEnv, VmapEnv
from decisions.energy.building.agents import AgentName, score_seeds
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.evaluation import run_baselines
from decisions.energy.building.job import (
    BuildingJob,
    baseline_kpis,
    controller_kpis,
    controller_runs,
    run_job,
    seed_kpis,
)
from decisions.energy.building.kpis import kpi_table
from decisions.energy.building.scenario import Scenario

ProgressFn = Callable[[str, int, int], None]

BENCH_BUILDINGS = (1, 5, 12)
"""Homes whose baseline savings the bench reports."""


def measure_env_steps_per_second(
    num_envs: int = 1024, num_steps: int = 1000, *, auto_reset: bool = False, repeats: int = 3
) -> float:
    """Environment steps per second of a vmapped, scanned, jitted rollout with zero actions.

    Args:
        num_envs: parallel environments (``VmapEnv``, shared params).
        num_steps: scanned steps per call.
        auto_reset: wrap the environment in ``AutoResetEnv`` (as in training).
        repeats: timed calls after the compile; the best is kept.

    Returns:
        ``num_envs * num_steps / best wall time``.
    """
    base = BuildingEnv(1)
    params = base.default_params
    env = VmapEnv(AutoResetEnv(base) if auto_reset else base, num_envs)
    actions = jnp.zeros((num_envs, 1), jnp.float32)

    @jax.jit
    def rollout(key: jax.Array) -> jax.Array:
        obs, state = env.reset(key, params)

        def body(carry: tuple[Any, jax.Array], step_key: jax.Array) -> tuple[tuple[Any, jax.Array], None]:
            state, total = carry
            obs, state, reward, _, _, _ = env.step(step_key, state, actions, params)
            return (state, total + obs.sum() + reward.sum()), None

        (_, total), _ = jax.lax.scan(body, (state, jnp.zeros(())), jax.random.split(key, num_steps))
        return total

    rollout(jax.random.PRNGKey(0)).block_until_ready()  # compile
    best = float("inf")
    for r in range(repeats):
        started = time.perf_counter()
        rollout(jax.random.PRNGKey(r + 1)).block_until_ready()
        best = min(best, time.perf_counter() - started)
    return num_envs * num_steps / best


def run_bench(
    progress: ProgressFn | None = None, *, agents: bool = True
) -> dict[str, Any]:
    """Measure every building figure (see the module docstring).

    Args:
        progress: optional ``(task, done, total)`` callback.
        agents: train and score the four agents (about 15 minutes on 2 cores).

    Returns:
        A flat dict of floats.
    """
    report = progress or (lambda task, done, total: None)
    figures: dict[str, Any] = {}
    report("env steps per second", 0, 2)
    figures["env_steps_per_second"] = measure_env_steps_per_second()
    report("env steps per second", 1, 2)
    figures["env_steps_per_second_autoreset"] = measure_env_steps_per_second(auto_reset=True)
    report("env steps per second", 2, 2)
    for i, building in enumerate(BENCH_BUILDINGS):
        report("baselines", i, len(BENCH_BUILDINGS))
        scenario = Scenario(buildings=building)
        table = kpi_table(run_baselines(scenario))
        reference = table.loc["no_battery", "cost_usd"]
        figures[f"b{building}_no_battery_cost"] = float(reference)
        for name, tag in (("rule_based", "rule_based"), ("perfect_foresight", "lp")):
            figures[f"b{building}_{tag}_saving"] = float(table.loc[name, "saving_usd"] / reference)
        figures[f"b{building}_rule_based_share_of_lp"] = float(
            table.loc["rule_based", "saving_fraction_of_lp"]
        )
    report("baselines", len(BENCH_BUILDINGS), len(BENCH_BUILDINGS))
    if agents:
        figures.update(agent_figures(report))
    return figures


def agent_figures(report: ProgressFn) -> dict[str, Any]:
    """Train the four agents (3 seeds each) on building 1 with the default job and score them.

    Also scores every seed of the best agent, trained on building 1, on the held-out months of
    the other ``BENCH_BUILDINGS`` (transfer across homes, no retraining).
    """
    job = BuildingJob(scenario=Scenario(buildings=(1,), relative_reward=True))
    result = run_job(job, progress=report)
    figures: dict[str, Any] = {k: v for k, v in result.metrics.items()}
    for name, row in result.agents.iterrows():
        figures[f"saving_vs_lp_{name}_best_seed"] = float(row["saving_vs_lp_best_seed"])
    best = AgentName(str(result.agents["saving_vs_lp_mean"].idxmax()))
    figures["best_agent"] = best.value
    figures["on_policy_beats_off_policy"] = bool(
        figures["best_on_policy_saving_vs_lp"] > figures["best_off_policy_saving_vs_lp"]
    )
    trained = result.policies[best.value]
    for building in BENCH_BUILDINGS:
        if building == 1:
            continue
        other = Scenario(buildings=(building,), relative_reward=True)
        table = controller_kpis(controller_runs(run_baselines(other), {best: score_seeds(best, trained, other)}))
        figures[f"transfer_b{building}_saving_vs_lp"] = float(seed_kpis(table, best)["saving_fraction_of_lp"].mean())
        figures[f"transfer_b{building}_rule_based_saving_vs_lp"] = float(
            baseline_kpis(table).loc["rule_based", "saving_fraction_of_lp"]
        )
    return figures


SMOKE_BUDGET: dict[str, Any] = {"agents": False}
"""A benchmark that runs in seconds (the platform's conformance test): simulator speed and the
baselines only."""
