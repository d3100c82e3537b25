"""Command line: random, max-SNR, the planner and PPO experts with each warm start on one task (mean QoE).

``python -m decisions.telecom.comp.policies.compare_warm_starts c7-u15-resource_fair-me-jt --warm-starts none,planner``
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import jax

from decisions.telecom.comp.policies.experts import train_expert
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES
from decisions.telecom.comp.policies.planner import GreedyPlanner
from decisions.telecom.comp.policies.presets import WARM_STARTS
from decisions.telecom.comp.policies.rollouts import rollout, task_policy
from decisions.telecom.comp.sim.catalog import task_by_name


def main(argv: Sequence[str] | None = None) -> int:
    """Print random, max-SNR, the planner and PPO experts with each warm start on one task (mean QoE)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("task", help="a catalogue task's name, e.g. c7-u15-resource_fair-me-jt")
    parser.add_argument("--steps", type=int, default=600_000, help="PPO steps of each expert")
    parser.add_argument("--warm-starts", default="none,max_snr,planner",
                        help=f"comma-separated, of {', '.join(WARM_STARTS)}: one expert each")
    parser.add_argument("--episodes", type=int, default=16, help="evaluation episodes")
    args = parser.parse_args(argv)
    starts = args.warm_starts.split(",")
    if not set(starts) <= set(WARM_STARTS):
        parser.error(f"--warm-starts: choose from {', '.join(WARM_STARTS)}")
    task = task_by_name(args.task)
    keys = jax.random.split(jax.random.PRNGKey(1234), args.episodes)
    policies: dict[str, Any] = {"random": SERVING_SET_POLICIES["random"], "max_snr": SERVING_SET_POLICIES["max_snr"],
                                "planner": GreedyPlanner()}
    for warm in starts:
        result = train_expert(task, args.steps, warm_start=warm)
        policies[f"expert ({warm})"] = task_policy(result, observe_links=False)
    for name, policy in policies.items():
        print(f"{name:>20}: mean QoE {float(rollout(task, policy, keys)['qoe'].mean()):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
