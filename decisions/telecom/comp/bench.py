"""Benchmark: ``CompEnv`` throughput against mobile-env, and return parity per scenario and heuristic.

``run_bench`` returns a flat dict:

- ``sim_steps_per_second``: environment steps per second of ``CompEnv`` on the large scenario,
  ``num_envs`` independent instances (own users and trajectories, shared cell layout) ``vmap``-ed, the max-SNR policy inside a
  ``lax.scan`` over one episode, jitted; compilation excluded (timed on a second call);
- ``mobile_env_steps_per_second``: mobile-env's ``env.step`` alone on the same scenario and
  policy, one environment in Python (policy time excluded);
- ``sim_speedup_vs_mobile_env``: their ratio;
- ``parity/<scenario>/<policy>/...``: mean returns with 99 % CIs of each simulator, the
  difference (ours minus mobile-env) with its Welch CI, Welch's t and its p-value; and the
  step-level check (largest reward error, connection mismatches) on one seed.

Needs mobile-env for the figures that name it; without it those are NaN and
``mobile_env_available`` is False.

With the shipped study (``study.SHIPPED_STUDY``: experts, demos and trained models), the
evaluate stage runs on every training and unseen task (``study_episodes`` episodes per
policy and task, common random numbers) and its figures are added: ``promptdt_vs_multitask_ppo``,
``promptdt_beats_baselines``, ``unseen_vs_expert``, ``qoe_promptdt-<size>``,
``qoe_non_decreasing_with_size``, ``normalised_qoe_<policy>`` (training tasks),
``unseen_normalised_qoe_<policy>`` and ``study_evaluate_seconds``.
"""

from __future__ import annotations

import importlib.util
import math
import time
from typing import Any

import jax

from decisions.core.progress import Progress
from decisions.telecom.comp import parity
from decisions.telecom.comp.heuristics import max_snr_single
from decisions.telecom.comp.network import large
from decisions.telecom.comp.study import SHIPPED_STUDY, StudyBudget, evaluate, headline
from decisions.telecom.comp.tasks import TRAINING_TASKS, UNSEEN_TASKS

__all__ = ["run_bench", "sim_steps_per_second", "study_figures"]

PARITY_EPISODES = {"small": 20, "medium": 8, "large": 4}
"""mobile-env episodes per scenario and policy in the parity figures (mobile-env is slow)."""


def sim_steps_per_second(num_envs: int = 1024, seed: int = 0) -> float:
    """Steps per second of ``CompEnv`` on ``num_envs`` large networks with the max-SNR policy.

    Args:
        num_envs: network instances stepped together (``vmap`` over episodes; params shared).
        seed: seed of the episodes.

    Returns:
        ``num_envs * episode_length / seconds`` of one jitted episode (compilation excluded).
    """
    params = large()
    steps = int(params.episode_length)
    fn = parity.episode_returns_fn(max_snr_single, steps)
    fn(jax.random.split(jax.random.PRNGKey(seed), num_envs), params).block_until_ready()
    start = time.perf_counter()
    fn(jax.random.split(jax.random.PRNGKey(seed + 1), num_envs), params).block_until_ready()
    return num_envs * steps / (time.perf_counter() - start)


def study_figures(episodes: int = 32, progress: Progress | None = None) -> dict[str, float]:
    """The shipped study's evaluation on all tasks and its headline figures (see the module docstring)."""
    start = time.perf_counter()
    budget = StudyBudget(eval_episodes=episodes)
    table = evaluate(SHIPPED_STUDY, TRAINING_TASKS, UNSEEN_TASKS, budget, progress or (lambda *_: None))
    figures: dict[str, float] = {"study_evaluate_seconds": time.perf_counter() - start}
    sizes = tuple(s for s in budget.sizes if f"promptdt-{s}" in set(table.policy))
    figures.update(headline(table, sizes))
    unseen = table[table.split == "unseen"].groupby("policy")["normalised_qoe"].mean()
    figures.update({f"unseen_normalised_qoe_{p}": float(v) for p, v in unseen.items()})
    return figures


