"""The scenario check's tier cost table: one row per tier and split, matching the cost model."""

from __future__ import annotations

import pytest

from decisions.telecom.splitfl.bench import with_default_tiers
from decisions.telecom.splitfl.scenario_check import reduced_spec, tier_costs
from decisions.telecom.splitfl.spec import prepare


def test_the_fashion_table_shows_the_weak_tier_cannot_hold_the_whole_network() -> None:
    job = prepare(with_default_tiers(reduced_spec(0.1)))
    assert job.data.concentration == 0.1 and job.training.seeds == [0]
    table = tier_costs(job.arch.value, job.devices, job.training).set_index(["tier", "split"])
    assert len(table) == 3 * 13
    assert not table.loc[("weak", 13), "fits"] and table.loc[("weak", 1), "fits"]
    parts = table[["device_s", "uplink_s", "server_s", "sync_s"]].sum(axis=1)
    assert (table["round_s"] >= parts - 1e-9).all()  # the round also waits for the downlink
    assert table.loc[("strong", 13), "round_s"] == pytest.approx(0.09, abs=0.01)


def test_the_reduced_study_takes_the_agent_reward_weights() -> None:
    job = prepare(with_default_tiers(reduced_spec(0.1, seed=100, agent={"time_weight": 6.0})))
    assert job.agent.time_weight == 6.0 and job.training.seeds == [100]
    assert prepare(with_default_tiers(reduced_spec(0.1))).agent.time_weight == 1.0


def test_a_time_weight_ablation_trains_one_more_agent_per_weight() -> None:
    from decisions.errors import InputError
    from decisions.telecom.splitfl.model import make_net
    from decisions.telecom.splitfl.study import fleet_for, train_agents

    spec = reduced_spec(0.1, time_weights=[1.0, 6.0])
    spec["agent"].update(env_steps=200, committee=1)
    job = prepare(with_default_tiers(spec))
    assert job.study.time_weights == [1.0, 6.0]
    fleet = fleet_for(job.devices, job.training, make_net(job.arch.value))
    agents, _ = train_agents(job.agent, job.study, fleet, job.training.rounds)
    assert sorted(agents) == ["dqn_client", "dqn_client_tw6"]  # weight 1 is the headline agent's own
    spec["study"]["time_weights"] = [-1.0]
    with pytest.raises(InputError) as err:
        prepare(with_default_tiers(spec))
    assert err.value.field.startswith("study.time_weights")
