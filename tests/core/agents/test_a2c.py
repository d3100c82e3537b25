"""A2C (``core.agents.a2c``) on the probe environments.

The machinery shared with PPO (seeds, save/load, no re-trace) is tested in ``test_ppo.py``.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from decisions.core.agents import a2c, ppo
from decisions.core.agents.common import TrainResult
from tests.core.agents.helpers import BANDIT, BANDIT_PARAMS, ON_POLICY_METRICS, evaluate, resume_after_crash
from tests.core.probe_envs import ContinuousTarget, TwoStepCredit, WalkToGoal

# One gradient step per rollout: more, shorter iterations than PPO's probes (one hidden layer, as theirs).
BANDIT_CONFIG = a2c.A2CConfig(
    num_envs=16, rollout_steps=8, total_env_steps=16 * 8 * 100, learning_rate=3e-3, hidden=(32,), log_every=50
)
WALK_CONFIG = dataclasses.replace(
    BANDIT_CONFIG, rollout_steps=16, total_env_steps=16 * 16 * 200, log_every=100
)
TARGET_CONFIG = dataclasses.replace(
    BANDIT_CONFIG, total_env_steps=16 * 8 * 400, log_every=200, entropy_coef=0.0
)


@pytest.fixture(scope="module")
def bandit_result() -> TrainResult:
    return a2c.train(BANDIT, BANDIT_CONFIG, key=jax.random.PRNGKey(0), params=BANDIT_PARAMS)


def test_bandit_learns_the_best_arm(bandit_result: TrainResult) -> None:
    np.testing.assert_allclose(evaluate(BANDIT, bandit_result, 1, BANDIT_PARAMS), 1.0)
    curve = bandit_result.metrics["episode_return"]
    assert curve[0] < 0.7 and np.mean(curve[-10:]) > 0.97
    assert set(bandit_result.metrics) == ON_POLICY_METRICS


def test_two_step_credit_learns_the_delayed_optimum() -> None:
    env = TwoStepCredit()
    result = a2c.train(env, BANDIT_CONFIG, key=jax.random.PRNGKey(1))
    np.testing.assert_allclose(evaluate(env, result, 2), float(env.optimal_return(env.default_params)))


def test_walk_to_goal_reaches_the_goal_by_the_shortest_path() -> None:
    env = WalkToGoal(length=5, max_steps=10)
    result = a2c.train(env, WALK_CONFIG, key=jax.random.PRNGKey(2))
    np.testing.assert_allclose(evaluate(env, result, 10), 0.6, atol=1e-6)


def test_continuous_target_matches_the_observation() -> None:
    env = ContinuousTarget()
    result = a2c.train(env, TARGET_CONFIG, key=jax.random.PRNGKey(0))
    assert evaluate(env, result, 1).mean() > -0.02


def test_a2c_takes_one_unclipped_step_per_rollout() -> None:
    config = a2c.A2CConfig()
    agent = a2c.make_agent(BANDIT, config, BANDIT_PARAMS)
    assert agent.updates_per_iteration == 1
    adam = a2c.make_agent(BANDIT, dataclasses.replace(config, optimizer_name="adam"), BANDIT_PARAMS)
    rms_state = agent.base_optimizer(optax.constant_schedule(1e-3)).init({"w": jnp.zeros(2)})
    adam_state = adam.base_optimizer(optax.constant_schedule(1e-3)).init({"w": jnp.zeros(2)})
    assert jax.tree_util.tree_structure(rms_state) != jax.tree_util.tree_structure(adam_state)
    assert a2c.A2CConfig() != ppo.PPOConfig()  # a checkpoint of one is refused by the other


def test_resume_after_crash_equals_uninterrupted_run(bandit_result: TrainResult, tmp_path: Path) -> None:
    path = tmp_path / "a2c.msgpack"
    train = partial(a2c.train, BANDIT, BANDIT_CONFIG, key=jax.random.PRNGKey(0), params=BANDIT_PARAMS)
    resume_after_crash(train, path, bandit_result)
    with pytest.raises(ValueError, match="not a ppo checkpoint"):
        ppo.train(
            BANDIT,
            ppo.PPOConfig(num_envs=16, rollout_steps=8, total_env_steps=16 * 8 * 100, hidden=(32,)),
            key=jax.random.PRNGKey(0),
            params=BANDIT_PARAMS,
            checkpoint=path,
        )


@pytest.mark.parametrize(
    ("field", "value"),
    [("optimizer_name", "sgd"), ("optimizer_eps", 0.0), ("rollout_steps", 0), ("entropy_coef", float("inf"))],
)
def test_bad_config_raises_naming_the_field(field: str, value) -> None:
    with pytest.raises(ValueError, match=f"^{field}: "):
        a2c.A2CConfig(**{field: value})
