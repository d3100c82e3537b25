"""Traffic signals' decide contract (``kit.decide.DecideModule``): a junction's detector readings at a
decision in, the green phase to set out, from the policies a run saved (its agents, the baselines
that read the same state), without SUMO.

The run's fair DQN agent is the critic: ``value`` is its discounted fair reward after the decision
(its Q-value of the phase chosen, in reward units), and ``expected`` the fair cost per decision
interval that value implies, ``-(1 - gamma) * value``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative

OUTCOME = ("the junction's fair cost per decision interval (halting vehicles plus weighted waiting pedestrians "
           "plus the weighted longest wait in minutes, the run's reward), averaged over the coming decisions")
"""What an outcome's number is."""

Count = Annotated[float, Field(ge=0.0, le=10_000.0)]
Seconds = Annotated[float, Field(ge=0.0, le=86_400.0)]


class JunctionState(Settings):
    """One signal at a decision: where it is (scenario, net, signal), its phase and the detectors'
    readings per approach (its incoming lanes, in the run's order) and per crossing."""

    section = "state"

    scenario: str = Field(min_length=1, description="The scenario (one of the run's).")
    pedestrians: bool = Field(True, description="The net with pedestrian crossings (False: the net without).")
    signal: str = Field(min_length=1, description="The traffic light's id.")
    phase: int = Field(ge=0, le=63, description="The current green phase (its index in the signal's programme).")
    seconds_since_change: float = Field(ge=0.0, le=86_400.0, description="Seconds since the phase last changed.")
    queue: list[Count] = Field(min_length=1, max_length=256, description="Halting vehicles per approach.")
    wait_s: list[Seconds] = Field(min_length=1, max_length=256, description="Mean wait of the halting vehicles per approach (s).")
    crossing_pedestrians: list[Count] = Field([], max_length=256, description="Pedestrians waiting per crossing.")
    crossing_longest_wait_s: list[Seconds] = Field([], max_length=256, description="Longest pedestrian wait per crossing (s).")

    @property
    def network(self) -> str:
        """The run's key of the net (``<scenario>``, ``<scenario>/plain`` without pedestrians)."""
        return self.scenario if self.pedestrians else f"{self.scenario}/plain"


STATE_MODEL = JunctionState


def _scores(run_folder: Path) -> tuple[dict[str, float], dict[str, set[str]]]:
    """Each controller's study figure (minus vehicles' mean delay plus pedestrians' p95 wait, s, mean
    over the nets it ran on) and the nets it ran on."""
    import pandas as pd

    summary = pd.read_csv(run_folder / "summary.csv")
    figure = -(summary["veh_delay_mean"] + summary["ped_wait_p95"].fillna(0.0).where(summary["pedestrians"], 0.0))
    nets = summary["scenario"].where(summary["pedestrians"], summary["scenario"] + "/plain")
    scores = figure.groupby(summary["controller"], sort=False).mean().to_dict()
    where = {name: set(nets[summary["controller"] == name]) for name in scores}
    return scores, where


def _agent_file(run_folder: Path, network: str, name: str) -> Path:
    from decisions.mobility.traffic.report import agent_stem

    return run_folder / f"{agent_stem(f'{network}/{name}')}.msgpack"


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's agents (saved) and its baselines that read one junction's state, with their figure."""
    from decisions.mobility.traffic.junction_policies import RULES
    from decisions.mobility.traffic.report import is_agent

    del metrics
    scores, where = _scores(run_folder)
    out = []
    for name, score in scores.items():
        agent = is_agent(name) and all(_agent_file(run_folder, net, name).is_file() for net in where[name])
        if (agent or name in RULES) and np.isfinite(score):
            label = f"trained agent {name}" if agent else f"{name.replace('_', ' ')} rule"
            out.append(Candidate(name, label, float(score), "minus vehicle mean delay plus pedestrian p95 wait (s)",
                                 learnt=agent, network=agent))
    return out


@dataclass(frozen=True)
class NetPolicies:
    """One net's signals, its critic and the deployed and alternative policies' agents (None: a rule)."""

    junctions: Mapping[str, Any]
    run: Any
    width: int
    actions: int
    max_green_s: Mapping[str, float]


@dataclass(frozen=True)
class TrafficPolicy:
    """A loaded candidate (``name``), the best other one (``alternative``) and per net what answers them."""

    name: str
    alternative: str
    labels: Mapping[str, str]
    nets: Mapping[str, NetPolicies]
    gamma: float
    reward_scale: float


def _net(run_folder: Path, network: str, signals: Mapping[str, Any], names: Sequence[str]) -> NetPolicies | None:
    """A net's policies, or None where the run trained no DQN on it (nothing to score the choice)."""
    from decisions.mobility.traffic.junction_policies import compiled
    from decisions.mobility.traffic.junctions import Junction
    from decisions.mobility.traffic.trained import TrainedAgent

    critics = [n for n in ("dqn_fair", "dqn") if _agent_file(run_folder, network, n).is_file()]
    if not critics:
        return None
    critic = TrainedAgent.load(_agent_file(run_folder, network, critics[0]))
    agents = {n: TrainedAgent.load(_agent_file(run_folder, network, n)) for n in names
              if _agent_file(run_folder, network, n).is_file()}
    return NetPolicies({sid: Junction.of(d) for sid, d in signals.items()}, compiled(critic, agents),
                       critic.policy.obs_shape[0], critic.policy.num_actions,
                       {n: float(a.max_green_s) for n, a in agents.items()})


