"""Unit tests of the CoMP network simulator (no mobile-env needed)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.telecom.comp import CompEnv, NetworkSettings, large, make_network, medium, small
from decisions.telecom.comp.policies.heuristics import max_snr_single, random_policy, split_obs, top_k
from decisions.telecom.comp.sim import channel, qoe, schedulers
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS, SCHEDULERS
from decisions.telecom.comp.sim.env import apply_toggles, with_positions

ENV = CompEnv()


def test_okumura_hata_matches_hand_computed_values() -> None:
    # f = 2500 MHz, hb = 50 m, hm = 1.5 m: a(hm) = 0.0557, A = 134.9045 dB, B = 33.7716 dB/decade.
    d = jnp.asarray([1.0, 10.0, 100.0])
    loss = channel.okumura_hata_db(d, 2500.0, 50.0, 1.5)
    np.testing.assert_allclose(loss, [134.90453, 168.67628, 202.44802], atol=1e-3)
    np.testing.assert_allclose(channel.free_space_db(jnp.asarray(100.0), 2500.0), 80.4088, atol=1e-3)


def test_snr_and_capacity_at_known_distance() -> None:
    params = make_network(NetworkSettings(n_cells=1, n_users=1, positions=[[0.0, 0.0]]))
    pos = jnp.zeros((MAX_USERS, 2)).at[0].set(jnp.asarray([10.0, 0.0]))
    l_snr = channel.log10_snr(params, pos)
    expected = (30.0 - 168.67628) / 10.0 + 9.0  # tx 30 dBm, noise 1e-9 mW
    np.testing.assert_allclose(l_snr[0, 0], expected, atol=1e-4)
    ok = channel.connectable(params, l_snr)
    assert bool(ok[0, 0]) and not bool(ok[0, 1]) and not bool(ok[1, 0])
    cap = channel.capacity(params, l_snr, ok)
    np.testing.assert_allclose(cap[0, 0], 9e6 * np.log2(1 + 10**expected), rtol=1e-4)
    assert float(cap[0, 1]) == 0.0


def test_sinr_is_below_snr_with_interference() -> None:
    # Free space: under mobile-env's Okumura-Hata defaults the received powers are far below
    # the noise (SNR ~ 1e-6), so interference would be invisible in float32.
    params = small(interference=True, path_loss="free_space")
    pos = jnp.full((MAX_USERS, 2), 100.0)
    l_snr = channel.log10_snr(params, pos)
    conn = jnp.zeros((MAX_USERS, MAX_CELLS), bool).at[0, 0].set(True).at[1, 1].set(True)
    l_sinr = channel.log10_sinr(params, l_snr, conn)
    assert float(l_sinr[0, 0]) < float(l_snr[0, 0])  # cell 1 transmits and interferes with user 0
    np.testing.assert_allclose(l_sinr[:, 2] - l_snr[:, 2], l_sinr[:, 0] - l_snr[:, 0], atol=1e-5)


def _conn_cap() -> tuple[jax.Array, jax.Array]:
    conn = jnp.asarray([[1, 0], [1, 1], [1, 0], [0, 0]], bool)
    cap = jnp.asarray([[1.0, 5.0], [2.0, 4.0], [4.0, 0.0], [3.0, 3.0]])
    return conn, cap


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_shares_sum_to_one_per_serving_cell(name: str) -> None:
    conn, cap = _conn_cap()
    share = schedulers.shares(
        jnp.asarray(SCHEDULERS[name]), conn, cap, jnp.asarray([1.0, 2.0, 3.0, 4.0])
    )
    np.testing.assert_allclose(share.sum(axis=0), [1.0, 1.0], atol=1e-6)
    assert float(jnp.abs(jnp.where(conn, 0.0, share)).max()) == 0.0
    assert float(share.min()) >= 0.0


def test_resource_fair_splits_equally() -> None:
    conn, cap = _conn_cap()
    share = schedulers.resource_fair(conn, cap)
    np.testing.assert_allclose(share[:, 0], [1 / 3, 1 / 3, 1 / 3, 0.0], atol=1e-6)
    rates = schedulers.user_rates(share, cap)
    np.testing.assert_allclose(
        rates, [1 / 3, 2 / 3 + 4.0, 4 / 3, 0.0], atol=1e-5
    )  # CoMP: user 1 sums two links


def test_rate_fair_equalises_rates() -> None:
    conn, cap = _conn_cap()
    per_link = schedulers.rate_fair(conn, cap) * cap
    np.testing.assert_allclose(per_link[:3, 0], 1 / (1 / 1 + 1 / 2 + 1 / 4), rtol=1e-5)


def test_max_capacity_gives_all_to_best_user() -> None:
    conn, cap = _conn_cap()
    share = schedulers.max_capacity(conn, cap)
    np.testing.assert_allclose(share[:, 0], [0, 0, 1, 0])
    np.testing.assert_allclose(share[:, 1], [0, 1, 0, 0])


def test_proportional_fair_weights_capacity_by_average_rate() -> None:
    conn, cap = _conn_cap()
    equal = schedulers.proportional_fair(conn, cap, jnp.ones(4))
    np.testing.assert_allclose(equal[:3, 0], np.array([1.0, 2.0, 4.0]) / 7.0, rtol=1e-5)
    served = schedulers.proportional_fair(conn, cap, jnp.asarray([1.0, 2.0, 4.0, 1.0]))
    np.testing.assert_allclose(served[:3, 0], 1 / 3, rtol=1e-5)  # metric cap / avg equal -> equal shares


def test_jain_index_known_vectors() -> None:
    np.testing.assert_allclose(qoe.jain_index(jnp.asarray([1.0, 1.0, 1.0, 1.0])), 1.0)
    np.testing.assert_allclose(qoe.jain_index(jnp.asarray([1.0, 0.0, 0.0, 0.0])), 0.25)
    np.testing.assert_allclose(qoe.jain_index(jnp.asarray([1.0, 2.0, 3.0])), 36.0 / 42.0, rtol=1e-6)
    mask = jnp.asarray([True, True, False])
    np.testing.assert_allclose(qoe.jain_index(jnp.asarray([1.0, 1.0, 9.0]), mask), 1.0)


def test_utility_matches_mobile_env_formula() -> None:
    bounds, coeffs = jnp.asarray([-20.0, 20.0]), jnp.asarray([10.0, 0.0, 10.0])
    rate = jnp.asarray([0.0, 0.5, 10.0, 1e9])
    util = qoe.bounded_log_utility(rate, bounds, coeffs)
    np.testing.assert_allclose(util, [-20.0, 10 * np.log10(0.5), 10.0, 20.0], rtol=1e-5)
    np.testing.assert_allclose(qoe.scale_utility(util, bounds), np.asarray(util) / 20.0, rtol=1e-5)
    np.testing.assert_allclose(qoe.qoe(rate, bounds, coeffs), (np.asarray(util) + 20) / 40, rtol=1e-5)


def test_scenarios_match_mobile_env_sizes() -> None:
    for make, cells, users in ((small, 3, 5), (medium, 7, 15), (large, 13, 30)):
        params = make()
        assert int(params.cell_mask.sum()) == cells and int(params.user_mask.sum()) == users
        assert params.cell_pos.shape == (MAX_CELLS, 2) and params.user_mask.shape == (MAX_USERS,)
    np.testing.assert_allclose(large().size, [200.0, 200.0])  # mobile-env's movement area quirk


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_cells": 0, "n_users": 5}, "n_cells"),
        ({"n_cells": MAX_CELLS + 1, "n_users": 5}, "n_cells"),
        ({"n_cells": 3, "n_users": 0}, "n_users"),
        ({"n_cells": 3, "n_users": MAX_USERS + 1}, "n_users"),
        ({"n_cells": 3, "n_users": 5, "scheduler": "round_robin"}, "scheduler"),
        ({"n_cells": 3, "n_users": 5, "path_loss": "cost231"}, "path_loss"),
        ({"n_cells": 3, "n_users": 5, "positions": [[0.0, 0.0]]}, "positions"),
        ({"n_cells": 1, "n_users": 5, "positions": [[500.0, 0.0]]}, "positions"),
        ({"n_cells": 3, "n_users": 5, "size": (0.0, 100.0)}, "size"),
        ({"n_cells": 3, "n_users": 5, "episode_length": 0}, "episode_length"),
        ({"n_cells": 3, "n_users": 5, "colour": "red"}, "colour"),
    ],
)
def test_make_network_rejects_bad_inputs(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        NetworkSettings(**kwargs)


def _run(params, policy, key, steps: int = 20):
    obs, state = ENV.reset(key, params)

    def body(carry, k):
        obs, state = carry
        k1, k2 = jax.random.split(k)
        obs, state, reward, term, trunc, info = ENV.step(k2, state, policy(obs, k1, params), params)
        return (obs, state), (reward, info["rate"], trunc)

    (_, state), out = jax.lax.scan(body, (obs, state), jax.random.split(key, steps))
    return state, out


def test_padding_behaves_like_the_smaller_network() -> None:
    small_env = CompEnv(max_cells=3, max_users=5)
    params = small()
    trimmed = params.replace(
        **{
            name: getattr(params, name)[: (3 if name.startswith("cell") else 5)]
            for name in params.__dataclass_fields__
            if name.startswith(("cell_", "user_"))
        }
    )
    key = jax.random.PRNGKey(1)
    obs_p, state_p = ENV.reset(key, params)
    obs_s, state_s = small_env.reset(key, trimmed)
    # each step jitted (one compile per network) rather than op by op
    step_p, step_s, act = jax.jit(ENV.step), jax.jit(small_env.step), jax.jit(max_snr_single)
    follow = jax.jit(lambda s, p: with_positions(s.replace(waypoint=p.waypoint[:5]), p.pos[:5], trimmed))
    state_s = follow(state_s, state_p)
    for t in range(15):
        k = jax.random.fold_in(key, t)
        action = act(obs_p, k, params)
        obs_p, state_p, r_p, _, _, info_p = step_p(k, state_p, action, params)
        obs_s, state_s, r_s, _, _, info_s = step_s(k, state_s, action[:5], trimmed)
        state_s = follow(state_s, state_p)  # same mobility draws
        np.testing.assert_allclose(r_p, r_s, rtol=1e-6)
        np.testing.assert_array_equal(state_p.conn[:5, :3], state_s.conn)
        assert not bool(state_p.conn[5:].any()) and not bool(state_p.conn[:, 3:].any())
        np.testing.assert_allclose(info_p["rate"][:5], info_s["rate"], rtol=1e-6)
    conn_p, snr_p, util_p = split_obs(obs_p, params)
    assert float(jnp.abs(snr_p[5:]).max()) == 0.0 and float(jnp.abs(snr_p[:, 3:]).max()) == 0.0


def test_jit_and_vmap_over_networks_of_different_sizes() -> None:
    nets = [
        small(),
        medium(),
        large(),
        make_network(NetworkSettings(n_cells=4, n_users=9, scheduler="max_capacity"), jax.random.PRNGKey(3)),
    ]
    batch = jax.tree.map(lambda *xs: jnp.stack(xs), *nets)
    keys = jax.random.split(jax.random.PRNGKey(0), len(nets))
    state, (rewards, rates, trunc) = jax.jit(jax.vmap(lambda p, k: _run(p, max_snr_single, k)))(batch, keys)
    assert rewards.shape == (4, 20) and bool(jnp.all(jnp.abs(rewards) <= 1.0))
    run_one = jax.jit(lambda p, k: _run(p, max_snr_single, k))  # one network at a time, unbatched
    for i, net in enumerate(nets):
        _, (r_one, _, _) = run_one(net, keys[i])
        np.testing.assert_allclose(rewards[i], r_one, rtol=1e-5, atol=1e-6)
        assert float(jnp.abs(rates[i][:, int(net.user_mask.sum()) :]).sum()) == 0.0


def test_episode_truncates_at_episode_length() -> None:
    params = small(episode_length=5)
    _, (_, _, trunc) = _run(params, random_policy, jax.random.PRNGKey(0), steps=5)
    assert trunc.tolist() == [False, False, False, False, True]


def test_toggles_and_action_mask() -> None:
    params = small()
    _, state = ENV.reset(jax.random.PRNGKey(0), params)
    ok = jnp.ones((MAX_USERS, MAX_CELLS), bool)
    conn = jnp.zeros((MAX_USERS, MAX_CELLS), bool).at[0, 1].set(True)
    action = jnp.zeros(MAX_USERS, jnp.int32).at[0].set(2).at[1].set(1).at[2].set(4).at[7].set(1).at[3].set(99)
    new = apply_toggles(conn, ok, action, params)
    assert not bool(new[0, 1])  # user 0 disconnects from cell 1
    assert bool(new[1, 0])  # user 1 connects to cell 0
    assert int(new.sum()) == 1  # padded cell 3, padded user 7 and out-of-range 99 are no-ops
    not_ok = apply_toggles(conn, jnp.zeros_like(ok), action, params)
    assert int(not_ok.sum()) == 0  # unreachable cell: no connection
    mask = ENV.action_mask(state, params)
    assert mask.shape == (MAX_USERS, MAX_CELLS + 1)
    assert bool(mask[:, 0].all()) and not bool(mask[5:, 1:].any()) and not bool(mask[:, 4:].any())
    expected = channel.connectable(params, channel.log10_snr(params, state.pos))
    np.testing.assert_array_equal(mask[:, 1:], expected)


def test_max_snr_policy_connects_to_best_cell_only() -> None:
    """With users standing still, three steps (add best, drop others) leave exactly the best cell."""
    params = medium()
    params = params.replace(user_velocity=jnp.zeros_like(params.user_velocity))
    state, _ = _run(params, max_snr_single, jax.random.PRNGKey(4), steps=4)
    l_snr = channel.log10_snr(params, state.pos)
    ok = channel.connectable(params, l_snr)
    best = np.asarray(jnp.argmax(jnp.where(params.cell_mask[None, :], l_snr, -jnp.inf), axis=1))
    users = np.flatnonzero(np.asarray(params.user_mask & ok[jnp.arange(MAX_USERS), best]))
    assert len(users) > 5
    conn = np.asarray(state.conn)
    for u in users:
        assert conn[u].sum() == 1 and conn[u, best[u]], (u, conn[u], best[u])


def test_top_k_policy_reaches_k_links() -> None:
    params = small()
    state, _ = _run(params, top_k(2), jax.random.PRNGKey(5), steps=8)
    assert int(state.conn.sum(axis=1).max()) <= 2
    with pytest.raises(ValueError, match="k"):
        top_k(0)


def test_observation_in_space_and_info_keys() -> None:
    params = large()
    obs, state = ENV.reset(jax.random.PRNGKey(0), params)
    assert obs.shape == ENV.observation_space(params).shape
    assert bool(ENV.observation_space(params).contains(obs))
    action = ENV.action_space(params).sample(jax.random.PRNGKey(1))
    obs, state, reward, term, trunc, info = ENV.step(jax.random.PRNGKey(2), state, action, params)
    assert bool(ENV.observation_space(params).contains(obs))
    assert set(info) >= {"rate", "qoe", "jain_qoe", "jain_rate", "utility", "connections"}
    assert 0.0 <= float(info["jain_qoe"]) <= 1.0 and reward.dtype == jnp.float32


def test_serving_set_action_connects_the_strongest_connectable_cells() -> None:
    env = CompEnv(action_mode="serving_set")
    params = medium()
    _, state = env.reset(jax.random.PRNGKey(6), params)
    ok = np.asarray(channel.connectable(params, state.l_snr))
    sizes = jnp.asarray(np.arange(MAX_USERS) % 4, jnp.int32)  # 0, 1, 2, 3 cells
    _, new_state, *_ = env.step(jax.random.PRNGKey(7), state, sizes, params)
    conn, l_snr = np.asarray(new_state.conn), np.asarray(state.l_snr)
    for u in range(MAX_USERS):
        n_ok = int(ok[u].sum())
        want = min(max(int(sizes[u]), 1), n_ok) if bool(params.user_mask[u]) else 0  # covered: >= 1 link
        assert conn[u].sum() == want, u
        if want:  # the chosen cells are the strongest connectable ones
            chosen = l_snr[u][conn[u]]
            others = l_snr[u][ok[u] & ~conn[u]]
            assert others.size == 0 or chosen.min() >= others.max()
    # canonical form: sizes clipped to the connectable cells, 0 for padded users
    canon = np.asarray(env.canonical_action(state, jnp.full((MAX_USERS,), 13), params))
    np.testing.assert_array_equal(canon, np.where(np.asarray(params.user_mask), ok.sum(axis=1), 0))
    canon0 = np.asarray(env.canonical_action(state, jnp.zeros((MAX_USERS,), jnp.int32), params))
    np.testing.assert_array_equal(canon0, np.where(np.asarray(params.user_mask), np.minimum(ok.sum(axis=1), 1), 0))
    mask = np.asarray(env.action_mask(state, params))
    np.testing.assert_array_equal(mask.sum(axis=1), np.maximum(ok.sum(axis=1), 1))
    assert not mask[ok.any(axis=1), 0].any()  # a covered user cannot be left unserved
    # size 1 for everyone is max-SNR: the same links as the toggle heuristic reaches
    _, one, *_ = env.step(jax.random.PRNGKey(7), state, jnp.ones((MAX_USERS,), jnp.int32), params)
    best = np.argmax(np.where(ok, l_snr, -np.inf), axis=1)
    for u in np.flatnonzero(ok.any(axis=1)):
        assert np.asarray(one.conn)[u].sum() == 1 and np.asarray(one.conn)[u, best[u]]
    with pytest.raises(ValueError, match="action_mode"):
        CompEnv(action_mode="teleport")
