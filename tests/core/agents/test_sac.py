"""Tests for decisions.core.agents.sac."""

from __future__ import annotations

import dataclasses
import math
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents import dqn, sac
from decisions.core.agents.common import TrainResult, chunk_size
from decisions.core.agents.replay import Transition
from decisions.core.spaces import Box
from tests.core.agents.helpers import (
    CountsTraces,
    assert_no_retrace,
    evaluate,
    resume_after_crash,
    save_and_load,
)
from tests.core.probe_envs import ContinuousTarget, OneStepBandit


class CountingTarget(CountsTraces, ContinuousTarget):
    """``ContinuousTarget`` counting how often ``step`` runs."""


# Optimal return 0 (action = observed target). For reference: the zero action returns
# -2 * E[t^2] = -1/6 and uniformly random actions about -0.83.
TARGET = CountingTarget(dim=2)
CONFIG = sac.SACConfig(
    total_env_steps=2400,
    num_envs=8,
    learning_starts=400,
    batch_size=64,
    hidden=(64, 64),
    learning_rate=1e-3,
    log_every=100,
)
THRESHOLD = -0.02


@pytest.fixture(scope="module")
def target_run() -> TrainResult:
    return sac.train(TARGET, CONFIG, key=jax.random.PRNGKey(0))


@partial(jax.jit, static_argnums=0)
def _actions(policy: sac.SACPolicy, params: Any, obs: jax.Array, key: jax.Array) -> jax.Array:
    """``policy`` applied to each row of ``obs`` (with the same ``key``), as one compiled program."""
    return jax.vmap(lambda o: policy(params, o, key))(obs)


def _evaluate(result: TrainResult, params=None) -> float:
    returns = evaluate(TARGET, result, 1, policy_params=params, num_episodes=1000, key=jax.random.PRNGKey(1))
    return float(returns.mean())


def test_learns_continuous_target(target_run: TrainResult) -> None:
    assert _evaluate(target_run) > THRESHOLD
    metrics = target_run.metrics
    assert set(metrics) == {
        "episode_return",
        "episodes",
        "q_loss",
        "q_mean",
        "actor_loss",
        "alpha",
        "entropy",
    }
    assert all(v.shape == (CONFIG.iterations,) for v in metrics.values())
    assert np.all(metrics["episodes"] == CONFIG.num_envs)  # one-step episodes
    # The sampling policy improves too, from about -0.8 to near 0 (minus the exploration noise).
    assert np.mean(metrics["episode_return"][:10]) < -0.3
    assert np.mean(metrics["episode_return"][-50:]) > -0.15
    # The temperature is tuned: it moves away from its initial value.
    assert metrics["alpha"][0] < CONFIG.initial_alpha and metrics["alpha"][-1] < 0.9 * CONFIG.initial_alpha
    assert np.all(np.isfinite(metrics["q_loss"])) and np.all(np.isfinite(metrics["actor_loss"]))


def test_fixed_temperature_is_not_tuned() -> None:
    """(``test_learns_continuous_target`` checks that the default, tuned temperature moves.)"""
    config = dataclasses.replace(CONFIG, tune_alpha=False)
    agent = sac.make_agent(TARGET, config)
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    state = jax.jit(agent.init)(keys[0], jnp.zeros(2))
    obs = jax.random.normal(keys[1], (32, 2))
    batch = Transition(
        obs=obs,
        action=jax.random.uniform(keys[2], (32, 2), minval=-1.0, maxval=1.0),
        reward=jnp.zeros(32),
        next_obs=obs,
        discount=jnp.zeros(32),
    )
    new, metrics = jax.jit(agent.update)(state, batch, keys[3])
    assert float(new.log_alpha) == float(state.log_alpha) == pytest.approx(math.log(CONFIG.initial_alpha))
    assert float(metrics["alpha"]) == pytest.approx(math.exp(float(new.log_alpha)))
    kernel = lambda p: p["params"]["Dense_0"]["kernel"]  # noqa: E731
    assert not np.allclose(kernel(new.critic), kernel(state.critic))  # the critics still learn


def test_train_seeds_learns_for_every_seed() -> None:
    result = sac.train_seeds(TARGET, CONFIG, keys=jax.random.split(jax.random.PRNGKey(3), 2))
    assert all(v.shape == (2, CONFIG.iterations) for v in result.metrics.values())
    assert all(leaf.shape[0] == 2 for leaf in jax.tree.leaves(result.params))
    for seed in range(2):
        assert _evaluate(result, jax.tree.map(lambda x, s=seed: x[s], result.params)) > THRESHOLD
    assert not np.array_equal(result.metrics["q_loss"][0], result.metrics["q_loss"][1])


