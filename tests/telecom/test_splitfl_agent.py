"""Tests of the split-FL fleet dynamics, the split environments, the committee, the strategies and the federation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from decisions.core.agents import dqn
from decisions.errors import InputError
from decisions.telecom.splitfl import env as E
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl.agent import load_committee, save_committee, train_committee, vote
from decisions.telecom.splitfl.costs import split_costs
from decisions.telecom.splitfl.devices import DeviceScenario
from decisions.telecom.splitfl.federation import Federation, LearningCache, run_federation, train_round
from decisions.telecom.splitfl.model import layer_table, make_net
from decisions.telecom.splitfl.spec import LAYERS, Arch, prepare
from decisions.telecom.splitfl.split import evaluate, make_round, pad_clients
from decisions.telecom.splitfl.strategies import (
    ClientAgent,
    FastestSplit,
    FixedSplit,
    GreedyRule,
    client_decisions,
)

CNN = make_net("cnn")


def scenario(**weak: float) -> DeviceScenario:
    tiers = {k: v.model_dump() for k, v in DeviceScenario().tiers.items()}
    tiers["weak"].update(weak)
    return DeviceScenario.parse({"tiers": tiers, "link_jitter": 0.0, "cpu_share_min": 1.0})


def env_params(sc: DeviceScenario, rounds: int = 20, **weights: float) -> E.SplitEnvParams:
    fleet = fl.fleet_params(sc, CNN.layer_table(), 32, 10)
    w = {"decay": 0.05, "loss_weight": 1.0, "time_weight": 1.0, "dropout_weight": 1.0, "energy_weight": 0.0, **weights}
    return E.env_params(fleet, np.ones(fleet.clients), rounds, **w)


# --- fleet ----------------------------------------------------------------------------------------


def test_jax_costs_equal_the_numpy_cost_model() -> None:
    sc = scenario()
    p = fl.fleet_params(sc, CNN.layer_table(), 32, 10)
    state = fl.reset(jax.random.PRNGKey(0), p)
    splits = np.array([1, 3, 9, 2, 5, 7, 8, 4, 6, 9])
    ours = fl.split_costs(state, p, jnp.asarray(splits))
    spec = fl.effective_specs(state, p)
    for i, s in enumerate(splits):
        ref = split_costs(CNN.layer_table(), int(s), 32, 10, fl.ClientSpecs(*(np.asarray(v)[i:i + 1] for v in spec)),
                          sc.server_macs_per_s, concurrent=10)
        np.testing.assert_allclose(float(ours.round_time_s[i]), ref.round_time_s[0], rtol=1e-5)
        np.testing.assert_allclose(float(ours.energy_j[i]), ref.energy_j[0], rtol=1e-5)
        assert bool(ours.fits_memory[i]) == bool(ref.fits_memory[0])


def test_deep_split_refused_by_weak_memory_and_fedavg_sends_no_activations() -> None:
    p = fl.fleet_params(scenario(), CNN.layer_table(), 32, 10)
    state = fl.reset(jax.random.PRNGKey(0), p)
    weak = np.asarray(p.tier) == 0
    _, out = fl.play_round(jax.random.PRNGKey(1), state, p, jnp.full(p.clients, 9))
    assert np.asarray(out.refused)[weak].all() and not np.asarray(out.refused)[~weak].any()
    assert np.asarray(out.participated).sum() == (~weak).sum()
    full = split_costs(CNN.layer_table(), 9, 32, 10, fl.ClientSpecs(*(np.asarray(v)[:1] for v in p.nominal)), 1e12)
    assert full.uplink_s[0] == 0.0 and full.server_compute_s[0] == 0.0


def test_battery_drain_drops_a_weak_device_and_recharge_brings_it_back() -> None:
    # a 10 J battery and 2 MB: the whole CNN on the weak board (split 9) fits and drains it in a few rounds
    sc = scenario(battery_j=10.0, memory_mb=2.0)
    p = fl.fleet_params(sc, CNN.layer_table(), 32, 10)
    state = fl.reset(jax.random.PRNGKey(0), p)
    weak = np.asarray(p.tier) == 0
    heavy = jnp.full(p.clients, 9)
    rounds = 0
    while np.asarray(state.available)[weak].any():
        state, out = fl.play_round(jax.random.PRNGKey(rounds), state, p, heavy)
        rounds += 1
        assert rounds < 50
    assert np.asarray(state.available)[~weak].all()
    share = np.asarray(state.battery_j / p.capacity_j)[weak]
    assert (share < sc.battery_reserve).all()
    # switched off: no drain, recharging at 0.2 W until half full
    for t in range(200):
        state, out = fl.play_round(jax.random.PRNGKey(100 + t), state, p, heavy)
        if np.asarray(state.available)[weak].all():
            break
    assert np.asarray(state.available)[weak].all()
    assert (np.asarray(state.battery_j / p.capacity_j)[weak] >= sc.rejoin_share).all()
    cap = fl.capability(state, p)
    assert cap.shape == (len(fl.CAPABILITY_FEATURES),) and float(cap[-1]) == 1.0


def test_deadline_times_out_a_slow_client_and_caps_the_round() -> None:
    sc = DeviceScenario.parse({"round_deadline_s": 0.2, "link_jitter": 0.0, "cpu_share_min": 1.0})
    p = fl.fleet_params(sc, CNN.layer_table(), 32, 10)
    state = fl.reset(jax.random.PRNGKey(0), p)
    _, out = fl.play_round(jax.random.PRNGKey(1), state, p, jnp.full(p.clients, 1))
    timed_out = np.asarray(out.timed_out)
    assert timed_out.any()
    assert float(out.round_time_s) == pytest.approx(0.2)
    assert not np.asarray(out.participated)[timed_out].any()


# --- environments ---------------------------------------------------------------------------------


def test_client_env_rewards_sum_to_the_round_reward() -> None:
    pe = env_params(scenario(), time_weight=1.0, dropout_weight=0.5, energy_weight=0.3)
    cenv, renv = E.ClientSplitEnv(pe), E.RoundSplitEnv(pe)
    key = jax.random.PRNGKey(3)
    _, cs = cenv.reset(key, pe)
    _, rs = renv.reset(key, pe)
    n = pe.fleet.clients
    total = 0.0
    for _ in range(n):
        _, cs, r, *_ = cenv.step(jax.random.PRNGKey(9), cs, jnp.asarray(4), pe)  # split 5 for everyone
        total += float(r)
    _, rs, r_round, *_ = renv.step(jax.random.PRNGKey(9), rs, jnp.asarray(4), pe)
    assert total == pytest.approx(float(r_round), rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(np.asarray(cs.fleet.battery_j), np.asarray(rs.fleet.battery_j))
    assert int(cs.t) == int(rs.t) == 1


def test_round_reward_is_the_decayed_loss_drop_minus_costs() -> None:
    pe = env_params(scenario(), decay=0.1, loss_weight=2.0, time_weight=0.5, dropout_weight=3.0)
    p = pe.fleet
    state = fl.reset(jax.random.PRNGKey(0), p)
    _, out = fl.play_round(jax.random.PRNGKey(1), state, p, jnp.full(p.clients, 9))
    r = float(E.round_reward(pe, out, jnp.float32(4.0), jnp.float32(1.5), jnp.float32(1.2)))
    missed = 4 / 10  # the weak tier cannot fit split 9
    expected = 2.0 * np.exp(-0.4) * 0.3 / 2.3 - 0.5 * float(out.round_time_s) / 10.0 - 3.0 * missed
    assert r == pytest.approx(expected, rel=1e-5)


# --- committee ------------------------------------------------------------------------------------


def test_vote_majority_and_ties_to_highest_mean_q() -> None:
    q = jnp.array([[1.0, 0.0, 0.5], [1.0, 0.2, 0.0], [0.0, 0.0, 3.0]])  # votes 0, 0, 2 -> 0
    assert int(vote(q)) == 0
    tie = jnp.array([[1.0, 0.0, 0.5], [0.0, 0.0, 3.0]])  # votes 0 and 2, mean Q 0.5 vs 1.75 -> 2
    assert int(vote(tie)) == 2
    allowed = jnp.array([False, True, True])  # action 0 barred: votes 2, 1, 2 -> 2
    assert int(vote(q, allowed)) == 2
    assert int(vote(q, jnp.array([True, True, False]))) == 0


def test_holdable_splits_are_the_ones_that_fit_memory() -> None:
    pe = env_params(scenario())
    state = fl.reset(jax.random.PRNGKey(0), pe.fleet)
    costs = E.all_split_costs(state, pe.fleet)
    weak = int(E.client_order(pe.fleet)[0])
    holdable = np.asarray(E.holdable_splits(costs, jnp.asarray(weak)))
    np.testing.assert_array_equal(holdable, np.asarray(costs.fits_memory[:, weak]))
    assert holdable.any() and not holdable.all()  # the weak tier cannot hold the deep splits
    nothing_fits = costs._replace(fits_memory=jnp.zeros_like(costs.fits_memory))
    assert np.asarray(E.holdable_splits(nothing_fits, jnp.asarray(weak))).all()


@pytest.fixture(scope="module")
def committee():
    pe = env_params(scenario(), rounds=5)
    config = dqn.DQNConfig(total_env_steps=200, num_envs=2, learning_starts=50, hidden=(8,), log_every=20,
                           batch_size=16, bootstrap_truncated=False)
    return pe, train_committee(E.ClientSplitEnv(pe), config, members=2, key=jax.random.PRNGKey(0))


def test_committee_save_reload_and_bad_file(committee, tmp_path: Path) -> None:
    pe, com = committee
    assert com.members == 2
    path = tmp_path / "c.msgpack"
    save_committee(path, com)
    back = load_committee(path)
    state = fl.reset(jax.random.PRNGKey(4), pe.fleet)
    obs = E.client_obs(state, pe, E.all_split_costs(state, pe.fleet), jnp.asarray(0), jnp.zeros(()),
                       jnp.asarray(0), jnp.asarray(0))
    np.testing.assert_allclose(np.asarray(back.q_values(obs)), np.asarray(com.q_values(obs)), rtol=1e-6)
    (tmp_path / "bad.msgpack").write_bytes(b"not a committee")
    with pytest.raises(InputError, match="agent.path"):
        load_committee(tmp_path / "bad.msgpack")
    with pytest.raises(InputError, match="agent.committee"):
        train_committee(E.ClientSplitEnv(pe), dqn.DQNConfig(), members=0, key=jax.random.PRNGKey(0))


def test_client_decisions_match_stepping_the_environment(committee) -> None:
    pe, com = committee
    cenv = E.ClientSplitEnv(pe)
    obs, cs = cenv.reset(jax.random.PRNGKey(5), pe)
    costs = E.all_split_costs(cs.fleet, pe.fleet)
    order = E.client_order(pe.fleet)
    for turn in range(pe.fleet.clients - 1):  # stop before the round is played
        obs, cs, *_ = cenv.step(jax.random.PRNGKey(0), cs, com.act(obs, E.holdable_splits(costs, order[turn])), pe)
    last = order[-1]
    stepped = np.asarray(cs.splits.at[last].set(com.act(obs, E.holdable_splits(costs, last)) + 1))
    decided = np.asarray(client_decisions(com, fl.reset(jax.random.PRNGKey(5), pe.fleet), pe, jnp.asarray(0)))
    np.testing.assert_array_equal(decided, stepped)


# --- strategies and the federation ----------------------------------------------------------------


def test_greedy_rule_takes_the_deepest_split_everyone_can_run() -> None:
    pe = env_params(scenario())
    state = fl.reset(jax.random.PRNGKey(0), pe.fleet)
    split = int(GreedyRule().decide(state, pe, 0)[0])
    costs = E.all_split_costs(state, pe.fleet)
    ok = (np.asarray(costs.fits_memory) & (np.asarray(costs.round_time_s) <= 10.0)).all(axis=1)
    assert split == int(np.nonzero(ok)[0].max()) + 1
    assert FixedSplit(4).decide(state, pe, 0).tolist() == [4] * 10


def test_fastest_rule_gives_each_client_its_fastest_holdable_split_and_the_shortest_round() -> None:
    pe = env_params(scenario(battery_j=40.0))
    p = pe.fleet
    state = fl.reset(jax.random.PRNGKey(0), p)
    # client 0 is just above its reserve: no split keeps it there, so it gets its fastest holdable split
    state = state.replace(battery_j=state.battery_j.at[0].set(0.2 * p.capacity_j[0] + 0.1))
    splits = FastestSplit().decide(state, pe, 0)
    costs = E.all_split_costs(state, p)
    time, fits = np.asarray(costs.round_time_s), np.asarray(costs.fits_memory)
    keeps = fits & (np.asarray(state.battery_j - costs.energy_j) >= 0.2 * np.asarray(p.capacity_j))
    for client, split in enumerate(splits):
        allowed = keeps[:, client] if keeps[:, client].any() else fits[:, client]
        assert allowed[split - 1] and time[split - 1, client] == time[allowed, client].min()
    assert not keeps[:, 0].any() and time[splits[0] - 1, 0] == time[fits[:, 0], 0].min()
    assert keeps[:, 1:].any(axis=0).all()
    _, outcome = fl.play_round(jax.random.PRNGKey(1), state, p, jnp.asarray(splits))
    assert bool(outcome.participated.all())
    for split in range(1, p.layers + 1):
        _, fixed = fl.play_round(jax.random.PRNGKey(1), state, p, jnp.full(p.clients, split))
        assert float(outcome.round_time_s) <= float(fixed.round_time_s) or not bool(fixed.participated.all())


def small_federation(seed: int = 0) -> Federation:
    rng = np.random.default_rng(seed)
    data = [(rng.random((12, 8, 8, 1), np.float32), rng.integers(0, 10, 12)) for _ in range(10)]
    val = (rng.random((20, 8, 8, 1), np.float32), rng.integers(0, 10, 20))
    return Federation(net=CNN, data=pad_clients(data), val=val, test=val, pe=env_params(scenario(), rounds=3),
                      optimizer=optax.sgd(0.05), local_steps=2, batch_size=4, seed=seed)


@pytest.fixture(scope="module")
def federation() -> Federation:
    """The module's small federation: its compiled rounds (one per split) serve every test that trains."""
    return small_federation()


