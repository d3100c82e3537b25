"""``decisions bench splitfl``: the figures the split-point agent promises, measured.

Per dataset two studies: the independent-draw fleet, every strategy seeing the round's draws (the stored
figures' study), and (``server``) a fleet with persistence (``PERSISTENT_DEVICES``) where the per-client
agent and the fastest-split rule see only what the server knows (``server_view``), beside that rule
on the round's draws (the oracle bound); its figures are ``server_figures.deployable_figures``'.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from decisions.core.bench_row import Row, Target
from decisions.core.progress import Progress
from decisions.errors import InputError
from decisions.telecom.splitfl.spec import prepare
from decisions.telecom.splitfl.study import (
    SMOOTHING_WINDOW,
    Study,
    best_fixed,
    run_study,
    split_equivalence_max_err,
    vs_best_fixed,
)

_SERVER_STUDIES = (("digits", ""), ("Fashion-MNIST", "fashion_"))
"""Each dataset's server study: its name in the tables and the prefix of its figures."""


def _server_targets(dataset: str, prefix: str) -> tuple[Target, ...]:
    return (
        Target(f"{prefix}time_to_target_vs_best_deployable_rule", "<=", 0.9,
               f"{dataset}, server study: the agent's time to the target over the best deployable rule's"),
        Target(f"{prefix}dropout_rate_agent_vs_best_deployable_rule", "<=", 0.0,
               f"{dataset}, server study: the agent's dropouts minus the rule's"),
    )


TARGETS: tuple[Target, ...] = tuple(target for study in _SERVER_STUDIES for target in _server_targets(*study))
"""The bounds the stored bench is held to (the README's targets table)."""

SMOKE_BUDGET: dict[str, Any] = {
    "rounds": 2, "seeds": 1, "env_steps": 200, "fashion_rounds": 0, "ablations": False, "fixed_splits": [3, 9],
    "committee": 1, "server": False,
}
"""A benchmark that runs in seconds (the conformance test's): digits only, a few rounds, no ablations,
one DQN per agent instead of a committee."""

DIGITS_SPEC: dict[str, Any] = {
    "data": {"dataset": "digits", "concentration": 0.1},
    "training": {"local_steps": 10},
    "devices": {"round_deadline_s": 5.0, "link_jitter": 0.5},
}
"""The digits study (the example's settings)."""

FASHION_SPEC: dict[str, Any] = {
    "data": {"dataset": "fashion", "concentration": 0.1, "train_samples": 6_000, "test_samples": 1_000},
    "training": {"local_steps": 8, "learning_rate": 0.05, "momentum": 0.0, "target_share": 0.65},
    "devices": {"round_deadline_s": 30.0, "link_jitter": 0.5,
                "tiers": {"weak": {"clients": 4, "cpu_macs_per_s": 0.1e9, "memory_mb": 3, "battery_j": 300,
                                   "link_mbps": 20, "downlink_mbps": 20, "latency_ms": 10, "power_w_compute": 2.0,
                                   "power_w_tx": 1.5, "idle_w": 0.3, "recharge_w": 0.2}}},
}
"""The Fashion-MNIST study, sized for a 2-core CPU: 6,000 training images, 1,000 test images scoring every
round and all 10,000 scoring each run's final model, 8 local steps, plain SGD at 0.05, Dirichlet 0.1, 60
rounds, the target 65% of the centralised accuracy; the weak tier has 3 MB (docs/notes/splitfl.md)."""


PERSISTENT_DEVICES: dict[str, Any] = {
    "load_persistence": 0.8, "link_persistence": 0.8, "battery_fade": 0.1, "leave_prob": 0.02, "join_prob": 0.2,
}
"""The server study's fleet persistence (design values, ``devices.DeviceScenario``): background load and
links correlated 0.8 round to round, batteries losing 10% of their capacity per full discharge, a client
leaving with chance 0.02 a round and an empty slot filled with chance 0.2."""

BUDGET_TIER: dict[str, Any] = {
    "clients": 3, "cpu_macs_per_s": 0.2e9, "memory_mb": 256, "battery_j": 20_000, "link_mbps": 5, "downlink_mbps": 10,
    "latency_ms": 20, "power_w_compute": 3.0, "power_w_tx": 2.0, "idle_w": 0.4,
}
"""The server study's fourth tier, budget phones (design values): slow enough to compute and well enough
linked that their fastest split moves with their load and link (early splits on a good link, the
whole network on the device on a poor one, on both networks), so forecasting them can matter. Every
other tier's fastest split is the same at any load and link of the scenario."""

