"""Tests of ``VmapEnv``, ``AutoResetEnv`` and ``EpisodeStatistics``."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.env import Environment
from decisions.core.spaces import Box, Discrete
from decisions.core.wrappers import AutoResetEnv, EpisodeStatistics, EpisodeStatisticsState, VmapEnv
from tests.core.probe_envs import BanditParams, OneStepBandit, WalkToGoal


def _scan_rollout(env: Environment, params, actions, key):
    """Reset, then step through ``actions`` (leading axis = time) in one jitted scan."""

    @jax.jit
    def run(key, actions):
        key, reset_key = jax.random.split(key)
        _, state = env.reset(reset_key, params)

        def body(state, inputs):
            k, a = inputs
            obs, state, reward, term, trunc, info = env.step(k, state, a, params)
            return state, (obs, reward, term, trunc, info)

        keys = jax.random.split(key, actions.shape[0])
        return jax.lax.scan(body, state, (keys, actions))

    return run(key, actions)


def _reference_autoreset(env: WalkToGoal, params, actions):
    """Plain Python loop with explicit resets (the probe env is deterministic without slip)."""
    key = jax.random.key(0)
    _, state = env.reset(key, params)
    out = {"obs": [], "final_obs": [], "reward": [], "term": [], "trunc": []}
    for a in actions:
        obs, state, reward, term, trunc, _ = env.step(key, state, jnp.int32(a), params)
        out["final_obs"].append(np.asarray(obs))
        if bool(term) or bool(trunc):
            obs, state = env.reset(key, params)
        out["obs"].append(np.asarray(obs))
        out["reward"].append(float(reward))
        out["term"].append(bool(term))
        out["trunc"].append(bool(trunc))
    return {k: np.asarray(v) for k, v in out.items()}


# ----- AutoResetEnv -----


@pytest.mark.parametrize(
    "actions",
    [
        [1] * 12,  # reaches the goal every 3 steps: terminations only
        [0] * 12,  # never moves: truncations every 5 steps only
        [1, 0, 1, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 1],  # a mix of both
    ],
)
def test_autoreset_matches_python_loop(actions):
    base = WalkToGoal(length=3, max_steps=5)
    params = base.default_params
    _, (obs, reward, term, trunc, info) = _scan_rollout(
        AutoResetEnv(base), params, jnp.asarray(actions, jnp.int32), jax.random.key(1)
    )
    ref = _reference_autoreset(base, params, actions)
    np.testing.assert_allclose(obs, ref["obs"])
    np.testing.assert_allclose(info["final_obs"], ref["final_obs"])
    np.testing.assert_allclose(reward, ref["reward"])
    np.testing.assert_array_equal(term, ref["term"])
    np.testing.assert_array_equal(trunc, ref["trunc"])


def test_autoreset_resets_exactly_on_terminated_or_truncated_and_keeps_flags_separate():
    base = WalkToGoal(length=3, max_steps=5)
    params = base.default_params
    env = AutoResetEnv(base)

    _, (obs, _, term, trunc, info) = _scan_rollout(env, params, jnp.ones(9, jnp.int32), jax.random.key(0))
    np.testing.assert_array_equal(np.flatnonzero(term), [2, 5, 8])
    assert not np.any(trunc)
    reset_rows = np.all(np.asarray(obs) == 0.0, axis=1)  # the reset observation is [0, 0]
    np.testing.assert_array_equal(reset_rows, term)
    np.testing.assert_allclose(info["final_obs"][2], [1.0, 3 / 5])  # the goal, before the reset

    _, (obs, _, term, trunc, info) = _scan_rollout(env, params, jnp.zeros(10, jnp.int32), jax.random.key(0))
    np.testing.assert_array_equal(np.flatnonzero(trunc), [4, 9])
    assert not np.any(term)
    np.testing.assert_allclose(info["final_obs"][4], [0.0, 1.0])
    np.testing.assert_allclose(obs[4], [0.0, 0.0])
    np.testing.assert_allclose(obs[5], [0.0, 1 / 5])  # time restarted


def test_autoreset_both_flags_reset_once():
    base = WalkToGoal(length=2, max_steps=2)
    _, (obs, _, term, trunc, _) = _scan_rollout(
        AutoResetEnv(base), base.default_params, jnp.ones(4, jnp.int32), jax.random.key(0)
    )
    np.testing.assert_array_equal(term, [False, True, False, True])
    np.testing.assert_array_equal(trunc, [False, True, False, True])
    np.testing.assert_allclose(obs[1], [0.0, 0.0])
    np.testing.assert_allclose(obs[2], [0.5, 0.5])


def test_autoreset_outside_vmap_selects_per_copy():
    base = WalkToGoal(length=2, max_steps=3)
    params = base.default_params
    actions = jnp.array([[1, 0], [1, 0], [1, 0], [0, 1]], jnp.int32)  # copy 0 ends at t=1, copy 1 at t=2
    _, inner = _scan_rollout(VmapEnv(AutoResetEnv(base), 2), params, actions, jax.random.key(0))
    _, outer = _scan_rollout(AutoResetEnv(VmapEnv(base, 2)), params, actions, jax.random.key(0))
    chex.assert_trees_all_close(inner, outer)
    np.testing.assert_allclose(outer[0][1], [[0.0, 0.0], [0.0, 2 / 3]])  # only copy 0 was reset


# ----- EpisodeStatistics -----


def test_episode_statistics_match_python_loop():
    base = WalkToGoal(length=3, max_steps=6)
    num_envs, steps = 6, 40
    params = base.default_params.replace(slip_prob=jnp.float32(0.3))
    env = VmapEnv(EpisodeStatistics(AutoResetEnv(base)), num_envs)
    actions = jax.random.bernoulli(jax.random.key(7), 0.7, (steps, num_envs)).astype(jnp.int32)
    _, (_, reward, term, trunc, info) = _scan_rollout(env, params, actions, jax.random.key(8))
    reward, done = np.asarray(reward), np.asarray(term | trunc)
    assert done.sum() > num_envs  # several episodes finished

    for i in range(num_envs):
        ret, length, last_ret, last_len = 0.0, 0, 0.0, 0
        for t in range(steps):
            ret += reward[t, i]
            length += 1
            if done[t, i]:
                last_ret, last_len, ret, length = ret, length, 0.0, 0
            assert bool(info["returned_episode"][t, i]) == bool(done[t, i])
            assert info["returned_episode_return"][t, i] == pytest.approx(last_ret, abs=1e-5)
            assert int(info["returned_episode_length"][t, i]) == last_len


def test_episode_statistics_hand_computed_and_state():
    base = WalkToGoal(length=3, max_steps=5)
    env = EpisodeStatistics(AutoResetEnv(base))
    state, (_, _, _, _, info) = _scan_rollout(
        env, base.default_params, jnp.ones(4, jnp.int32), jax.random.key(0)
    )
    assert isinstance(state, EpisodeStatisticsState)
    np.testing.assert_array_equal(info["returned_episode"], [False, False, True, False])
    np.testing.assert_allclose(info["returned_episode_return"], [0.0, 0.0, 0.8, 0.8], rtol=1e-6)
    np.testing.assert_array_equal(info["returned_episode_length"], [0, 0, 3, 3])
    assert float(state.episode_return) == pytest.approx(-0.1) and int(state.episode_length) == 1
    assert "final_obs" in info  # inner wrapper's info is kept


# ----- VmapEnv -----


def test_vmap_env_matches_individual_envs():
    base = WalkToGoal(length=3, max_steps=5)
    params = base.default_params.replace(slip_prob=jnp.float32(0.5))
    env = VmapEnv(base, 4)
    obs, state = env.reset(jax.random.key(0), params)
    assert obs.shape == (4, 2) and state.position.shape == (4,)
    actions = jnp.array([0, 1, 1, 0], jnp.int32)
    key = jax.random.key(11)
    obs, state, reward, term, trunc, info = jax.jit(env.step)(key, state, actions, params)
    assert reward.shape == term.shape == trunc.shape == info["position"].shape == (4,)
    for i, k in enumerate(jax.random.split(key, 4)):
        _, single_state = base.reset(k, params)
        expected = base.step(k, single_state, actions[i], params)
        chex.assert_trees_all_close(
            jax.tree.map(lambda x, i=i: x[i], (obs, state, reward, term, trunc, info)), expected
        )


def test_vmap_env_batched_params():
    base = OneStepBandit(num_arms=3)
    env = VmapEnv(base, 2, batched_params=True)
    params = BanditParams(rewards=jnp.array([[1.0, 2.0, 3.0], [-1.0, -2.0, -3.0]]))
    _, state = env.reset(jax.random.key(0), params)
    _, _, reward, term, _, _ = env.step(jax.random.key(1), state, jnp.array([2, 1]), params)
    np.testing.assert_allclose(reward, [3.0, -2.0])
    assert bool(jnp.all(term))
    assert env.default_params.rewards.shape == (2, 3)
    assert isinstance(env.action_space(params), Discrete) and env.action_space(params).n == 3


def test_vmap_env_spaces_describe_one_copy_and_bad_size_raises():
    env = VmapEnv(WalkToGoal(), 8)
    space = env.observation_space(env.default_params)
    assert isinstance(space, Box) and space.shape == (2,)
    with pytest.raises(ValueError):
        VmapEnv(WalkToGoal(), 0)


def test_wrappers_forward_attributes_and_unwrap():
    base = WalkToGoal(length=7)
    env = VmapEnv(EpisodeStatistics(AutoResetEnv(base)), 2)
    assert env.length == 7 and env.max_steps == base.max_steps
    assert env.unwrapped is base
    assert env.name == "WalkToGoal"
    with pytest.raises(AttributeError):
        _ = env.no_such_attribute


def test_stacked_rollout_compiles_once():
    base = WalkToGoal(length=3, max_steps=5)
    env = VmapEnv(EpisodeStatistics(AutoResetEnv(base)), 3)

    @jax.jit
    @chex.assert_max_traces(n=1)
    def rollout(key, params):
        _, state = env.reset(key, params)

        def body(carry, k):
            state = carry
            _, state, reward, *_ = env.step(k, state, jnp.ones(3, jnp.int32), params)
            return state, reward

        return jax.lax.scan(body, state, jax.random.split(key, 6))

    params = base.default_params
    _, rewards = rollout(jax.random.key(0), params)
    _, rewards2 = rollout(jax.random.key(1), params.replace(goal_reward=jnp.float32(2.0)))
    np.testing.assert_allclose(rewards[:, 0], [-0.1, -0.1, 1.0, -0.1, -0.1, 1.0], rtol=1e-6)
    np.testing.assert_allclose(rewards2[2], [2.0, 2.0, 2.0])