def test_mixed_splits_train_like_one_split(federation: Federation) -> None:
    fed = federation
    params = CNN.init(jax.random.PRNGKey(0))
    part = np.ones(10, bool)
    keys = jax.random.split(jax.random.PRNGKey(0), 10)
    mixed = train_round(fed, params, np.array([1, 2, 3, 4, 5, 6, 7, 8, 9, 3]), part, keys)
    single = train_round(fed, params, np.full(10, 3), part, keys)
    for a, b in zip(jax.tree.leaves(mixed), jax.tree.leaves(single), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-6)


def test_runs_with_the_same_participants_share_the_cache(federation: Federation) -> None:
    fed = federation
    cache = LearningCache()
    a = run_federation(fed, FixedSplit(3), 3, cache=cache)
    b = run_federation(fed, FixedSplit(4), 3, cache=cache)
    assert cache.trained == 3 and cache.hits == 3
    np.testing.assert_array_equal(a.test_acc, b.test_acc)
    assert a.round_time_s.sum() != b.round_time_s.sum()  # same learning, different cost
    c = run_federation(fed, FixedSplit(9), 3, cache=cache)  # the weak tier cannot fit: other participants
    assert cache.trained == 6 and c.participated.sum() == 3 * 6
    fresh = run_federation(fed, FixedSplit(9), 3)  # without the shared cache: trained anew
    np.testing.assert_allclose(fresh.test_acc, c.test_acc)


