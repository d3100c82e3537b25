"""Tests of the environment contract, the spaces and the probe environments."""

from __future__ import annotations

import chex
import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.env import Box, Discrete, Environment
from tests.core.probe_envs import BanditParams, ContinuousTarget, OneStepBandit, WalkParams, WalkToGoal


def _episode(env: Environment, params, actions, key=None):
    """Step ``env`` through ``actions`` from a reset; return per-step (rewards, terminated, truncated)."""
    key = jax.random.key(0) if key is None else key
    _, state = env.reset(key, params)
    rewards, terms, truncs = [], [], []
    for a in actions:
        key, sub = jax.random.split(key)
        _, state, r, term, trunc, _ = env.step(sub, state, jnp.asarray(a), params)
        rewards.append(float(r))
        terms.append(bool(term))
        truncs.append(bool(trunc))
    return rewards, terms, truncs


# ----- spaces -----


@pytest.mark.parametrize(
    ("low", "high"),
    [
        (-1.0, 2.0),
        (0.0, np.inf),
        (-np.inf, 0.0),
        (-np.inf, np.inf),
        (np.array([0.0, -np.inf, -5.0]), np.array([1.0, 3.0, np.inf])),
    ],
)
def test_box_sample_is_inside_and_finite(low, high):
    box = Box(low, high, (3,), jnp.float32)
    samples = jax.vmap(box.sample)(jax.random.split(jax.random.key(0), 200))
    assert samples.shape == (200, 3) and samples.dtype == jnp.float32
    assert np.all(np.isfinite(samples))
    assert bool(jnp.all(jax.vmap(box.contains)(samples)))


def test_box_contains_bounds_shape_and_jit():
    box = Box(jnp.array([0.0, -1.0]), 1.0, (2,))
    assert bool(box.contains(jnp.array([0.0, 1.0])))  # bounds are inclusive
    assert not bool(box.contains(jnp.array([0.0, 1.5])))
    assert not bool(box.contains(jnp.array([-0.1, 0.0])))
    assert not bool(box.contains(jnp.zeros((3,))))  # wrong shape
    contains = jax.jit(box.contains)
    assert bool(contains(jnp.array([0.5, -0.5]))) and not bool(contains(jnp.array([2.0, 0.0])))


def test_integer_box_samples_every_value_inclusive():
    box = Box(-1, 2, (), jnp.int32)
    samples = np.asarray(jax.vmap(box.sample)(jax.random.split(jax.random.key(1), 400)))
    assert samples.dtype == np.int32
    assert set(samples.tolist()) == {-1, 0, 1, 2}
    assert not bool(box.contains(0.5))
    assert bool(box.contains(2))


def test_discrete_sample_contains_and_gymnasium():
    space = Discrete(4)
    samples = np.asarray(jax.vmap(space.sample)(jax.random.split(jax.random.key(2), 400)))
    assert samples.dtype == np.int32 and samples.shape == (400,)
    assert set(samples.tolist()) == {0, 1, 2, 3}
    assert [bool(space.contains(x)) for x in (0, 3, 4, -1, 1.5)] == [True, True, False, False, False]
    assert not bool(space.contains(jnp.array([1])))
    gym_space = space.to_gymnasium()
    assert isinstance(gym_space, gymnasium.spaces.Discrete) and gym_space.n == 4
    assert space.shape == ()


def test_box_to_gymnasium_matches():
    box = Box(jnp.array([0.0, -np.inf]), jnp.array([1.0, 2.0]), (2,), jnp.float32)
    gym_box = box.to_gymnasium()
    assert isinstance(gym_box, gymnasium.spaces.Box)
    assert gym_box.shape == (2,) and gym_box.dtype == np.float32
    np.testing.assert_array_equal(gym_box.low, [0.0, -np.inf])
    np.testing.assert_array_equal(gym_box.high, [1.0, 2.0])


@pytest.mark.parametrize(
    "make",
    [
        lambda: Box(1.0, 0.0, ()),
        lambda: Box(jnp.zeros(3), 1.0, (2,)),
        lambda: Box(0.0, 1.0, (), jnp.bool_),
        lambda: Box(0, np.inf, (), jnp.int32),
        lambda: Box(np.nan, 1.0, ()),
        lambda: Discrete(0),
        lambda: Discrete(2.5),
        lambda: Discrete(3, jnp.float32),
    ],
)
def test_bad_spaces_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


# ----- the contract -----


def test_environment_is_abstract():
    class Incomplete(Environment):
        def reset(self, key, params):
            return jnp.zeros(()), None

    with pytest.raises(TypeError):
        Incomplete()


def test_name_and_unwrapped():
    env = WalkToGoal()
    assert env.name == "WalkToGoal"
    assert env.unwrapped is env


