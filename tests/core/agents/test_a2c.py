"""A2C (``core.agents.a2c``) on the probe environments.

The machinery shared with PPO (seeds, save/load, no re-trace) is tested in ``test_ppo.py``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from decisions.core.agents import a2c, ppo
from decisions.core.agents.common import TrainResult, evaluate_episodes
from tests.core.probe_envs import BanditParams, ContinuousTarget, OneStepBandit, TwoStepCredit, WalkToGoal

EVAL_KEY = jax.random.PRNGKey(123)

# One gradient step per rollout: more, shorter iterations than PPO's probes.
BANDIT_CONFIG = a2c.A2CConfig(
    num_envs=16, rollout_steps=8, total_env_steps=16 * 8 * 100, learning_rate=3e-3, log_every=50
)
WALK_CONFIG = dataclasses.replace(
    BANDIT_CONFIG, rollout_steps=16, total_env_steps=16 * 16 * 200, log_every=100
)
TARGET_CONFIG = dataclasses.replace(
    BANDIT_CONFIG, total_env_steps=16 * 8 * 400, log_every=200, entropy_coef=0.0
)

BANDIT = OneStepBandit(3)
BANDIT_PARAMS = BanditParams(rewards=jnp.asarray([0.2, 1.0, 0.5], jnp.float32))


def _evaluate(env, result: TrainResult, max_steps: int, params=None) -> np.ndarray:
    params = env.default_params if params is None else params
    return evaluate_episodes(
        env, params, result.policy, result.params, key=EVAL_KEY, num_episodes=64, max_steps=max_steps
    )


@pytest.fixture(scope="module")
def bandit_result() -> TrainResult:
    return a2c.train(BANDIT, BANDIT_CONFIG, key=jax.random.PRNGKey(0), params=BANDIT_PARAMS)


def test_bandit_learns_the_best_arm(bandit_result: TrainResult) -> None:
    np.testing.assert_allclose(_evaluate(BANDIT, bandit_result, 1, BANDIT_PARAMS), 1.0)
    curve = bandit_result.metrics["episode_return"]
    assert curve[0] < 0.7 and np.mean(curve[-10:]) > 0.97
    assert set(bandit_result.metrics) == {
        "episode_return",
        "episode_length",
        "episodes",
        "policy_loss",
        "value_loss",
        "entropy",
        "grad_norm",
        "learning_rate",
    }


def test_two_step_credit_learns_the_delayed_optimum() -> None:
    env = TwoStepCredit()
    result = a2c.train(env, BANDIT_CONFIG, key=jax.random.PRNGKey(1))
    np.testing.assert_allclose(_evaluate(env, result, 2), float(env.optimal_return(env.default_params)))


def test_walk_to_goal_reaches_the_goal_by_the_shortest_path() -> None:
    env = WalkToGoal(length=5, max_steps=10)
    result = a2c.train(env, WALK_CONFIG, key=jax.random.PRNGKey(2))
    np.testing.assert_allclose(_evaluate(env, result, 10), 0.6, atol=1e-6)


def test_continuous_target_matches_the_observation() -> None:
    env = ContinuousTarget()
    result = a2c.train(env, TARGET_CONFIG, key=jax.random.PRNGKey(0))
    assert _evaluate(env, result, 1).mean() > -0.02


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

    def crash(task: str, done: int, total: int) -> None:
        raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        a2c.train(
            BANDIT,
            BANDIT_CONFIG,
            key=jax.random.PRNGKey(0),
            params=BANDIT_PARAMS,
            checkpoint=path,
            progress=crash,
        )
    resumed = a2c.train(
        BANDIT, BANDIT_CONFIG, key=jax.random.PRNGKey(0), params=BANDIT_PARAMS, checkpoint=path
    )
    for x, y in zip(
        jax.tree_util.tree_leaves(bandit_result.params),
        jax.tree_util.tree_leaves(resumed.params),
        strict=True,
    ):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    for name, values in bandit_result.metrics.items():
        np.testing.assert_array_equal(values, resumed.metrics[name], err_msg=name)
    with pytest.raises(ValueError, match="not a ppo checkpoint"):
        ppo.train(
            BANDIT,
            ppo.PPOConfig(num_envs=16, rollout_steps=8, total_env_steps=16 * 8 * 100),
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