def test_the_final_model_is_scored_on_the_whole_test_set(federation: Federation) -> None:
    fed = federation
    assert run_federation(fed, FixedSplit(3), 2).final_test_acc == run_federation(fed, FixedSplit(3), 2).test_acc[-1]
    rng = np.random.default_rng(5)
    whole = (rng.random((300, 8, 8, 1), np.float32), rng.integers(0, 10, 300))
    fed = dataclasses.replace(federation, final_test=whole)
    cache = LearningCache()
    h = run_federation(fed, FixedSplit(3), 2, cache=cache)
    params = max(cache.entries.items(), key=lambda entry: len(entry[0]))[1][0]  # the model after the last round
    assert h.final_test_acc == pytest.approx(evaluate(CNN, params, *whole)[1])
    assert h.test_acc[-1] == pytest.approx(evaluate(CNN, params, *fed.test)[1])  # the rounds keep their subset
    again = run_federation(fed, FixedSplit(4), 2, cache=cache)
    assert again.final_test_acc == h.final_test_acc and len(cache.final_acc) == 1


def test_client_agent_strategy_runs(committee, federation: Federation) -> None:
    pe, com = committee
    h = run_federation(federation, ClientAgent(com), 2)
    assert h.splits.shape == (2, 10) and ((h.splits >= 1) & (h.splits <= 9)).all()
    assert np.isfinite(h.reward).all()