def test_walk_to_goal_hand_computed_returns():
    env, params = WalkToGoal(length=3, max_steps=5), WalkToGoal().default_params
    rewards, terms, truncs = _episode(env, params, [1, 1, 1])
    np.testing.assert_allclose(rewards, [-0.1, -0.1, 1.0], rtol=1e-6)
    assert sum(rewards) == pytest.approx(1.0 - 2 * 0.1)
    assert terms == [False, False, True] and truncs == [False, False, False]

    rewards, terms, truncs = _episode(env, params, [0, 1, 0, 1, 1])  # left at 0 stays at 0; never reaches 3
    np.testing.assert_allclose(rewards, [-0.1] * 5, rtol=1e-6)
    assert terms == [False] * 5 and truncs == [False, False, False, False, True]


def test_walk_to_goal_terminated_and_truncated_together():
    env = WalkToGoal(length=2, max_steps=2)
    _, terms, truncs = _episode(env, env.default_params, [1, 1])
    assert terms == [False, True] and truncs == [False, True]


def test_walk_to_goal_observation_is_in_space():
    env = WalkToGoal(length=4, max_steps=6)
    params = env.default_params
    obs, state = env.reset(jax.random.key(0), params)
    np.testing.assert_array_equal(obs, [0.0, 0.0])
    space = env.observation_space(params)
    for a in [1, 1, 0, 1]:
        obs, state, *_ = env.step(jax.random.key(1), state, jnp.int32(a), params)
        assert bool(space.contains(obs))
    np.testing.assert_allclose(obs, [2 / 4, 4 / 6], rtol=1e-6)


def test_slip_probability_is_a_traced_param_under_vmap():
    env = WalkToGoal(length=2, max_steps=4)
    batch = jax.tree.map(lambda x: jnp.broadcast_to(x, (2,)), env.default_params)
    params = batch.replace(slip_prob=jnp.array([0.0, 1.0], jnp.float32))

    def run(p):
        _, state = env.reset(jax.random.key(0), p)
        _, state, *_ = env.step(jax.random.key(1), state, jnp.int32(0), p)  # "left"
        return state.position

    # Without slip, left at 0 stays at 0; with certain slip, it moves right.
    np.testing.assert_array_equal(jax.vmap(run)(params), [0, 1])


def test_bandit_rewards_and_vmap_over_actions_and_params():
    env = OneStepBandit(num_arms=3)
    params = env.default_params
    _, state = env.reset(jax.random.key(0), params)

    def pull(a, p):
        _, _, r, term, trunc, _ = env.step(jax.random.key(0), state, a, p)
        return r, term, trunc

    rewards, terms, truncs = jax.vmap(pull, in_axes=(0, None))(jnp.arange(3), params)
    np.testing.assert_allclose(rewards, [0.0, 0.5, 1.0])
    assert bool(jnp.all(terms)) and not bool(jnp.any(truncs))

    batch = BanditParams(rewards=jnp.array([[3.0, 1.0, 2.0], [0.0, -1.0, 5.0]]))
    rewards, _, _ = jax.vmap(pull, in_axes=(None, 0))(jnp.int32(2), batch)
    np.testing.assert_allclose(rewards, [2.0, 5.0])


def test_jit_matches_eager_and_does_not_retrace():
    env = WalkToGoal()
    params = env.default_params

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(key, state, action, p):
        return env.step(key, state, action, p)

    _, state = env.reset(jax.random.key(0), params)
    eager = env.step(jax.random.key(3), state, jnp.int32(1), params)
    jitted = step(jax.random.key(3), state, jnp.int32(1), params)
    chex.assert_trees_all_close(eager, jitted)
    other = params.replace(step_cost=jnp.float32(0.7))  # new values, same shapes: no re-trace
    _, _, reward, *_ = step(jax.random.key(4), state, jnp.int32(1), other)
    assert float(reward) == pytest.approx(-0.7)


def test_continuous_target_optimal_action_scores_zero():
    env = ContinuousTarget(dim=3)
    params = env.default_params
    obs, state = env.reset(jax.random.key(5), params)
    assert bool(env.observation_space(params).contains(obs))
    assert float(jnp.max(jnp.abs(obs))) <= 0.5
    _, _, reward, term, _, _ = env.step(jax.random.key(6), state, obs, params)
    assert float(reward) == 0.0 and bool(term)
    _, _, reward, *_ = env.step(jax.random.key(6), state, obs + 0.1, params)
    assert float(reward) == pytest.approx(-3 * 0.01, rel=1e-5)


def test_params_default_types():
    assert isinstance(WalkToGoal().default_params, WalkParams)
    assert isinstance(OneStepBandit().default_params, BanditParams)
