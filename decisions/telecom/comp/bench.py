"""Benchmark: ``CompEnv`` speed against mobile-env, parity with mobile-env, and the shipped study's figures.

``run_bench`` returns a flat dict. Speed, all on mobile-env's large scenario (13 cells, 30 users)
with the max-SNR policy, on JAX's default backend (``jax_backend``); compilation is excluded
(every jitted function is timed after a first call):

- ``sim_steps_per_second``: environment steps per second of ``num_envs`` independent ``CompEnv``
  episodes (own users and trajectories, shared cell layout) ``vmap``-ed in one jitted
  ``lax.scan`` over the episode (reset, policy and steps included);
- ``sim_steps_per_second_1env``: the same for one environment: one jitted, unbatched episode
  scan per call, ``single_env_episodes`` calls in a Python loop (dispatch included);
- ``mobile_env_steps_per_second``: mobile-env's ``env.step`` alone, one environment in Python,
  over ``throughput_episodes`` episodes (its policy and reset excluded, which favours it);
- ``sim_throughput_ratio_vs_mobile_env``: ``sim_steps_per_second`` over
  ``mobile_env_steps_per_second``: a throughput ratio of ``num_envs`` batched networks against
  one Python environment, not a per-environment speed-up;
- ``sim_1env_speed_ratio_vs_mobile_env``: ``sim_steps_per_second_1env`` over
  ``mobile_env_steps_per_second``: one environment against one environment.

Parity with mobile-env (``parity``), per scenario (``small``, ``medium``, ``large``) and policy
(``max_snr``, ``random``), the prefix ``parity/<scenario>/<policy>/``:

- ``mobile_env_mean_return``, ``sim_mean_return`` with ``..._ci99_low``, ``..._ci99_high`` and
  ``..._episodes``: the mean episode return of each simulator and its 99 % t-interval over
  independent episodes (``parity_episodes[scenario]`` of mobile-env, ``sim_episodes`` of ours);
- ``diff`` (ours minus mobile-env) with ``diff_ci99_low``, ``diff_ci99_high`` (Welch);
  ``welch_t`` and ``p_value`` (Welch's test of equal means), ``z`` and ``p_value_z`` (the same
  with our variance for both samples);
- ``returns_pass``: True when the whole Welch 99 % interval of ``diff`` lies within
  ``+-parity_tolerance`` return units (an equivalence test: it fails on a difference beyond the
  tolerance and on too few episodes to bound one);
- ``step_max_reward_error``, ``step_connection_mismatches``, ``step_obs_max_error``: our step
  from mobile-env's state and action against mobile-env's step, over one episode (no mobility);
- ``mobility_max_position_error_m``, ``mobility_max_reward_error``,
  ``mobility_connection_mismatches``, ``mobility_obs_max_error``: a ``CompEnv`` episode running
  free from mobile-env's reset (our movement, connections and rewards), given only mobile-env's
  random waypoint draws, against mobile-env's episode; ``roam_area_error_m``: our roaming area
  against mobile-env's movement area;
- ``step_pass``: True when those step-level and mobility errors are within
  ``parity.STEP_TOLERANCE`` (rewards, observations) and ``parity.POSITION_TOLERANCE_M``
  (positions, roaming area) with no connection mismatch;
- ``pass``: ``returns_pass`` and ``step_pass``.

Overall, present only when at least one pair ran: ``parity_pass`` (every ``pass``);
``parity_max_step_reward_error``, ``parity_max_mobility_position_error_m`` and
``parity_max_mobility_reward_error`` (the largest over the pairs); ``parity_connection_mismatches``
(step-level and mobility, summed over the pairs); ``parity_tolerance`` (return units),
``parity_confidence`` (0.99), ``parity_mobile_env_episodes`` (mobile-env episodes run by the
parity part, the step-level ones included) and ``parity_seconds`` (its wall time; mobile-env's
episodes dominate it).

Needs mobile-env for the figures that name it; without it the speed figures that name it are
NaN, the parity figures absent and ``mobile_env_available`` False.

The spread of the joint-transmission study's networks (``spread.spread_figures``, before any
training): per network and policy (planner, max-SNR, top-2, random, all cells) QoE, mean rate,
cell-edge rate and share below the rate floor, ``spread/<network>/<policy>/<figure>``; the planner's
and the best policy's QoE gain and cell-edge ratio over random per network, and their medians per
set (``spread_training_median_planner_qoe_gain``, ``spread_unseen_...``, ``spread_all_...``).

With the shipped study (``study.SHIPPED_STUDY``: experts, demos and trained models), the
evaluate stage runs on every training and unseen task (``study_episodes`` episodes per
policy and task, common random numbers) and ``scoring.headline``'s figures are added:
``promptdt_vs_multitask_ppo``, ``promptdt_beats_baselines``, ``planner_vs_multitask_ppo``,
``qoe_promptdt-<size>``, ``qoe_non_decreasing_with_size``, ``normalised_qoe_<policy>``
(training tasks); on the unseen tasks ``unseen_normalised_qoe_<policy>``,
``unseen_median_normalised_qoe_<policy>``, ``unseen_normalised_vs_expert``,
``unseen_normalised_vs_multitask_ppo``, ``unseen_normalised_non_decreasing_with_size``,
``unseen_min_qoe_gap``, and the raw-QoE ratios ``unseen_qoe_vs_expert`` and
``unseen_qoe_vs_multitask_ppo``, each with random's ratio beside it (``..._random``); and
``study_evaluate_seconds``.

With the joint-transmission study trained (``study.JOINT_STUDY``, ``examples/comp_joint.toml``), the
same evaluation on its 10 training and 8 unseen networks, every figure prefixed ``joint_``; on issue
25's scale (0 random, 1 the network's own expert): ``joint_promptdt_vs_expert_unseen`` (and
``_worst``), ``joint_promptdt_vs_multitask_ppo_unseen`` (and ``_worst``),
``joint_expert_normalised_qoe_<policy>``, ``joint_unseen_expert_normalised_qoe_<policy>``,
``joint_unseen_expert_normalised_non_decreasing_with_size``, with every policy's raw QoE
(``joint_raw_qoe_<policy>``, ``joint_unseen_raw_qoe_<policy>``) and the operators' rate figures
(``joint_[unseen_]mean_rate_mbps_<policy>``, ``..._edge_rate_mbps_<policy>``, ``..._below_floor_<policy>``,
``qoe.rate_figures``, mean over the networks) beside them. With the study's earlier
DAgger stages exported (``dagger_ablation``), each PromptDT before its DAgger rounds and after each on the
same scale: ``joint_dagger_<model>_r<stage>_<split>`` and ``..._worst``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import pandas as pd

from decisions.core.bench_row import Row
from decisions.core.progress import Progress, silent
from decisions.telecom.comp import dagger_ablation, parity
from decisions.telecom.comp.catalog import JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS
from decisions.telecom.comp.heuristics import max_snr_single
from decisions.telecom.comp.network import large
from decisions.telecom.comp.study import JOINT_STUDY, SHIPPED_STUDY, StudyBudget, evaluate, headline
from decisions.telecom.comp.tasks import TRAINING_TASKS, UNSEEN_TASKS, Task

__all__ = [
    "PARITY_CONFIDENCE",
    "PARITY_EPISODES",
    "parity_figures",
    "parity_summary",
    "run_bench",
    "sim_steps_per_second",
    "sim_steps_per_second_1env",
    "study_figures",
]

PARITY_EPISODES = {"small": 96, "medium": 16, "large": 8}
"""mobile-env episodes per scenario and policy in the parity figures (mobile-env is slow: a
medium episode costs ~2.6 small ones, a large one ~7.5; ``parity_seconds`` reports the time).
Sized so that, with our 512 episodes and the return spread of each scenario (standard deviation
~13 and ~9 on small, ~5 and ~4 on medium, ~3.5 and ~3 on large for max-SNR and random), the
Welch 99 % interval of the difference is about +-4 return units: equivalent simulators pass the
8-unit tolerance with probability above 0.99 in each pair."""
PARITY_CONFIDENCE = 0.99
"""Confidence level of the parity intervals (and of the equivalence verdict)."""


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


def sim_steps_per_second_1env(episodes: int = 20, seed: int = 0) -> float:
    """Steps per second of one ``CompEnv`` on the large network with the max-SNR policy.

    Each episode is one call of the jitted, unbatched episode scan (``parity.single_episode_fn``:
    reset, then policy and step inside a ``lax.scan``), waited for before the next.

    Args:
        episodes: episodes timed (one more, the first, compiles and is not timed).
        seed: seed of the episodes.

    Returns:
        ``episodes * episode_length / seconds``.
    """
    params = large()
    steps = int(params.episode_length)
    fn = parity.single_episode_fn(max_snr_single, steps)
    keys = jax.random.split(jax.random.PRNGKey(seed), episodes + 1)
    fn(keys[0], params).block_until_ready()
    start = time.perf_counter()
    for key in keys[1:]:
        fn(key, params).block_until_ready()
    return episodes * steps / (time.perf_counter() - start)


def study_figures(
    episodes: int = 32,
    progress: Progress | None = None,
    *,
    folder: Path = SHIPPED_STUDY,
    tasks: tuple[Sequence[Task], Sequence[Task]] = (TRAINING_TASKS, UNSEEN_TASKS),
    prefix: str = "",
) -> dict[str, float]:
    """A finished study's evaluation on its training and unseen tasks and its headline figures, names
    prefixed with ``prefix`` (see the module docstring; by default the shipped study)."""
    figures, _ = evaluated_study(episodes, progress, folder=folder, tasks=tasks)
    return {f"{prefix}{name}": value for name, value in figures.items()}


def evaluated_study(
    episodes: int,
    progress: Progress | None = None,
    *,
    folder: Path = SHIPPED_STUDY,
    tasks: tuple[Sequence[Task], Sequence[Task]] = (TRAINING_TASKS, UNSEEN_TASKS),
) -> tuple[dict[str, float], pd.DataFrame]:
    """``study_figures`` unprefixed, with the evaluation table they come from."""
    start = time.perf_counter()
    budget = StudyBudget(eval_episodes=episodes)
    table = evaluate(folder, *tasks, budget, progress or (lambda *_: None))
    figures: dict[str, float] = {"study_evaluate_seconds": time.perf_counter() - start}
    sizes = tuple(s for s in budget.sizes if f"promptdt-{s}" in set(table.policy))
    figures.update(headline(table, sizes))
    return figures, table


def study_finished(folder: Path) -> bool:
    """Whether ``folder`` holds a trained study (its multi-task PPO and at least one PromptDT)."""
    models = folder / "models"
    return (models / "multitask_ppo.msgpack").exists() and any(models.glob("promptdt-*.msgpack"))


def parity_figures(
    scenario: str, policy: str, returns: dict[str, Any], steps: dict[str, float]
) -> dict[str, Any]:
    """The ``parity/<scenario>/<policy>/...`` figures of one pair (see the module docstring).

    Args:
        scenario: the scenario's name.
        policy: the policy's name.
        returns: ``parity.compare`` (or ``compare_samples``) of the pair.
        steps: ``parity.step_parity`` of the pair.

    Returns:
        The pair's figures, ``pass`` included.
    """
    prefix = f"parity/{scenario}/{policy}"
    figures: dict[str, Any] = {}
    for sim_name in ("mobile_env", "sim"):
        summary = returns[sim_name]
        figures[f"{prefix}/{sim_name}_mean_return"] = summary["mean"]
        figures[f"{prefix}/{sim_name}_ci99_low"] = summary["ci_low"]
        figures[f"{prefix}/{sim_name}_ci99_high"] = summary["ci_high"]
        figures[f"{prefix}/{sim_name}_episodes"] = int(summary["n"])
    figures[f"{prefix}/diff"] = returns["diff"]
    figures[f"{prefix}/diff_ci99_low"], figures[f"{prefix}/diff_ci99_high"] = returns["diff_ci"]
    for key in ("welch_t", "p_value", "z", "p_value_z"):
        figures[f"{prefix}/{key}"] = returns[key]
    figures[f"{prefix}/returns_pass"] = bool(returns["pass"])
    figures[f"{prefix}/step_max_reward_error"] = steps["max_reward_error"]
    figures[f"{prefix}/step_connection_mismatches"] = int(steps["connection_mismatches"])
    figures[f"{prefix}/step_obs_max_error"] = steps["obs_max_error"]
    for key in (
        "mobility_max_position_error_m",
        "mobility_max_reward_error",
        "mobility_obs_max_error",
        "roam_area_error_m",
    ):
        figures[f"{prefix}/{key}"] = steps[key]
    figures[f"{prefix}/mobility_connection_mismatches"] = int(steps["mobility_connection_mismatches"])
    figures[f"{prefix}/step_pass"] = parity.step_parity_passes(steps)
    figures[f"{prefix}/pass"] = bool(returns["pass"]) and figures[f"{prefix}/step_pass"]
    return figures


def parity_summary(figures: dict[str, Any]) -> dict[str, Any]:
    """The overall parity figures over every pair's ``parity/<scenario>/<policy>/...`` figures.

    Args:
        figures: figures holding at least one pair's (``parity_figures``).

    Returns:
        ``parity_pass`` (every pair's ``pass``), ``parity_max_step_reward_error``,
        ``parity_max_mobility_position_error_m``, ``parity_max_mobility_reward_error`` (the largest
        over the pairs) and ``parity_connection_mismatches`` (step-level and mobility, summed).
    """

    def pairs(name: str) -> list[Any]:
        return [v for k, v in figures.items() if k.startswith("parity/") and k.endswith(f"/{name}")]

    return {
        "parity_pass": all(pairs("pass")),
        "parity_max_step_reward_error": max(pairs("step_max_reward_error")),
        "parity_max_mobility_position_error_m": max(pairs("mobility_max_position_error_m")),
        "parity_max_mobility_reward_error": max(pairs("mobility_max_reward_error")),
        "parity_connection_mismatches": sum(pairs("step_connection_mismatches"))
        + sum(pairs("mobility_connection_mismatches")),
    }


def run_bench(
    progress: Progress | None = None,
    *,
    num_envs: int = 1024,
    parity_episodes: dict[str, int] | None = None,
    sim_episodes: int = 512,
    policies: tuple[str, ...] = ("max_snr", "random"),
    seed: int = 0,
    study_episodes: int = 32,
    single_env_episodes: int = 20,
    throughput_episodes: int = 2,
    parity_tolerance: float = parity.RETURN_TOLERANCE,
    spread_episodes: int = 16,
    throughput: bool = True,
    joint_study_episodes: int = 32,
) -> dict[str, Any]:
    """Measure simulator speed against mobile-env, parity with it, and the shipped study's figures.

    Args:
        progress: optional ``(task, done, total)`` callback.
        num_envs: networks stepped together for ``sim_steps_per_second``.
        parity_episodes: mobile-env episodes per scenario (default ``PARITY_EPISODES``; ``{}``: no parity).
        sim_episodes: ``CompEnv`` episodes per scenario and policy.
        policies: names of ``heuristics.POLICIES`` to compare.
        seed: base seed.
        study_episodes: evaluation episodes per policy and task of the shipped study (0: skip).
        single_env_episodes: episodes timed for ``sim_steps_per_second_1env``.
        throughput_episodes: mobile-env episodes timed for ``mobile_env_steps_per_second``.
        parity_tolerance: equivalence margin of ``returns_pass``, in return units.
        spread_episodes: episodes per policy and network of the joint-transmission study's
            spread (``spread.spread_figures``; 0: skip).
        throughput: measure the simulators' speed (False with ``parity_episodes={}``,
            ``study_episodes=0`` and ``joint_study_episodes=0`` runs the spread alone, a part to merge
            into a stored result).
        joint_study_episodes: evaluation episodes per policy and network of the joint-transmission
            study (``JOINT_STUDY``, when it is trained; 0: skip).

    Returns:
        A flat dict of figures (see the module docstring).
    """
    report = progress or (lambda task, done, total: None)
    episodes = dict(PARITY_EPISODES if parity_episodes is None else parity_episodes)
    available = parity.mobile_env_installed()
    figures: dict[str, Any] = {}
    if spread_episodes:
        from decisions.telecom.comp.spread import spread_figures

        report("spread of the joint-transmission networks", 0, 1)
        figures.update(spread_figures(spread_episodes, seed))
        report("spread of the joint-transmission networks", 1, 1)
    if study_episodes and study_finished(SHIPPED_STUDY):
        figures.update(study_figures(study_episodes, progress))
    if joint_study_episodes and study_finished(JOINT_STUDY):
        joint, evaluation = evaluated_study(joint_study_episodes, progress, folder=JOINT_STUDY,
                                            tasks=(JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS))  # fmt: skip
        if dagger_ablation.has_stages(JOINT_STUDY):
            table = dagger_ablation.score_stages(JOINT_STUDY, JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS,
                                                 joint_study_episodes, progress or silent, evaluation)  # fmt: skip
            joint.update(dagger_ablation.stage_figures(table))
        figures.update({f"joint_{k}": v for k, v in joint.items()})
    if not throughput:
        return {**figures, **(_parity_part(episodes, policies, sim_episodes, seed, parity_tolerance, report)
                              if available else {})}
    figures.update({"jax_backend": jax.default_backend(), "num_envs": num_envs, "mobile_env_available": available})
    report("CompEnv throughput", 0, 2)
    figures["sim_steps_per_second"] = sim_steps_per_second(num_envs, seed)
    report("CompEnv throughput", 1, 2)
    figures["sim_steps_per_second_1env"] = sim_steps_per_second_1env(single_env_episodes, seed)
    report("CompEnv throughput", 2, 2)

    if not available:
        for key in ("mobile_env_steps_per_second", "sim_throughput_ratio_vs_mobile_env",
                    "sim_1env_speed_ratio_vs_mobile_env"):
            figures[key] = math.nan
        return figures

    report("mobile-env throughput", 0, 1)
    seeds = list(range(seed, seed + throughput_episodes))
    _, rate = parity.mobile_env_returns("large", max_snr_single, seeds, time_steps=True)
    report("mobile-env throughput", 1, 1)
    figures["mobile_env_steps_per_second"] = rate
    figures["sim_throughput_ratio_vs_mobile_env"] = figures["sim_steps_per_second"] / rate
    figures["sim_1env_speed_ratio_vs_mobile_env"] = figures["sim_steps_per_second_1env"] / rate
    figures.update(_parity_part(episodes, policies, sim_episodes, seed, parity_tolerance, report))
    return figures


def _parity_part(
    episodes: dict[str, int], policies: tuple[str, ...], sim_episodes: int, seed: int, tolerance: float,
    report: Progress,
) -> dict[str, Any]:
    """The parity figures of every scenario and policy and their summary (none without scenarios or policies)."""
    figures: dict[str, Any] = {}
    total = len(episodes) * len(policies)
    if not total:
        return figures
    start, done, mobile_episodes = time.perf_counter(), 0, 0
    report("parity", done, total)
    for scenario, n_mobile in episodes.items():
        for name in policies:
            returns = parity.compare(
                scenario, name, n_mobile=n_mobile, n_sim=sim_episodes, seed=seed,
                level=PARITY_CONFIDENCE, tolerance=tolerance,
            )
            steps = parity.step_parity(scenario, name, seed=seed)
            figures.update(parity_figures(scenario, name, returns, steps))
            mobile_episodes += n_mobile + 1
            done += 1
            report("parity", done, total)
    figures.update(parity_summary(figures))
    figures["parity_tolerance"] = float(tolerance)
    figures["parity_confidence"] = PARITY_CONFIDENCE
    figures["parity_mobile_env_episodes"] = mobile_episodes
    figures["parity_seconds"] = time.perf_counter() - start
    return figures


SMOKE_BUDGET: dict[str, Any] = {
    "num_envs": 8,
    "parity_episodes": {},
    "sim_episodes": 2,
    "study_episodes": 0,
    "joint_study_episodes": 0,
    "spread_episodes": 0,
    "single_env_episodes": 2,
    "throughput_episodes": 1,
}
"""A benchmark that runs in seconds (the platform's conformance test): speed only, no parity."""


def _parity_row(scenario: str, policy: str) -> Row:
    """The README row of one scenario and policy's return parity."""
    p = f"parity/{scenario}/{policy}"
    return Row(
        f"parity, {scenario}, {policy.replace('_', '-')}: mean return mobile-env (episodes) / ours (episodes); "
        "ours minus mobile-env, 99 % CI; pass",
        f"{{{p}/mobile_env_mean_return:.2f}} ({{{p}/mobile_env_episodes}}) / {{{p}/sim_mean_return:.2f}} "
        f"({{{p}/sim_episodes}}); {{{p}/diff:+.2f}} [{{{p}/diff_ci99_low:+.2f}}, {{{p}/diff_ci99_high:+.2f}}]; "
        f"{{{p}/pass}}",
        optional=True,
    )


_RATE_POLICIES = (("promptdt-large", "PromptDT-large"), ("multitask_ppo", "multi-task PPO"), ("expert", "own expert"),
                  ("max_snr", "max-SNR"), ("random", "random"))
"""The policies of the joint study's rate rows, with their labels."""

README_ROWS: tuple[Row, ...] = (
    Row(
        "joint-transmission networks before any training ({spread_episodes:.0f} episodes): greedy planner's QoE over "
        "random's - 1, median training / unseen networks (smallest of all); its cell-edge rate / random's, median "
        "training / unseen",
        "{spread_training_median_planner_qoe_gain:.2f} / {spread_unseen_median_planner_qoe_gain:.2f} "
        "({spread_all_min_planner_qoe_gain:.2f}); {spread_training_median_planner_edge_ratio:.2f} / "
        "{spread_unseen_median_planner_edge_ratio:.2f}",
        optional=True,
    ),
    Row(
        "CompEnv steps/s, large scenario (13 cells, 30 users), max-SNR: vmapped envs / 1 env (JAX backend)",
        "{sim_steps_per_second:,.0f} ({num_envs} envs) / {sim_steps_per_second_1env:,.0f} ({jax_backend})",
    ),
    Row(
        "mobile-env steps/s, same scenario, one Python env (`env.step` alone); "
        "throughput ratio (vmapped envs vs 1); one env vs one env",
        "{mobile_env_steps_per_second:.1f}; {sim_throughput_ratio_vs_mobile_env:,.0f}x ({num_envs} vs 1); "
        "{sim_1env_speed_ratio_vs_mobile_env:.1f}x",
        optional=True,
    ),
    *(_parity_row(s, p) for s in PARITY_EPISODES for p in ("max_snr", "random")),
    Row(
        "step level (from mobile-env's states) and mobility (free-running episode): largest reward error; "
        "largest position error; connection mismatches",
        "{parity_max_step_reward_error:.1e} / {parity_max_mobility_reward_error:.1e}; "
        "{parity_max_mobility_position_error_m:.1e} m; {parity_connection_mismatches}",
        optional=True,
    ),
    Row(
        "every parity check passes (whole 99 % CI of each return difference within the tolerance); "
        "tolerance; mobile-env episodes; parity wall time",
        "{parity_pass}; +-{parity_tolerance:.0f} return units; {parity_mobile_env_episodes}; {parity_seconds:.0f} s",
        optional=True,
    ),
    Row(
        "training tasks, normalised QoE (0 random, 1 best of expert and heuristics): "
        "PromptDT large / medium / small; multi-task PPO; PromptDT / multi-task PPO",
        "{normalised_qoe_promptdt-large:.2f} / {normalised_qoe_promptdt-medium:.2f} / "
        "{normalised_qoe_promptdt-small:.2f}; {normalised_qoe_multitask_ppo:.2f}; {promptdt_vs_multitask_ppo:.3f}",
        optional=True,
    ),
    Row(
        "unseen tasks, normalised QoE, mean (median): PromptDT large / medium / small; multi-task PPO; max-SNR",
        "{unseen_normalised_qoe_promptdt-large:.2f} ({unseen_median_normalised_qoe_promptdt-large:.2f}) / "
        "{unseen_normalised_qoe_promptdt-medium:.2f} ({unseen_median_normalised_qoe_promptdt-medium:.2f}) / "
        "{unseen_normalised_qoe_promptdt-small:.2f} ({unseen_median_normalised_qoe_promptdt-small:.2f}); "
        "{unseen_normalised_qoe_multitask_ppo:.2f} ({unseen_median_normalised_qoe_multitask_ppo:.2f}); "
        "{unseen_normalised_qoe_max_snr:.2f} ({unseen_median_normalised_qoe_max_snr:.2f})",
        optional=True,
    ),
    Row(
        "unseen tasks, best PromptDT / expert: normalised; raw QoE (random's raw ratio); "
        "smallest random-to-best QoE gap",
        "{unseen_normalised_vs_expert:.3f}; {unseen_qoe_vs_expert:.3f} ({unseen_qoe_vs_expert_random:.3f}); "
        "{unseen_min_qoe_gap:.4f}",
        optional=True,
    ),
    Row(
        "joint-transmission study, unseen networks, score 0 random / 1 the network's own expert, mean (worst "
        "network): best PromptDT; PromptDT / multi-task PPO; max-SNR's own score",
        "{joint_promptdt_vs_expert_unseen:.3f} ({joint_promptdt_vs_expert_unseen_worst:.3f}); "
        "{joint_promptdt_vs_multitask_ppo_unseen:.3f} ({joint_promptdt_vs_multitask_ppo_unseen_worst:.3f}); "
        "{joint_unseen_expert_normalised_qoe_max_snr:.3f}",
        optional=True,
    ),
    Row(
        "joint study, unseen networks, same score: PromptDT small / medium / large (non-decreasing); plain DT (no "
        "prompt); multi-task PPO; greedy planner (reads the state); "
        "raw QoE of PromptDT-large / expert / multi-task PPO / max-SNR / random",
        "{joint_unseen_expert_normalised_qoe_promptdt-small:.3f} / {joint_unseen_expert_normalised_qoe_promptdt-medium:.3f}"
        " / {joint_unseen_expert_normalised_qoe_promptdt-large:.3f} "
        "({joint_unseen_expert_normalised_non_decreasing_with_size:.0f}); {joint_unseen_expert_normalised_qoe_dt:.3f}; "
        "{joint_unseen_expert_normalised_qoe_multitask_ppo:.3f}; {joint_unseen_expert_normalised_qoe_planner:.2f}; "
        "{joint_unseen_raw_qoe_promptdt-large:.3f} / "
        "{joint_unseen_raw_qoe_expert:.3f} / {joint_unseen_raw_qoe_multitask_ppo:.3f} / "
        "{joint_unseen_raw_qoe_max_snr:.3f} / {joint_unseen_raw_qoe_random:.3f}",
        optional=True,
    ),
    *(
        Row(
            f"joint study, DAgger, PromptDT {size}: same score (worst network) before its DAgger rounds -> after "
            "round 1 -> after round 2, on the unseen networks; on the training networks",
            "; ".join(
                " -> ".join(f"{{joint_dagger_promptdt-{size}_r{r}_{split}:.2f}} "
                            f"({{joint_dagger_promptdt-{size}_r{r}_{split}_worst:.2f}})" for r in range(3))
                for split in ("unseen", "train")
            ),
            optional=True,  # a size whose earlier stages were not kept has no row
        )
        for size in ("small", "medium", "large")
    ),
    Row(
        "joint study, training networks: PromptDT / multi-task PPO (0 random, 1 best of expert and heuristics); "
        "score 0 random / 1 own expert of PromptDT large / medium / small, multi-task PPO, max-SNR; raw QoE of "
        "PromptDT-large / multi-task PPO / random",
        "{joint_promptdt_vs_multitask_ppo:.3f}; {joint_expert_normalised_qoe_promptdt-large:.2f} / "
        "{joint_expert_normalised_qoe_promptdt-medium:.2f} / {joint_expert_normalised_qoe_promptdt-small:.2f}, "
        "{joint_expert_normalised_qoe_multitask_ppo:.2f}, {joint_expert_normalised_qoe_max_snr:.2f}; "
        "{joint_raw_qoe_promptdt-large:.3f} / {joint_raw_qoe_multitask_ppo:.3f} / {joint_raw_qoe_random:.3f}",
        optional=True,
    ),
    *(
        Row(
            f"joint study, {split} networks, operators' figures, mean over the networks: user rate / cell-edge rate (each "
            "network's 5th percentile of the users' mean rates), Mbit/s, share of user-steps below 1 Mbit/s; "
            + "; ".join(label for _, label in _RATE_POLICIES),
            "; ".join(f"{{joint_{prefix}mean_rate_mbps_{p}:.1f}} / {{joint_{prefix}edge_rate_mbps_{p}:.2f}}, "
                       f"{{joint_{prefix}below_floor_{p}:.3f}}" for p, _ in _RATE_POLICIES),  # fmt: skip
            optional=True,
        )
        for split, prefix in (("unseen", "unseen_"), ("training", ""))
    ),
)
"""The README's CoMP table (``decisions bench report``): the rows of mobile-env, of the shipped study and
of the joint-transmission study are left out of a run without them."""
