"""GAE of ``core.agents.onpolicy``: against a plain loop, and truncation handled end to end."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct
from jax import Array

from decisions.core.agents import ppo
from decisions.core.agents.onpolicy import gae
from decisions.core.env import Environment
from decisions.core.spaces import Box, Discrete


def _gae_loop(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Reference: one environment at a time, walking backwards through time."""
    steps, envs = rewards.shape
    advantages = np.zeros((steps, envs))
    for e in range(envs):
        running = 0.0
        for t in reversed(range(steps)):
            bootstrap = 0.0 if terminated[t, e] else gamma * next_values[t, e]
            delta = rewards[t, e] + bootstrap - values[t, e]
            if terminated[t, e] or truncated[t, e]:
                running = 0.0
            running = delta + gamma * lam * running
            advantages[t, e] = running
    return advantages


@pytest.mark.parametrize(("gamma", "lam"), [(0.99, 0.95), (0.9, 1.0), (0.5, 0.0)])
def test_gae_matches_python_loop_with_both_flags(gamma: float, lam: float) -> None:
    rng = np.random.default_rng(0)
    shape = (64, 5)
    rewards, values, next_values = (rng.normal(size=shape).astype(np.float32) for _ in range(3))
    terminated = rng.random(shape) < 0.1
    truncated = rng.random(shape) < 0.1  # some steps carry both flags
    assert (
        np.any(terminated & truncated) and np.any(terminated & ~truncated) and np.any(truncated & ~terminated)
    )
    advantages, returns = jax.jit(gae, static_argnums=(5, 6))(
        *(jnp.asarray(x) for x in (rewards, values, next_values, terminated, truncated)), gamma, lam
    )
    expected = _gae_loop(rewards, values, next_values, terminated, truncated, gamma, lam)
    np.testing.assert_allclose(np.asarray(advantages), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(returns), expected + values, rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_and_termination_does_not() -> None:
    one = jnp.ones((1,))
    kwargs = {"rewards": one, "values": 0.5 * one, "next_values": 2.0 * one, "gamma": 0.9, "gae_lambda": 0.95}
    no, yes = jnp.asarray([False]), jnp.asarray([True])
    terminated, _ = gae(terminated=yes, truncated=no, **kwargs)
    truncated, _ = gae(terminated=no, truncated=yes, **kwargs)
    both, _ = gae(terminated=yes, truncated=yes, **kwargs)
    assert float(terminated[0]) == pytest.approx(1.0 - 0.5)
    assert float(truncated[0]) == pytest.approx(1.0 + 0.9 * 2.0 - 0.5)
    assert float(both[0]) == pytest.approx(1.0 - 0.5)


def test_episode_end_stops_the_recursion() -> None:
    rewards = jnp.asarray([0.0, 0.0, 100.0])
    zeros = jnp.zeros(3)
    ended = jnp.asarray([False, True, False])
    for flags in (
        {"terminated": ended, "truncated": jnp.zeros(3, bool)},
        {"terminated": jnp.zeros(3, bool), "truncated": ended},
    ):
        advantages, _ = gae(rewards, zeros, zeros, gamma=0.9, gae_lambda=1.0, **flags)
        np.testing.assert_allclose(np.asarray(advantages), [0.0, 0.0, 100.0])


@struct.dataclass
class _TreadmillState:
    time: Array  # () int32


class _Treadmill(Environment[_TreadmillState, None]):
    """Reset obs ``[0]`` pays 0, every later obs is ``[1]`` and pays 1; truncated after 4 steps.

    As the time limit is not observed, the true values are ``V([1]) = 1 / (1 - gamma)`` and
    ``V([0]) = gamma V([1])``. Treating truncation as termination, or bootstrapping from the
    auto-reset observation ``[0]`` instead of ``info["final_obs"]``, gives lower values.
    """

    default_params = None

    def reset(self, key, params):
        return jnp.zeros((1,), jnp.float32), _TreadmillState(jnp.int32(0))

    def step(self, key, state, action, params):
        reward = jnp.where(state.time > 0, 1.0, 0.0).astype(jnp.float32)
        time = state.time + 1
        return jnp.ones((1,), jnp.float32), _TreadmillState(time), reward, jnp.asarray(False), time >= 4, {}

    def observation_space(self, params):
        return Box(0.0, 1.0, (1,), jnp.float32)

    def action_space(self, params):
        return Discrete(2)


def test_critic_bootstraps_from_final_obs_on_truncation() -> None:
    gamma = 0.5
    config = ppo.PPOConfig(
        num_envs=8,
        rollout_steps=16,
        total_env_steps=8 * 16 * 100,
        gamma=gamma,
        learning_rate=1e-2,
        lr_schedule="constant",
        minibatches=2,
        normalize_obs=False,
        normalize_rewards=False,
        log_every=100,
    )
    result = ppo.train(_Treadmill(), config, key=jax.random.PRNGKey(0))
    v_reset, v_moving = np.asarray(result.policy.value(result.params, jnp.asarray([[0.0], [1.0]])))
    assert v_moving == pytest.approx(1.0 / (1.0 - gamma), abs=0.05)
    assert v_reset == pytest.approx(gamma / (1.0 - gamma), abs=0.05)
