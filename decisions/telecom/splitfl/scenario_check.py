"""Check what a split-learning scenario allows before benching it: per-tier costs and a one-seed study."""

from __future__ import annotations

import argparse
import copy
import json
from typing import Any

import numpy as np
import pandas as pd

from decisions.telecom.splitfl import costs, model
from decisions.telecom.splitfl.bench import FASHION_SPEC, strategy_figures, with_default_tiers
from decisions.telecom.splitfl.devices import DeviceScenario
from decisions.telecom.splitfl.spec import TrainingSettings, prepare

MEAN_CPU_SHARE = 0.75
"""Mean free CPU share (background load uniform on [0.5, 1])."""


def tier_costs(arch: str, devices: DeviceScenario, training: TrainingSettings) -> pd.DataFrame:
    """One row per tier and split: the nominal round's time and its parts, energy, memory and fit."""
    table = model.make_net(arch).layer_table()
    splits = np.arange(1, len(table) + 1)
    clients = sum(t.clients for t in devices.tiers.values())
    rows = []
    for name, t in devices.tiers.items():
        spec = costs.ClientSpecs(*(np.array([v]) for v in (
            t.cpu_macs_per_s * MEAN_CPU_SHARE, t.link_mbps, t.downlink_mbps, t.latency_ms / 1e3, t.memory_mb,
            t.power_w_compute, t.power_w_tx, t.idle_w)))
        c = costs.split_costs(table, splits, training.batch_size, training.local_steps, spec,
                              devices.server_macs_per_s, concurrent=clients)
        for i, split in enumerate(splits):
            rows.append({"tier": name, "split": int(split), "round_s": c.round_time_s[i, 0],
                         "device_s": c.device_compute_s[i, 0], "uplink_s": c.uplink_s[i, 0],
                         "server_s": c.server_compute_s[i, 0], "sync_s": c.sync_s[i, 0], "energy_j": c.energy_j[i, 0],
                         "memory_mb": c.client_memory_mb[i, 0], "fits": bool(c.fits_memory[i, 0])})
    return pd.DataFrame(rows)


def reduced_spec(
    concentration: float, rounds: int = 40, seed: int = 0, training: dict[str, float] | None = None,
    agent: dict[str, float] | None = None, time_weights: list[float] | None = None,
) -> dict[str, Any]:
    """The bench's Fashion spec at ``concentration``, one seed, five fixed splits and the per-client agent
    (``training`` / ``agent``: settings of those sections to change, e.g. the learning rate, the reward's
    ``time_weight``; ``time_weights``: more per-client agents, one per reward weight on round time, named
    ``dqn_client_tw<w>``)."""
    spec = copy.deepcopy(FASHION_SPEC)
    spec["data"]["concentration"] = concentration
    spec["training"].update(rounds=rounds, seeds=[seed], **(training or {}))
    spec["agent"] = {"env_steps": 50_000, "modes": ["client"], **(agent or {})}
    spec["study"] = {"fixed_splits": [1, 4, 8, 12, 13], "random": False, "greedy": False, "committees": [], "decays": [],
                     "time_weights": time_weights or []}
    spec["job"] = {"name": "scenario-check"}
    return spec


def main() -> None:
    """Print the tier cost table, then (``--study``) the reduced study."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concentration", type=float, default=FASHION_SPEC["data"]["concentration"])
    parser.add_argument("--rounds", type=int, default=40, help="rounds of the reduced study")
    parser.add_argument("--seed", type=int, default=0, help="the reduced study's seed")
    parser.add_argument("--learning-rate", type=float, default=FASHION_SPEC["training"]["learning_rate"])
    parser.add_argument("--momentum", type=float, default=FASHION_SPEC["training"]["momentum"])
    parser.add_argument("--time-weight", type=float, default=1.0,
                        help="the agent reward's weight on round time / deadline (tune on seeds the bench does not use)")
    parser.add_argument("--time-weights", type=float, nargs="*", default=[],
                        help="also train and run a per-client agent for each of these time weights")
    parser.add_argument("--study", action="store_true", help="also run the one-seed reduced study")
    args = parser.parse_args()
    spec = reduced_spec(args.concentration, args.rounds, args.seed,
                        {"learning_rate": args.learning_rate, "momentum": args.momentum},
                        {"time_weight": args.time_weight}, args.time_weights)
    job = prepare(with_default_tiers(spec))
    pd.set_option("display.width", 250)
    print(tier_costs(job.arch.value, job.devices, job.training).round(2).to_string(index=False))
    if not args.study:
        return
    from decisions.telecom.splitfl.study import run_study

    study = run_study(job)
    print(json.dumps({k: round(v, 4) for k, v in {**study.headline, **strategy_figures(study)}.items()}, indent=1))
    print(study.runs.drop(columns=[c for c in study.runs if c.startswith("energy")]).to_string())
    print(f"centralised test accuracy {study.centralised}; test accuracy every 5 rounds:")
    for seed, histories in study.histories.items():
        for name, h in histories.items():
            print(f"seed {seed} {name:>10}: " + " ".join(f"{a:.3f}" for a in np.asarray(h.test_acc)[4::5])
                  + f"; final model, whole test set {h.final_test_acc:.3f}")
    for seed, histories in study.histories.items():
        for name, h in histories.items():
            if not name.startswith("dqn"):
                continue
            for r, c in np.argwhere(h.eligible & ~h.participated):
                why = "refused" if h.refused[r, c] else "timed out" if h.timed_out[r, c] else "died"
                print(f"seed {seed} {name}: round {r} client {c} split {h.splits[r, c]} {why}")


if __name__ == "__main__":
    main()
