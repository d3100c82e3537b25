"""Split learning's decide contract on a smoke run: the offered policies, a round's splits from the
fleet's reports, the same answer for the same reports, bad reports refused, the round's duration and
cost terms equal to the fleet model's."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.telecom.splitfl import DOMAIN
from decisions.telecom.splitfl import decide as D
from decisions.telecom.splitfl.deployable import FLEET_FILE
from tests import decide_contract as contract

pytestmark = pytest.mark.smoke_runs("splitfl")  # the conformance kit's smoke run, shared

run = contract.smoke_folder("splitfl", name="run")
agent = contract.loaded_policy(D, "dqn_client", name="agent", folder="run")


def _state(run: Path, **changes: object) -> D.FleetReport:
    state = D.example_state(run)
    for i, client in enumerate(state["clients"]):
        client.update({k: v[i] if isinstance(v, list) else v for k, v in changes.items()})
    return D.FleetReport.parse(state)


def test_the_decider_is_registered_and_offers_its_agent_and_baselines(run: Path) -> None:
    offered = contract.offered(DOMAIN, D, run, {"dqn_client", "fixed_3", "fixed_9", "greedy", "fastest"})  # no random
    assert offered["dqn_client"].learnt and not offered["greedy"].learnt


def test_a_round_gets_a_holdable_split_per_client_and_its_duration(run: Path, agent: D.SplitPolicy) -> None:
    state = D.FleetReport.parse(D.example_state(run))
    (decision,) = D.decide(agent, [state])
    splits = decision.action["splits"]
    assert len(splits) == len(state.clients) and all(1 <= s <= 9 for s in splits)
    assert 0.0 < decision.expected <= 10.0 and decision.value < 0.0
    q = decision.reasons["q_values_by_client_and_split"]
    for client, split in enumerate(splits):  # one member: each client's split is its best holdable Q-value
        allowed = [(v, k + 1) for k, v in enumerate(q[client]) if v is not None]
        assert max(allowed)[1] == split
    assert set(decision.alternative) == {"policy", "action", "value"}


def test_same_reports_same_splits_and_a_batch_answers_in_order(run: Path, agent: D.SplitPolicy) -> None:
    n = len(D.example_state(run)["clients"])
    states = [_state(run), _state(run, battery=[0.05] * 4 + [1.0] * (n - 4)),
              _state(run, available=[i % 2 == 0 for i in range(n)], cpu_share=0.5), _state(run)]
    contract.decided_alone_and_together(D, agent, states)


def test_duration_and_value_are_the_fleet_models_and_the_agent_is_the_studys(run: Path, agent: D.SplitPolicy) -> None:
    from decisions.telecom.splitfl import env as E
    from decisions.telecom.splitfl import fleet as fl
    from decisions.telecom.splitfl.agent import load_committee
    from decisions.telecom.splitfl.deployable import run_env_params
    from decisions.telecom.splitfl.strategies import ClientAgent

    n = len(D.example_state(run)["clients"])
    report = _state(run, battery=[0.3] * n, cpu_share=0.6)
    (decision,) = D.decide(agent, [report])
    pe = run_env_params(run)
    state = fl.FleetState(
        battery_j=jnp.asarray([0.3] * n) * pe.fleet.capacity_j, powered=jnp.ones(n, bool), available=jnp.ones(n, bool),
        cpu_share=jnp.full(n, 0.6), link_factor=jnp.ones(n))
    splits = ClientAgent(load_committee(run / "committee_dqn_client.msgpack")).decide(state, pe, 0)
    assert decision.action["splits"] == splits.tolist()
    _, outcome = fl.play_round(jax.random.PRNGKey(7), state, pe.fleet, jnp.asarray(splits))
    assert decision.expected == pytest.approx(float(outcome.round_time_s), rel=1e-5)
    assert decision.value == pytest.approx(float(E.cost_terms_of(pe, outcome)), rel=1e-5)


def test_a_fixed_split_and_its_alternative(run: Path) -> None:
    policy = D.load(run, "fixed_3")
    (decision,) = D.decide(policy, [D.FleetReport.parse(D.example_state(run))])
    assert set(decision.action["splits"]) == {3} and decision.reasons == {"rule": "fixed_3"}
    assert decision.alternative["policy"] != "split 3 for every client"


@pytest.mark.parametrize(("change", "field"), [
    (lambda s: s.pop("round"), "state.round"),
    (lambda s: s["clients"][0].update(battery=1.5), "state.clients.0.battery"),
    (lambda s: s["clients"][1].pop("available"), "state.clients.1.available"),
    (lambda s: s["clients"][2].update(uplink_mbps=-1.0), "state.clients.2.uplink_mbps"),
])
def test_bad_reports_name_the_field(run: Path, change, field: str) -> None:
    contract.assert_bad_state_refused(D, run, change, field)


def test_reports_that_do_not_fit_the_run_are_refused(run: Path, agent: D.SplitPolicy) -> None:
    state = D.example_state(run)
    contract.refused(D.decide, agent, [D.FleetReport.parse({**state, "clients": state["clients"][:3]})],
                     field="state.clients", words="10 clients")
    contract.refused(D.decide, agent, [D.FleetReport.parse({**state, "round": 2})], field="state.round")


def test_unknown_policy_and_a_run_without_its_fleet_are_refused(run: Path, tmp_path: Path) -> None:
    contract.assert_unknown_policies_refused(D, run, "random", "nonsense")
    old = contract.copied_run(run, tmp_path / "old", without=[FLEET_FILE])
    contract.refused(D.load, old, "greedy", field="run")
    assert np.isfinite([c.score for c in D.candidates(old, {})]).all()
