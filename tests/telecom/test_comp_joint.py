"""Joint transmission, the UMi path loss and the spread table (``comp.spread``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.telecom.comp import NetworkSettings, make_network
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES, fixed_set_size, random_set_size
from decisions.telecom.comp.policies.rollouts import evaluate_policy
from decisions.telecom.comp.sim import channel, schedulers
from decisions.telecom.comp.sim.catalog import JOINT_TRAINING_TASKS
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.env import CompEnv, link_outcome
from decisions.telecom.comp.sim.network import NetworkParams
from decisions.telecom.comp.study.spread import policy_figures, spread_summary, spread_table, with_rate_model

MAX_SNR = SERVING_SET_POLICIES["max_snr"]
ALL_CELLS = fixed_set_size(MAX_CELLS)
"""The policies the spread tests play, one function object each, so a policy's rollout compiles once."""
SPREAD_EPISODES = 2
"""Episodes of every spread rollout (the same key count for all, one compiled program per policy)."""

ENV = CompEnv(action_mode="serving_set")
# The link model's functions jitted: one compile each, not one per operation.
_log10_snr = jax.jit(channel.log10_snr)
_joint_log10_sinr = jax.jit(channel.joint_log10_sinr)
_reset = jax.jit(ENV.reset)
_connections = jax.jit(ENV.connections)
_link_outcome = jax.jit(link_outcome)


def test_umi_nlos_matches_the_formula() -> None:
    # 35.3 log10(100) + 22.4 + 21.3 log10(2.5) = 101.4762 dB; below 10 m the distance is floored
    np.testing.assert_allclose(channel.umi_nlos_db(jnp.asarray(100.0), 2500.0, 1.5), 101.4762, atol=1e-3)
    np.testing.assert_allclose(channel.umi_nlos_db(jnp.asarray(2.0), 2500.0, 1.5),
                               channel.umi_nlos_db(jnp.asarray(10.0), 2500.0, 1.5), atol=1e-5)


def _two_cells():
    params = make_network(NetworkSettings(n_cells=2, n_users=2, positions=[[0.0, 0.0], [100.0, 0.0]],
                                          path_loss="umi_nlos", interference=True, joint_transmission=True))
    pos = jnp.zeros((MAX_USERS, 2)).at[0].set(jnp.asarray([40.0, 0.0])).at[1].set(jnp.asarray([90.0, 0.0]))
    return params, pos, _log10_snr(params, pos)


def test_joint_sinr_adds_the_serving_cells_and_counts_the_others_as_interference() -> None:
    params, _, l_snr = _two_cells()
    snr = 10.0 ** np.asarray(l_snr[:2, :2], np.float64)
    both = jnp.zeros((MAX_USERS, MAX_CELLS), bool).at[0, :2].set(True).at[1, 1].set(True)
    got = np.asarray(_joint_log10_sinr(params, l_snr, both))
    np.testing.assert_allclose(got[0], np.log10(snr[0, 0] + snr[0, 1]), rtol=1e-5)  # no interferer left
    # user 1 (cell 1 only) hears cell 0, which transmits to user 0
    np.testing.assert_allclose(got[1], np.log10(snr[1, 1] / (1 + snr[1, 0])), rtol=1e-5)
    one = jnp.zeros((MAX_USERS, MAX_CELLS), bool).at[0, 0].set(True).at[1, 1].set(True)
    got = np.asarray(_joint_log10_sinr(params, l_snr, one))
    np.testing.assert_allclose(got[0], np.log10(snr[0, 0] / (1 + snr[0, 1])), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.log10(snr[1, 1] / (1 + snr[1, 0])), rtol=1e-5)
    assert got[2] < -100  # a user served by no cell


def test_a_joint_user_gets_its_smallest_serving_share() -> None:
    conn = jnp.asarray([[1, 1], [0, 1]], bool)  # user 0 by both cells, user 1 by cell 1
    share = schedulers.resource_fair(conn, jnp.ones((2, 2)))
    rates = schedulers.joint_rates(share, conn, jnp.asarray([10.0, 6.0]))
    np.testing.assert_allclose(rates, [0.5 * 10.0, 0.5 * 6.0])  # cell 0 gave user 0 all, cell 1 half
    none = schedulers.joint_rates(share, jnp.zeros((2, 2), bool), jnp.asarray([10.0, 6.0]))
    np.testing.assert_allclose(none, [0.0, 0.0])