# --- spec -----------------------------------------------------------------------------------------


def test_layer_counts_match_the_networks() -> None:
    for arch, layers in LAYERS.items():
        assert make_net(arch.value).num_layers == layers == len(layer_table(arch.value))
    assert Arch.CNN in LAYERS


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({"study": {"fixed_splits": [10]}}, "study.fixed_splits"),
        ({"data": {"concentration": 0}}, "data.concentration"),
        ({"data": {"concentration": -1}}, "data.concentration"),
        ({"devices": {"tiers": {"weak": {"clients": 1, "cpu_macs_per_s": 1e8, "memory_mb": 1, "battery_j": 1,
                                         "link_mbps": 0, "downlink_mbps": 1, "latency_ms": 1, "power_w_compute": 1,
                                         "power_w_tx": 1, "idle_w": 0}}}}, "devices.tiers.weak.link_mbps"),
        ({"data": {"path": "/x"}}, "data.path"),
        ({"training": {"arch": "mobilenet"}}, "training.arch"),
        ({"agent": {"committee": 0}}, "agent.committee"),
        ({"training": {"seeds": [1, 1]}}, "training.seeds"),
    ],
)
def test_bad_specs_name_the_field(spec: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        prepare(spec)
    assert err.value.field == field


def test_client_with_no_data_and_split_outside_the_network() -> None:
    x = np.zeros((3, 8, 8, 1), np.float32)
    with pytest.raises(InputError, match="datasets"):
        pad_clients([(x, np.zeros(3)), (x[:0], np.zeros(0))])
    with pytest.raises(InputError) as err:
        make_round(CNN, 9, optax.sgd(0.1), 1, 4)
    assert err.value.field == "split"