def run_bench(
    progress: Progress | None = None,
    *,
    num_envs: int = 1024,
    parity_episodes: dict[str, int] | None = None,
    sim_episodes: int = 512,
    policies: tuple[str, ...] = ("max_snr", "random"),
    seed: int = 0,
    study_episodes: int = 32,
) -> dict[str, Any]:
    """Measure simulator speed against mobile-env and the parity of mean episode returns.

    Args:
        progress: optional ``(task, done, total)`` callback.
        num_envs: networks stepped together for ``sim_steps_per_second``.
        parity_episodes: mobile-env episodes per scenario (default ``PARITY_EPISODES``).
        sim_episodes: ``CompEnv`` episodes per scenario and policy.
        policies: names of ``heuristics.POLICIES`` to compare.
        seed: base seed.
        study_episodes: evaluation episodes per policy and task of the shipped study (0: skip).

    Returns:
        A flat dict of figures (see the module docstring).
    """
    report = progress or (lambda task, done, total: None)
    episodes = dict(PARITY_EPISODES if parity_episodes is None else parity_episodes)
    available = importlib.util.find_spec("mobile_env") is not None
    figures: dict[str, Any] = {"num_envs": num_envs, "mobile_env_available": available}

    report("CompEnv throughput", 0, 1)
    figures["sim_steps_per_second"] = sim_steps_per_second(num_envs, seed)
    report("CompEnv throughput", 1, 1)
    if study_episodes and (SHIPPED_STUDY / "models" / "multitask_ppo.msgpack").exists():
        figures.update(study_figures(study_episodes, progress))

    if not available:
        figures["mobile_env_steps_per_second"] = math.nan
        figures["sim_speedup_vs_mobile_env"] = math.nan
        return figures

    report("mobile-env throughput", 0, 1)
    _, rate = parity.mobile_env_returns("large", max_snr_single, [seed, seed + 1], time_steps=True)
    report("mobile-env throughput", 1, 1)
    figures["mobile_env_steps_per_second"] = rate
    figures["sim_speedup_vs_mobile_env"] = figures["sim_steps_per_second"] / rate

    total = len(episodes) * len(policies)
    done = 0
    report("parity", done, total)
    for scenario, n_mobile in episodes.items():
        for name in policies:
            result = parity.compare(scenario, name, n_mobile=n_mobile, n_sim=sim_episodes, seed=seed)
            prefix = f"parity/{scenario}/{name}"
            for sim_name in ("mobile_env", "sim"):
                summary = result[sim_name]
                figures[f"{prefix}/{sim_name}_mean_return"] = summary["mean"]
                figures[f"{prefix}/{sim_name}_ci99_low"] = summary["ci_low"]
                figures[f"{prefix}/{sim_name}_ci99_high"] = summary["ci_high"]
                figures[f"{prefix}/{sim_name}_episodes"] = int(summary["n"])
            figures[f"{prefix}/diff"] = result["diff"]
            figures[f"{prefix}/diff_ci99_low"], figures[f"{prefix}/diff_ci99_high"] = result["diff_ci"]
            figures[f"{prefix}/welch_t"] = result["welch_t"]
            figures[f"{prefix}/p_value"] = result["p_value"]
            figures[f"{prefix}/z"] = result["z"]
            figures[f"{prefix}/p_value_z"] = result["p_value_z"]
            steps = parity.step_parity(scenario, name, seed=seed, steps=100)
            figures[f"{prefix}/step_max_reward_error"] = steps["max_reward_error"]
            figures[f"{prefix}/step_connection_mismatches"] = int(steps["connection_mismatches"])
            done += 1
            report("parity", done, total)
    return figures


SMOKE_BUDGET: dict[str, Any] = {"num_envs": 8, "parity_episodes": {}, "sim_episodes": 2, "study_episodes": 0}
"""A benchmark that runs in seconds (the platform's conformance test): throughput only."""
