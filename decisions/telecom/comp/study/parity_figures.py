"""The parity figures of ``decisions bench comp``: ``parity/<scenario>/<policy>/...`` per pair and their summary."""

from __future__ import annotations

import time
from typing import Any

from decisions.core.progress import Progress
from decisions.telecom.comp.study import parity

__all__ = ["PARITY_CONFIDENCE", "PARITY_EPISODES", "parity_figures", "parity_part", "parity_summary"]

PARITY_EPISODES = {"small": 96, "medium": 16, "large": 8}
"""mobile-env episodes per scenario and policy in the parity figures (mobile-env is slow: a
medium episode costs ~2.6 small ones, a large one ~7.5; ``parity_seconds`` reports the time).
Sized so that, with our 512 episodes and the return spread of each scenario (standard deviation
~13 and ~9 on small, ~5 and ~4 on medium, ~3.5 and ~3 on large for max-SNR and random), the
Welch 99 % interval of the difference is about +-4 return units: equivalent simulators pass the
8-unit tolerance with probability above 0.99 in each pair."""
PARITY_CONFIDENCE = 0.99
"""Confidence level of the parity intervals (and of the equivalence verdict)."""


def parity_figures(
    scenario: str, policy: str, returns: dict[str, Any], steps: dict[str, float]
) -> dict[str, Any]:
    """The ``parity/<scenario>/<policy>/...`` figures of one pair (see the module docstring).

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


def parity_part(
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


