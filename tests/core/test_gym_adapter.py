"""Tests of the gymnasium adapter."""

from __future__ import annotations

import warnings

import gymnasium
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from decisions.core.gym_adapter import GymnasiumEnv
from decisions.core.spaces import Box
from tests.core.probe_envs import BanditParams, ContinuousTarget, OneStepBandit, WalkToGoal


def _check_env_warnings(env: gymnasium.Env) -> list[str]:
    """Run ``check_env`` and return every warning it emitted (none is filtered out)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    return [f"{w.category.__name__}: {w.message}" for w in caught]


@pytest.mark.parametrize("make", [OneStepBandit, WalkToGoal, ContinuousTarget])
def test_check_env_passes_without_warnings(make):
    assert _check_env_warnings(GymnasiumEnv(make())) == []


def test_check_env_warnings_are_seen():
    """Guard for the test above: a space check_env dislikes does produce a recorded warning."""

    class UnboundedWalk(WalkToGoal):
        def observation_space(self, params):
            return Box(-jnp.inf, jnp.inf, (2,), jnp.float32)

    messages = _check_env_warnings(GymnasiumEnv(UnboundedWalk()))
    assert any("infinity" in m for m in messages)


def test_episode_values_and_types():
    env = GymnasiumEnv(WalkToGoal(length=3, max_steps=5))
    obs, info = env.reset(seed=1)
    assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and info == {}
    np.testing.assert_array_equal(obs, [0.0, 0.0])
    total, steps = 0.0, []
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(1)
        assert type(reward) is float and type(terminated) is bool and type(truncated) is bool
        total += reward
        steps.append((terminated, truncated))
    assert total == pytest.approx(0.8)
    assert steps == [(False, False), (False, False), (True, False)]
    np.testing.assert_allclose(obs, [1.0, 0.6])
    assert obs in env.observation_space
    assert int(info["position"]) == 3


def test_truncation_is_reported_separately():
    env = GymnasiumEnv(WalkToGoal(length=3, max_steps=5))
    env.reset(seed=0)
    flags = [env.step(np.int64(0))[2:4] for _ in range(5)]
    assert flags == [(False, False)] * 4 + [(False, True)]


def test_params_are_used():
    params = BanditParams(rewards=jnp.array([5.0, -2.0], jnp.float32))
    env = GymnasiumEnv(OneStepBandit(num_arms=2), params=params)
    env.reset(seed=0)
    assert env.step(0)[1] == 5.0
    env.reset()
    assert env.step(1)[1] == -2.0


def test_seeded_reset_is_reproducible():
    env = GymnasiumEnv(ContinuousTarget(dim=2), seed=3)
    a, _ = env.reset(seed=10)
    b, _ = env.reset()
    c, _ = env.reset(seed=10)
    d, _ = env.reset(seed=11)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b) and not np.array_equal(a, d)
    # The constructor seed fixes the first unseeded reset.
    np.testing.assert_array_equal(
        GymnasiumEnv(ContinuousTarget(), seed=3).reset()[0],
        GymnasiumEnv(ContinuousTarget(), seed=3).reset()[0],
    )


def test_continuous_actions():
    env = GymnasiumEnv(ContinuousTarget(dim=2))
    obs, _ = env.reset(seed=0)
    _, reward, terminated, _, _ = env.step(obs)
    assert reward == 0.0 and terminated


def test_bad_use_raises_clear_errors():
    env = GymnasiumEnv(WalkToGoal())
    with pytest.raises(RuntimeError, match="reset"):
        env.step(1)
    env.reset(seed=0)
    for bad in (2, -1, 0.5, np.array([1])):
        with pytest.raises(ValueError, match="action space"):
            env.step(bad)
    cont = GymnasiumEnv(ContinuousTarget(dim=2))
    cont.reset(seed=0)
    with pytest.raises(ValueError, match="action space"):
        cont.step(np.array([0.0, 1.5], np.float32))
    with pytest.raises(ValueError, match="render_mode"):
        GymnasiumEnv(WalkToGoal(), render_mode="human")


def test_spec_rebuilds_the_environment():
    env = GymnasiumEnv(WalkToGoal(length=4), seed=5)
    again = gymnasium.make(env.spec)
    assert again.unwrapped.env.length == 4
    np.testing.assert_array_equal(again.reset(seed=2)[0], env.reset(seed=2)[0])
