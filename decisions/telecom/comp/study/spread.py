"""The spread: how much the choice of serving cells matters on a network, before any training.

Per network, the greedy planner, max-SNR, top-2, random and all-cells serving sets on common episodes,
with the figures operators read (QoE, mean and cell-edge rate, share below a rate floor);
``spread_summary`` gives the best non-random policy against random; ``spread_figures`` the joint study's
networks as flat figures. ``python -m decisions.telecom.comp.study.spread --help`` prints the tables.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES, fixed_set_size
from decisions.telecom.comp.policies.planner import GreedyPlanner
from decisions.telecom.comp.policies.rollouts import rollout
from decisions.telecom.comp.sim.catalog import (
    JOINT_CANDIDATE_TASKS,
    JOINT_TRAINING_TASKS,
    JOINT_UNSEEN_TASKS,
    TRAINING_TASKS,
    UNSEEN_TASKS,
)
from decisions.telecom.comp.sim.constants import MAX_CELLS
from decisions.telecom.comp.sim.network import NetworkParams, as_joint, scaled
from decisions.telecom.comp.sim.qoe import RATE_COLUMNS, RATE_FLOOR_MBPS, rate_figures

__all__ = [
    "RATE_MODELS",
    "SPREAD_POLICIES",
    "policy_figures",
    "set_size_shares",
    "spread_figures",
    "spread_summary",
    "spread_table",
    "with_rate_model",
]

SPREAD_POLICIES: dict[str, Any] = {"planner": GreedyPlanner(), **SERVING_SET_POLICIES, "all_cells": fixed_set_size(MAX_CELLS)}
"""The policies compared: the planner, max-SNR, top-2, random serving sets and every user served by every cell."""

def policy_figures(out: Mapping[str, np.ndarray], user_mask: np.ndarray, floor_mbps: float) -> dict[str, float]:
    """The figures of one policy's episodes (module docstring).

    Returns:
        ``qoe`` and ``qoe.rate_figures``' ``mean_rate_mbps``, ``edge_rate_mbps``, ``below_floor``.
    """
    return {"qoe": float(np.mean(out["qoe"])), **rate_figures(out["user_rate"], user_mask, floor_mbps)}


def spread_table(
    networks: Mapping[str, NetworkParams],
    *,
    episodes: int = 16,
    seed: int = 0,
    floor_mbps: float = RATE_FLOOR_MBPS,
    policies: Mapping[str, Any] | None = None,
    own_policies: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Every policy on every network, the same episodes for all: one row per (network, policy).

    Raises:
        ValueError: ``episodes`` below 1 or ``floor_mbps`` not positive.
    """
    if int(episodes) != episodes or episodes < 1:
        raise ValueError(f"episodes: must be a positive integer, got {episodes!r}")
    if not np.isfinite(floor_mbps) or floor_mbps <= 0:
        raise ValueError(f"floor_mbps: must be positive, got {floor_mbps!r}")
    keys = jax.random.split(jax.random.PRNGKey(seed), int(episodes))
    rows = []
    for name, net in networks.items():
        mask = np.asarray(net.user_mask)
        played = {**(policies or SPREAD_POLICIES), **(own_policies or {}).get(name, {})}
        for pname, policy in played.items():
            out = rollout(net, policy, keys, user_rates=True)
            rows.append({"network": name, "policy": pname, **policy_figures(out, mask, floor_mbps)})
    return pd.DataFrame(rows)


def spread_summary(table: pd.DataFrame, baseline: str = "random") -> pd.DataFrame:
    """Per network, the best non-baseline policy on QoE and on the cell-edge rate against ``baseline``.

    Returns:
        One row per network: ``best_qoe_policy``, ``qoe_gain`` (best / baseline - 1),
        ``best_edge_policy``, ``edge_ratio`` (best / baseline; inf when the baseline's is 0),
        ``planner_qoe_gain`` and ``planner_edge_ratio`` when the planner is in the table.
    """
    def ratio(value: float, ref: float) -> float:
        return float(value / ref) if ref > 0 else float("inf")

    rows = []
    for name, group in table.groupby("network", sort=False):
        by = group.set_index("policy")
        base = by.loc[baseline]
        others = by.drop(index=baseline)
        best_q, best_e = others["qoe"].idxmax(), others["edge_rate_mbps"].idxmax()
        row = {"network": name, "best_qoe_policy": best_q, "qoe_gain": ratio(others.loc[best_q, "qoe"], base["qoe"]) - 1,
               "best_edge_policy": best_e,
               "edge_ratio": ratio(others.loc[best_e, "edge_rate_mbps"], base["edge_rate_mbps"])}
        if "planner" in by.index:
            row["planner_qoe_gain"] = ratio(by.loc["planner", "qoe"], base["qoe"]) - 1
            row["planner_edge_ratio"] = ratio(by.loc["planner", "edge_rate_mbps"], base["edge_rate_mbps"])
        rows.append(row)
    return pd.DataFrame(rows)