def test_serving_everyone_from_every_cell_is_one_shared_cell() -> None:
    params, pos, l_snr = _two_cells()
    state = _reset(jax.random.PRNGKey(0), params)[1].replace(pos=pos, l_snr=l_snr)
    conn = _connections(state, jnp.full(MAX_USERS, MAX_CELLS), params)
    rate, _, _ = _link_outcome(state, conn, params)
    snr = 10.0 ** np.asarray(l_snr[:2, :2], np.float64)
    expected = 0.5 * 9e6 * np.log2(1.0 + snr.sum(axis=1))  # resource-fair: half of one joint cell each
    np.testing.assert_allclose(np.asarray(rate[:2]), expected, rtol=1e-4)
    per_link = _link_outcome(state, conn, params.replace(joint_transmission=jnp.asarray(False)))[0]
    assert float(per_link[0]) != pytest.approx(float(rate[0]), rel=1e-3)  # the parity model differs


def test_policy_figures_read_the_user_rates() -> None:
    rates = np.zeros((2, 3, MAX_USERS))
    rates[:, :, 0] = 2e6
    rates[:, :, 1] = [[0.5e6, 0.5e6, 2e6], [2e6, 2e6, 2e6]]
    mask = np.arange(MAX_USERS) < 2
    figures = policy_figures({"user_rate": rates, "qoe": np.full((2, 3), 0.5)}, mask, floor_mbps=1.0)
    assert figures["qoe"] == 0.5
    assert figures["mean_rate_mbps"] == pytest.approx((2.0 * 6 + 0.5 * 2 + 2.0 * 4) / 12)
    assert figures["below_floor"] == pytest.approx(2 / 12)
    per_user = np.array([2.0, 1.0, 2.0, 2.0])  # users' episode means, pooled over episodes
    assert figures["edge_rate_mbps"] == pytest.approx(np.percentile(per_user, 5.0))


def test_spread_separates_max_snr_from_random_under_joint_transmission() -> None:
    net = with_rate_model(make_network(NetworkSettings(n_cells=4, n_users=12, size=(600.0, 600.0)), jax.random.PRNGKey(3)), "joint")
    table = spread_table({"n": net}, episodes=SPREAD_EPISODES,
                         policies={"max_snr": MAX_SNR, "random": random_set_size},
                         own_policies={"n": {"all": ALL_CELLS}, "elsewhere": {"x": fixed_set_size(2)}})
    assert set(table["policy"]) == {"max_snr", "random", "all"}
    summary = spread_summary(table).iloc[0]
    assert summary["best_qoe_policy"] == "max_snr" and summary["qoe_gain"] > 0.0


def test_spread_bad_input_names_the_field() -> None:
    net = make_network(NetworkSettings(n_cells=3, n_users=5))
    with pytest.raises(ValueError, match="episodes"):
        spread_table({"n": net}, episodes=0)
    with pytest.raises(ValueError, match="floor_mbps"):
        spread_table({"n": net}, floor_mbps=0.0)
    with pytest.raises(ValueError, match="model"):
        with_rate_model(net, "magic")
    with pytest.raises(ValueError, match="scale"):
        with_rate_model(net, "joint", scale=0.0)


def test_a_joint_task_names_and_builds_its_network() -> None:
    from decisions.telecom.comp.sim.catalog import JOINT_CANDIDATE_TASKS, JOINT_SCALE, Task, task_by_name

    task = Task(7, 15, "resource_fair", layout="mobile_env", channel="joint")
    assert task.name == "c7-u15-resource_fair-me-jt" and task_by_name(task.name) == task
    assert Task.from_dict(task.to_dict()) == task
    plain, joint = Task(7, 15, "resource_fair", layout="mobile_env").params(), task.params()
    assert bool(joint.joint_transmission) and bool(joint.interference) and not bool(plain.joint_transmission)
    np.testing.assert_allclose(joint.cell_pos, plain.cell_pos * JOINT_SCALE)
    np.testing.assert_allclose(joint.size, plain.size * JOINT_SCALE)
    assert len({t.name for t in JOINT_CANDIDATE_TASKS}) == len(JOINT_CANDIDATE_TASKS) >= 18
    with pytest.raises(ValueError, match="channel"):
        Task(3, 5, channel="telepathy")


