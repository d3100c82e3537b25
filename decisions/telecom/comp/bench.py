"""Benchmark: ``CompEnv`` speed against mobile-env, parity with mobile-env, the joint study's networks' spread
and the shipped studies' figures.

``run_bench`` returns a flat dict; every figure is defined in ``data/comp/BENCH_FIGURES.md``.
Needs mobile-env for the figures that name it: without it those speed figures are NaN, the parity
figures absent and ``mobile_env_available`` False.
"""

from __future__ import annotations

import math
import time
from typing import Any

import jax

from decisions.core.bench_row import Row
from decisions.core.progress import Progress
from decisions.telecom.comp.policies.heuristics import max_snr_single
from decisions.telecom.comp.sim.network import large
from decisions.telecom.comp.study import parity
from decisions.telecom.comp.study.figures import found, joint_study_figures, study_figures, study_finished
from decisions.telecom.comp.study.folder import shipped_study
from decisions.telecom.comp.study.parity_figures import PARITY_EPISODES, parity_part

__all__ = ["README_ROWS", "SMOKE_BUDGET", "run_bench", "sim_steps_per_second", "sim_steps_per_second_1env"]


def sim_steps_per_second(num_envs: int = 1024, seed: int = 0) -> float:
    """Steps per second of ``CompEnv`` on ``num_envs`` large networks with the max-SNR policy.

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
    """Measure simulator speed against mobile-env, parity with it, the spread and the shipped studies' figures.

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
        spread_episodes: episodes per policy and network of the joint study's spread (0: skip).
        throughput: measure the simulators' speed (False: the other parts alone, to merge into a stored result).
        joint_study_episodes: evaluation episodes per policy and network of the joint study (0: skip).

    Returns:
        A flat dict of figures (``data/comp/BENCH_FIGURES.md``).
    """
    report = progress or (lambda task, done, total: None)
    episodes = dict(PARITY_EPISODES if parity_episodes is None else parity_episodes)
    available = parity.mobile_env_installed()
    figures: dict[str, Any] = _spread(spread_episodes, seed, report) if spread_episodes else {}
    shipped = found(shipped_study)
    if study_episodes and shipped is not None and study_finished(shipped):
        figures.update(study_figures(study_episodes, progress, folder=shipped))
    figures.update(joint_study_figures(joint_study_episodes, progress))
    if throughput:
        figures.update(_throughput(num_envs, seed, single_env_episodes, throughput_episodes, available, report))
    if available:
        figures.update(parity_part(episodes, policies, sim_episodes, seed, parity_tolerance, report))
    return figures


def _spread(episodes: int, seed: int, report: Progress) -> dict[str, Any]:
    """The joint study's networks' spread (``spread.spread_figures``)."""
    from decisions.telecom.comp.study.spread import spread_figures

    report("spread of the joint-transmission networks", 0, 1)
    figures = spread_figures(episodes, seed)
    report("spread of the joint-transmission networks", 1, 1)
    return figures


def _throughput(
    num_envs: int, seed: int, single_env_episodes: int, throughput_episodes: int, available: bool, report: Progress
) -> dict[str, Any]:
    """The speed figures of ``CompEnv`` and (when ``available``) of mobile-env, with their ratios."""
    figures: dict[str, Any] = {"jax_backend": jax.default_backend(), "num_envs": num_envs,
                               "mobile_env_available": available}  # fmt: skip
    report("CompEnv throughput", 0, 2)
    figures["sim_steps_per_second"] = sim_steps_per_second(num_envs, seed)
    report("CompEnv throughput", 1, 2)
    figures["sim_steps_per_second_1env"] = sim_steps_per_second_1env(single_env_episodes, seed)
    report("CompEnv throughput", 2, 2)
    if not available:
        names = ("mobile_env_steps_per_second", "sim_throughput_ratio_vs_mobile_env", "sim_1env_speed_ratio_vs_mobile_env")
        return {**figures, **dict.fromkeys(names, math.nan)}
    report("mobile-env throughput", 0, 1)
    _, rate = parity.mobile_env_returns("large", max_snr_single, list(range(seed, seed + throughput_episodes)),
                                        time_steps=True)  # fmt: skip
    report("mobile-env throughput", 1, 1)
    figures["mobile_env_steps_per_second"] = rate
    figures["sim_throughput_ratio_vs_mobile_env"] = figures["sim_steps_per_second"] / rate
    figures["sim_1env_speed_ratio_vs_mobile_env"] = figures["sim_steps_per_second_1env"] / rate
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