RATE_MODELS = ("parity", "sinr", "joint")
"""``parity``: mobile-env's (SNR, per-link rates summed); ``sinr``: the same with inter-cell
interference; ``joint``: joint transmission over 3GPP UMi NLOS path loss, QoE on Mbit/s
(``network.as_joint``)."""


def with_rate_model(net: NetworkParams, model: str, scale: float = 1.0) -> NetworkParams:
    """``net`` under one of ``RATE_MODELS``, its stations, map and user speed scaled by ``scale``.

    Raises:
        ValueError: an unknown model or a scale that is not positive.
    """
    if model not in RATE_MODELS:
        raise ValueError(f"model: must be one of {list(RATE_MODELS)}, got {model!r}")
    if model == "joint":
        return as_joint(net, scale)
    net = scaled(net, scale)
    return net if model == "parity" else net.replace(interference=jnp.asarray(True))


def set_size_shares(net: NetworkParams, policy: Any, episodes: int = 8, seed: int = 1) -> dict[int, float]:
    """The share of real user-steps ``policy`` gives each serving-set size (canonical actions), on ``net``."""
    keys = jax.random.split(jax.random.PRNGKey(seed), episodes)
    actions = rollout(net, policy, keys, record=True)["action"][:, :, np.asarray(net.user_mask, bool)]
    sizes, counts = np.unique(actions, return_counts=True)
    return {int(k): round(float(c) / actions.size, 3) for k, c in zip(sizes, counts, strict=True)}


def catalogue_networks(which: str, model: str, scale: float = 1.0) -> dict[str, NetworkParams]:
    """The catalogue's ``training``, ``unseen`` or ``all`` tasks as networks (``with_rate_model``), or the
    joint-transmission networks as they are (``model`` and ``scale`` unused): ``joint`` (every candidate),
    ``joint-training`` or ``joint-unseen`` (the second study's)."""
    joint = {"joint": JOINT_CANDIDATE_TASKS, "joint-training": JOINT_TRAINING_TASKS, "joint-unseen": JOINT_UNSEEN_TASKS}
    if which in joint:
        return {t.name: t.params() for t in joint[which]}
    tasks: Sequence[Any] = {"training": TRAINING_TASKS, "unseen": UNSEEN_TASKS,
                            "all": (*TRAINING_TASKS, *UNSEEN_TASKS)}[which]  # fmt: skip
    return {t.name: with_rate_model(t.params(), model, scale) for t in tasks}


