"""Traffic signals' decide contract on a smoke run: the offered policies, a junction's phase from its
detector readings without SUMO, the same answer for the same readings, bad readings refused, the
agent's observation and the critic's value as the study builds them, the rules' choices."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from decisions.mobility.traffic import DOMAIN
from decisions.mobility.traffic import decide as D
from decisions.mobility.traffic.junctions import JUNCTIONS_FILE
from tests import decide_contract as contract

pytestmark = pytest.mark.smoke_runs("traffic")  # the conformance kit's smoke run, shared

run = contract.smoke_folder("traffic", name="run")
agent = contract.loaded_policy(D, "dqn_fair", name="agent", folder="run")
_state = functools.partial(contract.state, D)  # the run's example state with changes


def test_the_decider_is_registered_and_offers_the_agent_and_the_fixed_programme(run: Path) -> None:
    # max-pressure needs outgoing lanes the state does not report
    offered = contract.offered(DOMAIN, D, run, {"dqn_fair", "fixed"})
    assert offered["dqn_fair"].learnt and offered["dqn_fair"].network and not offered["fixed"].learnt


def test_the_agent_takes_its_best_allowed_phase_and_its_value_is_the_critics(run: Path, agent: D.TrafficPolicy) -> None:
    (decision,) = D.decide(agent, [_state(run)])
    q = decision.reasons["q_values_by_phase"]
    assert all(v is not None for v in q)  # the minimum green is served: every phase may be set
    assert decision.action["phase"] == int(np.argmax(q))
    assert decision.value == pytest.approx(q[decision.action["phase"]])
    assert decision.expected == pytest.approx(-(1 - 0.95) * decision.value)
    assert decision.alternative["policy"] == "fixed rule"


def test_the_observation_is_the_studys(run: Path) -> None:
    from decisions.mobility.traffic.junction_policies import Readings, observation
    from decisions.mobility.traffic.junctions import Junction, read_junctions

    saved = read_junctions(run)["networks"]["single-intersection"]["signals"]["t"]
    state = D.example_state(run)
    rows = (np.array([state[k]], float) for k in ("queue", "wait_s", "crossing_pedestrians", "crossing_longest_wait_s"))
    readings = Readings(np.array([state["phase"]]), np.array([state["seconds_since_change"]]), *rows)
    obs = observation(Junction.of(saved), readings, 20)[0]
    capacity = np.asarray(saved["capacity"])
    expected = [1, 0, 0, 0, 1, 12 / 120, *np.minimum(1, np.asarray(state["queue"]) / capacity),
                *(np.asarray(state["wait_s"]) / 120), 0.1, 0.1, 0.1, 0.1]
    assert obs[: len(expected)] == pytest.approx(expected) and not obs[len(expected):].any()


def test_same_readings_same_phase_and_a_batch_answers_in_order(run: Path, agent: D.TrafficPolicy) -> None:
    states = [_state(run), _state(run, queue=[9.0, 9.0, 0.0, 0.0]), _state(run, phase=2, seconds_since_change=3.0),
              _state(run, crossing_pedestrians=[8.0, 0.0], crossing_longest_wait_s=[90.0, 0.0]), _state(run)]
    _, together = contract.decided_alone_and_together(D, agent, states, figure="value")
    assert together[2].action["phase"] == 2  # within the minimum green a change does not take effect


def test_the_fixed_programme_holds_its_green_then_moves_on(run: Path) -> None:
    fixed = D.load(run, "fixed")
    held, moved = D.decide(fixed, [_state(run, seconds_since_change=20.0), _state(run, seconds_since_change=40.0)])
    assert held.action["phase"] == 0 and moved.action["phase"] == 1
    assert held.alternative["policy"] == "trained agent dqn_fair"


def test_greedy_rules_serve_the_longest_queue_and_ties_keep_the_phase() -> None:
    from decisions.mobility.traffic.junction_policies import Readings, rule_actions
    from decisions.mobility.traffic.junctions import Junction

    j = Junction.of({"phases": ["GGrr", "GGrr", "rrGG", "rrGr"], "durations_s": [30, 5, 30, 5],
                     "approaches": ["a", "b"], "capacity": [10, 10], "crossings": ["c"],
                     "phase_approaches": [[0], [0], [1], [1]], "phase_crossings": [[], [0], [], []],
                     "green_links": [2, 1, 2, 1], "yellow_s": 2, "min_green_s": 5, "delta_s": 5})
    r = Readings(phase=np.array([0, 0, 3, 0]), since=np.array([10.0, 10.0, 10.0, 3.0]),
                 queue=np.array([[1.0, 5.0], [5.0, 5.0], [1.0, 5.0], [1.0, 5.0]]), wait=np.zeros((4, 2)),
                 crowd=np.array([[0.0], [0.0], [0.0], [0.0]]), longest=np.zeros((4, 1)))
    assert rule_actions("queue_greedy", j, r).tolist() == [2, 0, 3, 0]
    crowd = Readings(r.phase[:1], r.since[:1], np.array([[4.0, 4.5]]), r.wait[:1], np.array([[3.0]]), r.longest[:1])
    assert rule_actions("queue_greedy", j, crowd).tolist() == [2] and rule_actions("ped_greedy", j, crowd).tolist() == [1]


@pytest.mark.parametrize(("change", "field"), [
    (lambda s: s.pop("phase"), "state.phase"),
    (lambda s: s["queue"].__setitem__(1, -1.0), "state.queue.1"),
    (lambda s: s.update(seconds_since_change=-5.0), "state.seconds_since_change"),
    (lambda s: s.update(signal=""), "state.signal"),
])
def test_bad_readings_name_the_field(run: Path, change, field: str) -> None:
    contract.assert_bad_state_refused(D, run, change, field)


@pytest.mark.parametrize(("changes", "field"), [
    ({"queue": [1.0, 2.0]}, "state.queue"),
    ({"crossing_pedestrians": []}, "state.crossing_pedestrians"),
    ({"signal": "nowhere"}, "state.signal"),
    ({"pedestrians": False}, "state.scenario"),
    ({"phase": 4}, "state.phase"),
])
def test_readings_that_do_not_fit_the_junction_are_refused(run: Path, agent: D.TrafficPolicy, changes: dict,
                                                          field: str) -> None:
    contract.refused(D.decide, agent, [_state(run), _state(run, **changes)], field=field)


def test_unknown_policy_and_a_run_without_junctions_are_refused(run: Path, tmp_path: Path) -> None:
    contract.assert_unknown_policies_refused(D, run, "max_pressure", "nonsense")
    contract.refused(D.load, contract.copied_run(run, tmp_path / "old", without=[JUNCTIONS_FILE]), "dqn_fair",
                     field="run")