def test_the_second_study_keeps_unseen_configurations_out_of_training() -> None:
    from decisions.telecom.comp.sim.catalog import JOINT_EXCLUDED, JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS

    assert len(JOINT_TRAINING_TASKS) == 10 and len(JOINT_UNSEEN_TASKS) >= 8
    seen = {t.config_key for t in JOINT_TRAINING_TASKS}
    assert not any(t.config_key in seen for t in JOINT_UNSEEN_TASKS)
    assert not {t.name for t in (*JOINT_TRAINING_TASKS, *JOINT_UNSEEN_TASKS)} & set(JOINT_EXCLUDED)
    assert all(t.channel == "joint" for t in (*JOINT_TRAINING_TASKS, *JOINT_UNSEEN_TASKS))


def test_set_size_shares_count_the_canonical_sizes() -> None:
    from decisions.telecom.comp.study.spread import set_size_shares

    net = with_rate_model(make_network(NetworkSettings(n_cells=4, n_users=6, size=(600.0, 600.0)), jax.random.PRNGKey(1)), "joint")

    def two_or_every_cell(obs: jax.Array, key: jax.Array, params: NetworkParams) -> jax.Array:
        """Every third user asks for every cell, the others for two."""
        del obs, key
        asked = jnp.where(jnp.arange(MAX_USERS) % 3 == 2, MAX_CELLS, 2)
        return jnp.where(params.user_mask, asked, 0).astype(jnp.int32)

    # users 2 and 5 of 6 ask for all 13 cells: clipped to the network's 4
    assert set_size_shares(net, two_or_every_cell, episodes=1) == {2: round(4 / 6, 3), 4: round(2 / 6, 3)}


def test_spread_figures_summarise_each_study_set(monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.telecom.comp.sim.catalog import JOINT_TRAINING_TASKS, JOINT_UNSEEN_TASKS
    from decisions.telecom.comp.study import spread

    sets = {"training": JOINT_TRAINING_TASKS[2:4], "unseen": JOINT_UNSEEN_TASKS[2:3]}
    monkeypatch.setattr(spread, "STUDY_SETS", sets)
    monkeypatch.setattr(spread, "SPREAD_POLICIES", {"planner": MAX_SNR, "random": random_set_size})
    figures = spread.spread_figures(episodes=SPREAD_EPISODES)
    gains = [figures[f"spread/{t.name}/planner_qoe_gain"] for t in sets["training"]]
    assert figures["spread_training_median_planner_qoe_gain"] == pytest.approx(np.median(gains))
    assert figures["spread_unseen_median_planner_qoe_gain"] == figures[f"spread/{sets['unseen'][0].name}/planner_qoe_gain"]
    assert figures["spread_all_min_planner_qoe_gain"] == pytest.approx(min([*gains, figures["spread_unseen_median_planner_qoe_gain"]]))
    task = sets["training"][0].name
    qoe = figures[f"spread/{task}/planner/qoe"] / figures[f"spread/{task}/random/qoe"] - 1
    assert figures[f"spread/{task}/planner_qoe_gain"] == pytest.approx(qoe)
    assert figures["spread_episodes"] == SPREAD_EPISODES
    assert {f"spread/{task}/random/{f}" for f in spread.SPREAD_FIGURES} <= set(figures)


def test_evaluate_policy_adds_the_operators_rate_figures() -> None:
    task = JOINT_TRAINING_TASKS[0]
    plain = evaluate_policy(task, MAX_SNR, SPREAD_EPISODES, seed=3)
    rated = evaluate_policy(task, MAX_SNR, SPREAD_EPISODES, seed=3, rates=True)  # the spread tests' program
    assert "edge_rate_mbps" not in plain and rated["qoe"] == plain["qoe"]
    assert rated["mean_rate_mbps"] == pytest.approx(plain["rate_mbps"], rel=1e-5)  # same users, same steps
    assert 0 <= rated["edge_rate_mbps"] <= rated["mean_rate_mbps"] and 0 <= rated["below_floor"] <= 1
