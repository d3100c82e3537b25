"""Split learning's decide contract (``kit.decide.DecideModule``): the fleet's capability reports at
the start of a round in, each client's split out, from the policies a run saved (``deployable``),
without retraining."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative
from decisions.telecom.splitfl.deployable import CLIENT_AGENT, ROUND_AGENT, read_devices

OUTCOME = "the round's duration (s): its slowest client's time, at most the round deadline"
"""What an outcome's number is."""


class ClientReport(Settings):
    """One client's capability report at the start of a round."""

    available: bool = Field(description="Whether the client can take part in this round.")
    battery: float = Field(ge=0.0, le=1.0, description="State of charge, as a share of the battery's capacity.")
    cpu_share: float = Field(gt=0.0, le=1.0, description="Share of the board's MAC/s free of background load.")
    uplink_mbps: float = Field(gt=0.0, le=1e5, description="Measured uplink rate (Mb/s); the downlink scales alike.")


class FleetReport(Settings):
    """The fleet at the start of a round: the round (0 first) and every client's report, in the run's
    client order (tier by tier)."""

    section = "state"

    round: int = Field(ge=0, le=2000, description="The round about to start, 0 for the first.")
    clients: list[ClientReport] = Field(min_length=1, max_length=10_000, description="Each client's report.")


STATE_MODEL = FleetReport

_EXCLUDED = ("random",)
"""Strategies of the study that cannot answer one state (a random split is not a decision)."""


def _label(name: str) -> str:
    if name.startswith("fixed_"):
        return f"split {name[6:]} for every client"
    fixed = {"greedy": "greedy rule: the deepest split that keeps every client within deadline, memory and battery",
             "fastest": "per client, the fastest split it can hold within its battery reserve",
             "fastest_last": "per client, the fastest split on the server's last measurement",
             "fastest_mean": "per client, the fastest split on the server's moving mean of its measurements",
             "fastest_smoothed": "per client, the fastest split on the server's smoothed forecast"}
    if name in fixed:
        return fixed[name]
    mode = "per-client splits" if name.startswith(CLIENT_AGENT) else "one split a round"
    variant = name.removeprefix(CLIENT_AGENT).removeprefix(ROUND_AGENT).strip("_")
    return f"committee DQN, {mode}" + (f" ({variant})" if variant else "")


def _scores(run_folder: Path) -> tuple[dict[str, float], str]:
    """Each offered strategy's study figure (higher is better) and its name: minus the mean time to the
    target accuracy when every offered strategy reached it, else the mean final test accuracy."""
    import pandas as pd

    summary = pd.read_csv(run_folder / "summary.csv").set_index("strategy")
    summary = summary[~summary.index.isin(_EXCLUDED)]
    times = summary["time_to_target_s"].astype(float)
    if np.isfinite(times).all():
        return (-times).to_dict(), "minus time to target accuracy (s)"
    return summary["final_test_acc"].astype(float).to_dict(), "final test accuracy"


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's strategies that answer a state (its agents, fixed splits and rules), with their figure."""
    del metrics
    scores, score_name = _scores(run_folder)
    return [Candidate(name, _label(name), float(score), score_name, learnt=name.startswith("dqn"),
                      network=name.startswith("dqn")) for name, score in scores.items() if math.isfinite(score)]


@dataclass(frozen=True)
class SplitPolicy:
    """A loaded candidate (``name``) and the best other one (``alternative``), answered together by
    ``run`` (one compiled call for a padded batch of fleet arrays)."""

    name: str
    alternative: str
    labels: Mapping[str, str]
    run: Callable[[Any], Any]
    clients: int
    rounds: int
    capacity_j: np.ndarray
    uplink_mbps: np.ndarray


def load(run_folder: Path, candidate: str) -> SplitPolicy:
    """The run's ``candidate`` and the best other candidate, compiled and warmed up on the example state.

    Raises:
        InputError: (``policy``) the run does not offer ``candidate``; (``run``) it saved no fleet or
            not the candidate's committee.
    """
    import jax

    from decisions.telecom.splitfl.deployable import answer_function, policy_function, run_env_params

    offered = candidates(run_folder, {})
    candidate, alternative = deployed_and_alternative(offered, candidate)
    pe = run_env_params(run_folder)
    deployed, other = (answer_function(pe, policy_function(run_folder, n, pe)) for n in (candidate, alternative))
    run = jax.jit(lambda inputs: (deployed(*inputs), other(*inputs)))
    policy = SplitPolicy(candidate, alternative, {c.name: c.label for c in offered}, run, pe.fleet.clients,
                         int(pe.rounds), np.asarray(pe.fleet.capacity_j), np.asarray(pe.fleet.nominal.uplink_mbps))
    decide(policy, [FleetReport.parse(example_state(run_folder))])
    return policy