def test_second_train_call_does_not_retrace(target_run: TrainResult) -> None:
    assert_no_retrace(partial(sac.train, TARGET, CONFIG), TARGET, target_run, "q_loss", jax.random.PRNGKey(9))


def test_resume_after_crash_matches_uninterrupted_run(target_run: TrainResult, tmp_path: Path) -> None:
    path = tmp_path / "sac.msgpack"
    train = partial(sac.train, TARGET, CONFIG, key=jax.random.PRNGKey(0))
    crashed, calls = resume_after_crash(train, path, target_run, at=200)
    size = chunk_size(CONFIG.iterations, CONFIG.log_every)
    first = -(-200 // size) * size  # the first chunk boundary at or after iteration 200
    assert crashed["done"] == first
    done = [c[1] for c in calls]
    assert done == [min(d, CONFIG.iterations) for d in range(first + size, CONFIG.iterations + size, size)]


def test_saved_policy_reloads_with_identical_actions(target_run: TrainResult, tmp_path: Path) -> None:
    path = tmp_path / "policy.msgpack"
    policy, params = save_and_load(sac, target_run, path)
    obs = jax.random.uniform(jax.random.PRNGKey(2), (64, 2), minval=-0.5, maxval=0.5)
    key = jax.random.PRNGKey(0)
    original = np.asarray(_actions(target_run.policy, target_run.params, obs, key))
    reloaded = np.asarray(_actions(policy, params, obs, key))
    np.testing.assert_array_equal(reloaded, original)
    np.testing.assert_allclose(original, obs, atol=0.2)  # the policy tracks the target
    with pytest.raises(ValueError, match="not a saved dqn policy"):
        dqn.load_policy(path)


def test_actions_are_scaled_to_the_bounds() -> None:
    policy = sac.SACPolicy(
        obs_shape=(3,), action_shape=(2,), action_low=(-2.0, 0.0), action_high=(3.0, 1.0), hidden=(8,)
    )
    u = jnp.asarray([[-1.0, -1.0], [1.0, 1.0], [0.0, 0.0], [0.5, -0.5]])
    np.testing.assert_allclose(policy.to_env(u), [[-2.0, 0.0], [3.0, 1.0], [0.5, 0.5], [1.75, 0.25]])
    params = jax.jit(policy.init)(jax.random.PRNGKey(0))
    # Large weights push tanh to saturation: actions must still respect the bounds.
    params["actor"] = jax.tree.map(lambda w: 100.0 * w, params["actor"])
    obs = 10.0 * jax.random.normal(jax.random.PRNGKey(1), (256, 3))
    actions = np.asarray(jax.jit(policy)(params, obs, None))
    assert actions.shape == (256, 2)
    assert np.all(actions >= [-2.0, 0.0]) and np.all(actions <= [3.0, 1.0])
    assert actions[:, 0].min() < -1.9 and actions[:, 0].max() > 2.9  # both ends reached


def test_squashed_log_prob_is_the_change_of_variables() -> None:
    mean = jnp.asarray([[0.3, -1.0]])
    log_std = jnp.asarray([[-0.5, 0.2]])
    u, log_prob = jax.jit(sac.squashed_sample)(mean, log_std, jax.random.PRNGKey(0))
    x = np.arctanh(np.asarray(u, np.float64))
    std = np.exp(np.asarray(log_std, np.float64))
    gauss = -0.5 * ((x - np.asarray(mean)) / std) ** 2 - np.log(std) - 0.5 * math.log(2 * math.pi)
    expected = np.sum(gauss - np.log(1.0 - np.asarray(u, np.float64) ** 2), axis=-1)
    np.testing.assert_allclose(np.asarray(log_prob), expected, rtol=1e-4)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("batch_size", 0),
        ("initial_alpha", 0.0),
        ("initial_alpha", float("inf")),
        ("tune_alpha", 1),
        ("target_entropy", float("nan")),
        ("gamma", -0.1),
        ("tau", 2.0),
        ("total_env_steps", 10),
    ],
)
def test_bad_config_raises_naming_the_field(field: str, value) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        sac.SACConfig(**{field: value})


def test_rejects_discrete_and_unbounded_action_spaces() -> None:
    with pytest.raises(ValueError, match="float Box action space"):
        sac.train(OneStepBandit(), CONFIG, key=jax.random.PRNGKey(0))

    class Unbounded(ContinuousTarget):
        def action_space(self, params):
            return Box(-np.inf, np.inf, (self.dim,), jnp.float32)

    with pytest.raises(ValueError, match="finite action bounds"):
        sac.train(Unbounded(), CONFIG, key=jax.random.PRNGKey(0))