def load(run_folder: Path, candidate: str) -> TrafficPolicy:
    """The run's ``candidate`` and the best other candidate on every net, compiled and warmed up.

    Raises:
        InputError: (``policy``) the run does not offer ``candidate``; (``run``) it saved no junctions.
    """
    from decisions.mobility.traffic.junctions import read_junctions

    offered = candidates(run_folder, {})
    candidate, alternative = deployed_and_alternative(offered, candidate)
    saved = read_junctions(run_folder)
    nets = {key: _net(run_folder, key, net["signals"], (candidate, alternative))
            for key, net in saved["networks"].items()}
    policy = TrafficPolicy(candidate, alternative, {c.name: c.label for c in offered},
                           {k: v for k, v in nets.items() if v is not None}, float(saved["gamma"]),
                           float(saved["reward_scale"]))
    decide(policy, [JunctionState.parse(example_state(run_folder))])
    return policy


def _check(policy: TrafficPolicy, state: JunctionState) -> None:
    """Refuse a state whose net, signal, phase or readings' lengths do not fit the run's junctions."""
    net = policy.nets.get(state.network)
    if net is None:
        raise InputError("state.scenario", f"the run has no agent on {state.network!r} ({', '.join(policy.nets)})")
    j = net.junctions.get(state.signal)
    if j is None:
        raise InputError("state.signal", f"{state.signal!r} is not a signal of {state.network} ({', '.join(net.junctions)})")
    if state.phase >= len(j.phases):
        raise InputError("state.phase", f"the signal has {len(j.phases)} green phases")
    expected = {"queue": j.approaches, "wait_s": j.approaches, "crossing_pedestrians": j.crossings,
                "crossing_longest_wait_s": j.crossings}
    for field, names in expected.items():
        given = len(getattr(state, field))
        if given != len(names):
            raise InputError(f"state.{field}", f"the signal has {len(names)} ({', '.join(names) or 'none'}), got {given}")


def _readings(states: Sequence[JunctionState]) -> Any:
    from decisions.mobility.traffic.junction_policies import Readings

    def rows(field: str) -> np.ndarray:
        return np.array([getattr(s, field) for s in states], np.float64).reshape(len(states), -1)

    return Readings(np.array([s.phase for s in states]), np.array([s.seconds_since_change for s in states]),
                    rows("queue"), rows("wait_s"), rows("crossing_pedestrians"), rows("crossing_longest_wait_s"))


def _answers(policy: TrafficPolicy, net: NetPolicies, j: Any, r: Any) -> dict[str, np.ndarray]:
    """One junction's batch: the critic's Q-values, the deployed and alternative actions and masks."""
    import jax

    from decisions.kit.decide_batch import bucket, padded
    from decisions.mobility.traffic.junction_policies import action_mask, observation, rule_actions

    names = (policy.name, policy.alternative)
    masks = {n: action_mask(j, r, net.actions, net.max_green_s.get(n, 0.0)) for n in names}
    size = len(r.phase)
    inputs = (observation(j, r, net.width), {n: masks[n] for n in net.max_green_s})
    answers = net.run(jax.tree.map(lambda a: padded(a, bucket(size)), inputs))
    out = {k: np.asarray(v)[:size] for k, v in answers.items()}
    actions = {n: out[n] if n in net.max_green_s else rule_actions(n, j, r) for n in names}
    return {"q": out["q"] / policy.reward_scale, "mask": masks[policy.name], **actions}


def decide(policy: TrafficPolicy, states: Sequence[JunctionState]) -> list[Decision]:
    """Each state's phase by the deployed policy, in order, with the critic's value of it and the
    fair cost per interval it implies (module docstring), the alternative's phase and value, and the
    critic's Q-values of the phases that take effect now."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, state in enumerate(states):
        _check(policy, state)
        groups.setdefault((state.network, state.signal), []).append(i)
    out: list[Decision | None] = [None] * len(states)
    for (network, signal), index in groups.items():
        net = policy.nets[network]
        j = net.junctions[signal]
        a = _answers(policy, net, j, _readings([states[i] for i in index]))
        rows = np.arange(len(index))
        mine, other = a[policy.name], a[policy.alternative]
        value, alt_value = a["q"][rows, mine], a["q"][rows, other]
        q = np.where(a["mask"], a["q"], np.nan)[:, : len(j.phases)].astype(object)
        q[np.isnan(q.astype(float))] = None
        q_rows = q.tolist()
        label = policy.labels[policy.alternative]
        for k, i in enumerate(index):
            out[i] = Decision(
                action={"phase": int(mine[k]), "signal_state": j.phases[mine[k]]},
                expected=float(-(1.0 - policy.gamma) * value[k]), value=float(value[k]),
                alternative={"policy": label, "action": {"phase": int(other[k]), "signal_state": j.phases[other[k]]},
                             "value": float(alt_value[k])},
                reasons={"q_values_by_phase": q_rows[k]})
    return [d for d in out if d is not None]


def example_state(run_folder: Path) -> dict[str, Any]:
    """The first signal of the run's first net that has an agent, in its first phase with the minimum
    green served, one to four vehicles halting per approach and a pedestrian at each crossing."""
    from decisions.mobility.traffic.junctions import read_junctions

    saved = read_junctions(run_folder)
    net = next(n for k, n in saved["networks"].items()
               if any(_agent_file(run_folder, k, c).is_file() for c in ("dqn_fair", "dqn")))
    signal, j = next(iter(net["signals"].items()))
    lanes, crossings = len(j["approaches"]), len(j["crossings"])
    return {"scenario": net["scenario"], "pedestrians": net["pedestrians"], "signal": signal, "phase": 0,
            "seconds_since_change": j["yellow_s"] + j["min_green_s"] + j["delta_s"],
            "queue": [float(1 + i % 4) for i in range(lanes)], "wait_s": [float(5 * (i % 3)) for i in range(lanes)],
            "crossing_pedestrians": [1.0] * crossings, "crossing_longest_wait_s": [12.0] * crossings}