def _inputs(policy: SplitPolicy, states: Sequence[FleetReport]) -> tuple[Any, np.ndarray]:
    """The states as batched ``fleet.FleetState`` arrays and rounds.

    Raises:
        InputError: a state with another number of clients than the run's fleet, or a round past its last.
    """
    from decisions.telecom.splitfl.fleet import FleetState

    for state in states:
        if len(state.clients) != policy.clients:
            raise InputError("state.clients", f"the run's fleet has {policy.clients} clients, got {len(state.clients)}")
        if state.round >= policy.rounds:
            raise InputError("state.round", f"must be below the run's {policy.rounds} rounds")
    report = attrgetter("available", "battery", "cpu_share", "uplink_mbps")
    rows = np.array([list(map(report, s.clients)) for s in states], np.float64).reshape(len(states), policy.clients, 4)
    on = rows[..., 0] > 0.5
    fleet = FleetState(battery_j=(rows[..., 1] * policy.capacity_j).astype(np.float32), powered=on, available=on,
                       cpu_share=rows[..., 2].astype(np.float32),
                       link_factor=(rows[..., 3] / policy.uplink_mbps).astype(np.float32))
    return fleet, np.array([s.round for s in states], np.int32)


def _reasons(name: str, q: np.ndarray, holdable: np.ndarray) -> list[dict[str, Any]]:
    """Per state: an agent's members' mean Q-values of the splits it may choose (per client in turn,
    None where the client cannot hold the split; or one per round), to 6 decimals (the float32
    network's digits, not float64's); a rule's name."""
    if name.startswith(CLIENT_AGENT):
        values = np.round(q.astype(np.float64), 6).astype(object)
        values[~holdable.transpose(0, 2, 1)] = None
        return [{"q_values_by_client_and_split": row} for row in values.tolist()]
    if name.startswith(ROUND_AGENT):
        return [{"q_values_by_split": row} for row in np.round(q.astype(np.float64), 6).tolist()]
    return [{"rule": name} for _ in range(len(q))]


def decide(policy: SplitPolicy, states: Sequence[FleetReport]) -> list[Decision]:
    """Each state's splits by the deployed policy, in order, with the round's duration at those splits
    (``expected``; the fleet model's, exact given the reports), the round's cost terms of the study's
    reward (``value``: time, missed clients, energy; higher is better), the alternative's splits and
    value, and an agent's Q-values."""
    import jax

    from decisions.kit.decide_batch import bucket, padded

    if not states:
        return []
    size = bucket(len(states))
    answers = policy.run(jax.tree.map(lambda a: padded(np.asarray(a), size), _inputs(policy, states)))
    mine, other = jax.tree.map(lambda a: np.asarray(a)[: len(states)], answers)
    label = policy.labels[policy.alternative]
    rows = zip(mine.splits.tolist(), mine.round_time_s.tolist(), mine.value.tolist(), other.splits.tolist(),
               other.value.tolist(), _reasons(policy.name, mine.q_values, mine.holdable), strict=True)
    return [Decision(action={"splits": splits}, expected=expected, value=value, reasons=reasons,
                     alternative={"policy": label, "action": {"splits": alt}, "value": alt_value})
            for splits, expected, value, alt, alt_value, reasons in rows]


def example_state(run_folder: Path) -> dict[str, Any]:
    """The run's fleet at its first round: every client available, charged as the study starts, half
    its free CPU range loaded, at its tier's nominal uplink."""
    devices, _ = read_devices(run_folder)
    cpu = (devices.cpu_share_min + 1.0) / 2.0
    clients = [{"available": True, "battery": devices.initial_charge, "cpu_share": cpu, "uplink_mbps": tier.link_mbps}
               for tier in devices.tiers.values() for _ in range(tier.clients)]
    return {"round": 0, "clients": clients}