SERVER_AGENT_INFORMATION = "smoothed"
"""What the server study's agent sees (``server_view.INFORMATION``)."""


def server_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` (a study's, budget set) as its server study: the persistent fleet with the budget tier, the
    per-client agent on the server's smoothed forecast, the fixed splits, the oracle and the deployable
    fastest-split rules."""
    study = {**spec.get("study", {}), "random": False, "greedy": False, "committees": [], "decays": [],
             "time_weights": [], "deployable_rules": True}
    agent = {**spec.get("agent", {}), "modes": ["client"], "information": SERVER_AGENT_INFORMATION}
    devices = {**spec.get("devices", {}), **PERSISTENT_DEVICES}
    devices["tiers"] = {**devices.get("tiers", {}), "budget": BUDGET_TIER}
    return {**spec, "devices": devices, "agent": agent, "study": study}


def server_study_figures(spec: dict[str, Any], progress: Progress, prefix: str = "") -> dict[str, float]:
    """Run ``spec``'s server study (``server_spec``) and return ``deployable_figures``, names prefixed."""
    from decisions.telecom.splitfl.server_figures import deployable_figures

    job = prepare(with_default_tiers(server_spec(spec)))
    study = run_study(job, lambda task, done, total: progress(f"server {task}", done, total))
    return {f"{prefix}{k}": float(v) for k, v in deployable_figures(study.runs, "dqn_client").items()}


def with_default_tiers(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` with every default device tier its ``[devices] tiers`` does not override."""
    from decisions.telecom.splitfl.devices import DeviceScenario

    tiers = {k: v.model_dump() for k, v in DeviceScenario().tiers.items()}
    for name, values in spec.get("devices", {}).get("tiers", {}).items():
        tiers[name] = values
    return {**spec, "devices": {**spec.get("devices", {}), "tiers": tiers}}


def strategy_figures(study: Study) -> dict[str, float]:
    """``time_ratio_<s>`` (time to target over the best fixed split's, mean over seeds), ``final_acc_<s>``,
    ``dropout_rate_<s>``, ``rounds_to_target_<s>`` (inf when a seed never reached it) and ``mean_round_s_<s>``
    for every strategy."""
    best = best_fixed(study.runs)
    figures: dict[str, float] = {}
    for name, rows in vs_best_fixed(study.runs).groupby("strategy", sort=False):
        figures[f"time_ratio_{name}"] = float(rows["time_ratio"].mean())
        figures[f"final_acc_{name}"] = float(rows["final_test_acc"].mean())
        figures[f"dropout_rate_{name}"] = float(rows["dropout_rate"].mean())
        figures[f"rounds_to_target_{name}"] = float(rows["rounds_to_target"].mean())
        figures[f"mean_round_s_{name}"] = float(rows["mean_round_s"].mean())
    figures["best_fixed_split"] = float(pd.Series([int(s.split("_")[1]) for s in best]).mode().iloc[0])
    return figures


def study_figures(spec: dict[str, Any], progress: Progress, prefix: str = "") -> dict[str, float]:
    """Run one study and flatten its figures (module docstring), names prefixed with ``prefix``."""
    job = prepare(with_default_tiers(spec))
    study = run_study(job, progress)
    figures = {
        **study.headline, **strategy_figures(study),
        "split_equivalence_max_err": split_equivalence_max_err(job.arch.value, job.training),
        "centralised_test_acc": float(np.mean(list(study.centralised.values()))),
        "target_share": job.training.target_share,
        "smoothing_window": float(SMOOTHING_WINDOW),
        "rounds": float(job.training.rounds),
        "clients": float(sum(t.clients for t in job.devices.tiers.values())),
        "rounds_per_second": study.rounds_per_second,
        "agent_train_seconds": study.agent_seconds,
    }
    return {f"{prefix}{k}": float(v) for k, v in figures.items()}


def run_bench(
    progress: Progress | None = None,
    *,
    rounds: int = 100,
    seeds: int = 3,
    env_steps: int = 50_000,
    fashion_rounds: int = 60,
    fashion_seeds: int = 5,
    ablations: bool = True,
    fixed_splits: list[int] | None = None,
    committee: int | None = None,
    digits: bool = True,
    server: bool = True,
    plain: bool = True,
) -> dict[str, Any]:
    """Run the digits study (unless ``digits`` is false) and (when ``fashion_rounds`` > 0) the Fashion-MNIST study.

    Args:
        progress: optional ``(task, done, total)`` callback.
        rounds: federated rounds per digits run.
        seeds: digits seeds.
        env_steps: simulated decisions each committee member trains on.
        fashion_rounds: rounds per Fashion-MNIST run (0: skip that study).
        fashion_seeds: Fashion-MNIST seeds.
        ablations: run the committee-size and decay ablations (digits only).
        fixed_splits: the fixed splits run (default: every split of the network).
        committee: DQNs per agent (default: the spec's).
        digits: run the digits study (false: only Fashion-MNIST, a part to ``--merge`` into a stored result).
        server: also run each dataset's server study (module docstring) at the same budget.
        plain: run each dataset's stored study (false: only the server studies).

    Raises:
        InputError: (``digits``) neither dataset runs; (``plain``) neither study does.
    """
    if not digits and fashion_rounds <= 0:
        raise InputError("digits", "is false and fashion_rounds is 0: no study would run")
    if not plain and not server:
        raise InputError("plain", "is false and server is false: no study would run")
    report = progress or (lambda task, done, total: None)

    def budget(spec: dict[str, Any], r: int, s: int, ablate: bool) -> dict[str, Any]:
        training = {**spec["training"], "rounds": r, "seeds": list(range(s))}
        study: dict[str, Any] = {} if ablate else {"committees": [], "decays": []}
        if fixed_splits is not None:
            study["fixed_splits"] = fixed_splits
        agent: dict[str, Any] = {"env_steps": env_steps, **({"committee": committee} if committee else {})}
        return {**spec, "job": {"name": "bench"}, "training": training, "agent": agent, "study": study}

    figures: dict[str, Any] = {}
    if digits:
        if plain:
            figures.update(study_figures(budget(DIGITS_SPEC, rounds, seeds, ablations), report))
        if server:
            figures.update(server_study_figures(budget(DIGITS_SPEC, rounds, seeds, False), report))
    if fashion_rounds > 0:
        fashion = budget(FASHION_SPEC, fashion_rounds, fashion_seeds, False)
        if plain:
            figures.update(study_figures(fashion, report, "fashion_"))
        if server:
            figures.update(server_study_figures(fashion, report, "fashion_"))
        figures["fashion_seeds"] = float(fashion_seeds)
        figures["fashion_rounds"] = float(fashion_rounds)
    return figures


def _server_rows(dataset: str, prefix: str) -> tuple[Row, ...]:
    """The README rows of a dataset's server study (optional: stored by a separate part)."""
    return (
        Row(
            f"{dataset}, server study (a budget tier, persistent loads and links, fading batteries, clients leaving "
            "and joining; the agent on the server's smoothed reports): time to the target, agent / best deployable "
            "fastest-split rule (worst seed); the oracle rule (this round's draws known) / the same rule",
            f"{{{prefix}time_to_target_vs_best_deployable_rule:.3f}} "
            f"(worst {{{prefix}time_to_target_vs_best_deployable_rule_worst:.3f}}); "
            f"{{{prefix}oracle_time_to_target_vs_best_deployable_rule:.3f}}",
            optional=True,
        ),
        Row(
            f"{dataset}, server study: dropout rate, the best deployable rule / agent minus rule",
            f"{{{prefix}dropout_rate_best_deployable_rule:.3f}} / "
            f"{{{prefix}dropout_rate_agent_vs_best_deployable_rule:+.3f}}",
            optional=True,
        ),
    )


README_ROWS: tuple[Row, ...] = (
    Row(
        "digits, small CNN, {seeds:.0f} seeds x {rounds:.0f} rounds x {clients:.0f} clients (Dirichlet 0.1): "
        "wall-clock time to {target_share:.0%} of the centralised accuracy, agent (per-client) / best fixed split "
        "in hindsight",
        "{time_to_target_ratio_vs_best_fixed:.2f} (std {time_to_target_ratio_vs_best_fixed_std:.2f}, worst "
        "{time_to_target_ratio_vs_best_fixed_worst:.2f})",
    ),
    Row(
        "digits: final test accuracy, agent / best fixed split (/ best final of any fixed split); dropout rate, "
        "agent vs lowest fixed split",
        "{final_test_acc_vs_best_fixed:.3f} ({final_test_acc_vs_max_fixed:.3f}); {dropout_rate_agent:.3f} "
        "(margin {dropout_margin_vs_fixed:+.3f})",
    ),
    Row(
        "digits: time ratio of the per-round agent / greedy rule / random / plain FedAvg (split 9)",
        "{time_ratio_dqn_round:.2f} / {time_ratio_greedy:.2f} / {time_ratio_random:.2f} / {time_ratio_fixed_9:.2f}",
    ),
    Row(
        "digits: per-client fastest-split rule (each client's fastest split it can hold, this round's draws known): "
        "time ratio; mean round, s, rule / agent; dropout rate, rule / agent",
        "{time_ratio_fastest:.2f}; {mean_round_s_fastest:.2f} / {mean_round_s_dqn_client:.2f}; "
        "{dropout_rate_fastest:.3f} / {dropout_rate_dqn_client:.3f}",
    ),
    Row(
        "digits ablations, time ratio: committee 1 / 3 / 5; loss-drop decay 0 / 0.05",
        "{time_ratio_dqn_client_m1:.2f} / {time_ratio_dqn_client:.2f} / {time_ratio_dqn_client_m5:.2f}; "
        "{time_ratio_dqn_client_decay0:.2f} / {time_ratio_dqn_client:.2f}",
    ),
    Row(
        "Fashion-MNIST, MobileNet-style, {fashion_seeds:.0f} seeds x {fashion_rounds:.0f} rounds (Dirichlet 0.1): "
        "time to {fashion_target_share:.0%} of the centralised accuracy, agent / best fixed; final accuracy ratio (final "
        "models on all 10,000 test images); "
        "agent dropout rate (margin vs lowest fixed split)",
        "{fashion_time_to_target_ratio_vs_best_fixed:.2f} (worst {fashion_time_to_target_ratio_vs_best_fixed_worst:.2f});"
        " {fashion_final_test_acc_vs_best_fixed:.3f} (worst {fashion_final_test_acc_vs_best_fixed_worst:.3f});"
        " {fashion_dropout_rate_agent:.3f} "
        "({fashion_dropout_margin_vs_fixed:+.3f})",
        optional=True,
    ),
    Row(
        "Fashion-MNIST: the same time ratio on a {fashion_smoothing_window:.0f}-round trailing mean of the test accuracy "
        "(every strategy alike, best fixed split chosen again on it)",
        "{fashion_time_to_target_smoothed_ratio_vs_best_fixed:.2f} "
        "(worst {fashion_time_to_target_smoothed_ratio_vs_best_fixed_worst:.2f})",
        optional=True,
    ),
    Row(
        "Fashion-MNIST per seed (0 to 4): agent / best fixed split in hindsight (that split)",
        ", ".join(f"{{fashion_time_ratio_seed{k}:.2f}} ({{fashion_best_fixed_split_seed{k}:.0f}})" for k in range(5)),
        optional=True,
    ),
    Row(
        "Fashion-MNIST per seed (0 to 4): rounds to the target, agent / best fixed split in hindsight; mean round "
        "length over the seeds, s: agent / fixed split 4 / fixed split 13",
        ", ".join(f"{{fashion_agent_rounds_seed{k}:.0f}} / {{fashion_best_fixed_rounds_seed{k}:.0f}}" for k in range(5))
        + "; {fashion_mean_round_s_dqn_client:.2f} / {fashion_mean_round_s_fixed_4:.2f} / {fashion_mean_round_s_fixed_13:.2f}",
        optional=True,
    ),
    Row(
        "Fashion-MNIST: per-client fastest-split rule (the shortest round that keeps every client it can): time "
        "ratio; mean round, s, rule / agent; dropout rate, rule / agent",
        "{fashion_time_ratio_fastest:.2f}; {fashion_mean_round_s_fastest:.2f} / {fashion_mean_round_s_dqn_client:.2f}; "
        "{fashion_dropout_rate_fastest:.3f} / {fashion_dropout_rate_dqn_client:.3f}",
        optional=True,
    ),
    Row(
        "Fashion-MNIST: time ratio over the seeds of fixed split 4 / fixed split 13 (plain FedAvg) / random / "
        "per-round agent",
        "{fashion_time_ratio_fixed_4:.2f} / {fashion_time_ratio_fixed_13:.2f} / {fashion_time_ratio_random:.2f} / "
        "{fashion_time_ratio_dqn_round:.2f}",
        optional=True,
    ),
    Row(
        "split training vs unsplit, max parameter difference over every split (CNN; MobileNet)",
        "{split_equivalence_max_err:.1e}; {fashion_split_equivalence_max_err:.1e}",
        optional=True,
    ),
    *(row for study in _SERVER_STUDIES for row in _server_rows(*study)),
    Row("simulation speed, digits: rounds per second (first run, compile included)", "{rounds_per_second:.1f}"),
)
"""The README's split-learning table, filled from the stored bench result."""