def main(argv: Sequence[str] | None = None) -> int:
    """Print the spread table and its summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", choices=("training", "unseen", "all", "joint", "joint-training", "joint-unseen"), default="joint",
                        help="catalogue tasks under --model/--scale, or the joint-transmission candidates")
    parser.add_argument("--model", choices=RATE_MODELS, default="joint", help="the rate model")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply station spacing, map and user speed")
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--floor-mbps", type=float, default=RATE_FLOOR_MBPS)
    parser.add_argument("--expert-steps", type=int, default=0,
                        help="also train each network's PPO expert (the study's settings) on this many steps")
    parser.add_argument("--networks", default="", help="comma-separated names: only these of the task set")
    parser.add_argument("--experts-from", default="",
                        help="a study folder: also play each network's saved expert (experts/<network>.msgpack) where there is one")
    args = parser.parse_args(argv)
    networks = catalogue_networks(args.tasks, args.model, args.scale)
    if args.networks:
        wanted = args.networks.split(",")
        unknown = sorted(set(wanted) - set(networks))
        if unknown:
            parser.error(f"--networks: not in --tasks {args.tasks}: {', '.join(unknown)}")
        networks = {name: networks[name] for name in wanted}
    experts: dict[str, dict[str, Any]] = {}
    if args.expert_steps > 0 and not (args.tasks.startswith("joint") or (args.model == "parity" and args.scale == 1)):
        parser.error("--expert-steps: the experts train on the tasks as catalogued; use a joint task set or "
                     "--model parity --scale 1")
    if args.experts_from:
        from decisions.telecom.comp.policies.experts import expert_policy

        for name in networks:
            path = Path(args.experts_from) / "experts" / f"{name}.msgpack"
            if path.exists():
                experts[name] = {"expert": expert_policy(path)}
    if args.expert_steps > 0:
        from decisions.telecom.comp.policies.experts import train_expert
        from decisions.telecom.comp.sim.catalog import task_by_name

        for name in networks:
            experts[name] = {"expert": train_expert(task_by_name(name), args.expert_steps)}
    table = spread_table(networks, episodes=args.episodes, floor_mbps=args.floor_mbps, own_policies=experts)
    pd.set_option("display.width", 200)
    print(table.round(3).to_string(index=False))
    for figure in ("qoe", "edge_rate_mbps"):
        print(table.pivot(index="network", columns="policy", values=figure).round(3).to_string())
    summary = spread_summary(table)
    print(summary.round(3).to_string(index=False))
    print(f"median QoE gain {summary['qoe_gain'].median():.3f}, median edge ratio {summary['edge_ratio'].median():.2f}")
    for name, own in experts.items():
        if "expert" not in own:
            continue
        print(f"{name} expert: share of users given each serving-set size, {set_size_shares(networks[name], own['expert'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


STUDY_SETS: dict[str, Sequence[Any]] = {"training": JOINT_TRAINING_TASKS, "unseen": JOINT_UNSEEN_TASKS}
"""The joint-transmission study's networks whose spread ``spread_figures`` reports."""
SPREAD_FIGURES = ("qoe", *RATE_COLUMNS)
"""``policy_figures``' figures, per policy and network in ``spread_figures``."""


def spread_figures(episodes: int = 16, seed: int = 0, floor_mbps: float = RATE_FLOOR_MBPS) -> dict[str, float]:
    """The spread of the joint-transmission study's networks (``STUDY_SETS``) as flat figures.

    Returns:
        Per network and policy ``spread/<network>/<policy>/<figure>`` (``SPREAD_FIGURES``); per
        network ``spread/<network>/planner_qoe_gain``, ``.../planner_edge_ratio``,
        ``.../best_qoe_gain`` and ``.../best_edge_ratio`` (``spread_summary``); per set (``training``,
        ``unseen``, ``all``) the median over its networks of those four (``spread_<set>_median_<name>``)
        and the smallest planner QoE gain (``spread_<set>_min_planner_qoe_gain``); ``spread_episodes``.
    """
    names = {set_name: [t.name for t in tasks] for set_name, tasks in STUDY_SETS.items()}
    networks = {t.name: t.params() for tasks in STUDY_SETS.values() for t in tasks}
    table = spread_table(networks, episodes=episodes, seed=seed, floor_mbps=floor_mbps)
    summary = spread_summary(table).set_index("network")
    figures: dict[str, float] = {"spread_episodes": float(episodes)}
    for row in table.itertuples(index=False):
        for figure in SPREAD_FIGURES:
            figures[f"spread/{row.network}/{row.policy}/{figure}"] = float(getattr(row, figure))
    columns = {"planner_qoe_gain": "planner_qoe_gain", "planner_edge_ratio": "planner_edge_ratio",
               "best_qoe_gain": "qoe_gain", "best_edge_ratio": "edge_ratio"}  # fmt: skip
    for network, row in summary.iterrows():
        for name, column in columns.items():
            figures[f"spread/{network}/{name}"] = float(row[column])
    for set_name, members in {**names, "all": [n for group in names.values() for n in group]}.items():
        part = summary.loc[members]
        for name, column in columns.items():
            figures[f"spread_{set_name}_median_{name}"] = float(part[column].median())
        figures[f"spread_{set_name}_min_planner_qoe_gain"] = float(part["planner_qoe_gain"].min())
    return figures
