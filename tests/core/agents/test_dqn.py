"""Tests for decisions.core.agents.dqn (and the shared off-policy loop it runs on)."""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents import dqn, offpolicy
from decisions.core.agents.common import TrainResult, chunk_size
from decisions.core.checkpoint import load_metadata
from tests.core.agents.helpers import (
    CountsTraces,
    assert_no_retrace,
    evaluate,
    resume_after_crash,
    save_and_load,
)
from tests.core.probe_envs import ContinuousTarget, OneStepBandit, WalkToGoal


class CountingWalk(CountsTraces, WalkToGoal):
    """``WalkToGoal`` counting how often ``step`` runs."""


# Optimal return: 3 moves right, 1 - 2 * 0.1 = 0.8; the next best policies waste two moves (0.6).
WALK = CountingWalk(length=3, max_steps=10)
WALK_CONFIG = dqn.DQNConfig(
    total_env_steps=4000, num_envs=4, learning_starts=200, batch_size=32, hidden=(32,), log_every=250
)
WALK_OPTIMUM = 0.8


@pytest.fixture(scope="module")
def walk_run() -> TrainResult:
    return dqn.train(WALK, WALK_CONFIG, key=jax.random.PRNGKey(0))


def _walk_observations() -> jnp.ndarray:
    """Every observation of WalkToGoal(3, 10): position and time fractions."""
    grid = [(p / WALK.length, t / WALK.max_steps) for p in range(WALK.length) for t in range(WALK.max_steps)]
    return jnp.asarray(grid, jnp.float32)


def test_learns_walk_to_goal(walk_run: TrainResult) -> None:
    returns = evaluate(WALK, walk_run, WALK.max_steps, num_episodes=4, key=jax.random.PRNGKey(1))
    np.testing.assert_allclose(returns, WALK_OPTIMUM, atol=1e-5)
    iterations = WALK_CONFIG.iterations
    assert set(walk_run.metrics) == {"episode_return", "episodes", "q_loss", "q_mean", "epsilon"}
    assert all(v.shape == (iterations,) for v in walk_run.metrics.values())
    assert np.mean(walk_run.metrics["episode_return"][-100:]) > 0.7  # exploring at epsilon 0.05
    assert np.all(np.isfinite(walk_run.metrics["q_loss"]))
    eps = walk_run.metrics["epsilon"]
    assert eps[0] > 0.99 and eps[-1] == pytest.approx(WALK_CONFIG.epsilon_end) and np.all(np.diff(eps) <= 0)
    assert walk_run.env_steps == WALK_CONFIG.env_steps == 200 + iterations * 4
    assert list(walk_run.curve().columns)[:2] == ["iteration", "seed"]


def _prefilled_buffer(config: dqn.DQNConfig) -> offpolicy.OffPolicyState:
    agent = dqn.make_agent(WALK, config)
    state = offpolicy.loop._init(agent, WALK, WALK.default_params, jax.random.PRNGKey(5), seeds=False)
    size = int(state.buffer.size)
    return jax.tree.map(lambda x: np.asarray(x)[:size], state.buffer.data)


@pytest.mark.parametrize("bootstrap_truncated", [True, False])
def test_stored_transitions_bootstrap_on_truncation_not_termination(bootstrap_truncated: bool) -> None:
    config = dataclasses.replace(WALK_CONFIG, bootstrap_truncated=bootstrap_truncated)
    data = _prefilled_buffer(config)
    assert len(data.obs) == 200  # learning_starts transitions of random actions
    # next_obs is always the observation the step produced (AutoResetEnv's final_obs on an
    # episode end), never the first observation of the next episode: time advanced by one.
    np.testing.assert_allclose(data.next_obs[:, 1], data.obs[:, 1] + 1 / WALK.max_steps, atol=1e-6)
    goal = data.next_obs[:, 0] == 1.0
    cut = (data.next_obs[:, 1] >= 1.0 - 1e-6) & ~goal
    assert goal.sum() > 0 and cut.sum() > 0, "the prefill should contain both episode ends"
    np.testing.assert_array_equal(data.discount[goal], 0.0)
    gamma = np.float32(WALK_CONFIG.gamma)
    np.testing.assert_array_equal(data.discount[cut], gamma if bootstrap_truncated else 0.0)
    np.testing.assert_array_equal(data.discount[~goal & ~cut], gamma)
    np.testing.assert_allclose(data.reward, np.where(goal, 1.0, -0.1), atol=1e-6)


def test_stored_n_step_transitions_sum_rewards_up_to_the_episode_end() -> None:
    n, gamma = 3, np.float32(WALK_CONFIG.gamma)
    data = _prefilled_buffer(dataclasses.replace(WALK_CONFIG, n_step=n))
    assert len(data.obs) == 200  # the n - 1 steps filling the window are not stored
    steps = np.rint((data.next_obs[:, 1] - data.obs[:, 1]) * WALK.max_steps).astype(int)
    goal = data.next_obs[:, 0] == 1.0
    ended = goal | (data.next_obs[:, 1] >= 1.0 - 1e-6)
    assert set(np.unique(steps)) <= {1, 2, 3} and np.all(ended[steps < n])  # cut only at an episode end
    assert np.sum(steps < n) > 0 and np.sum(steps == n) > 0
    np.testing.assert_allclose(data.discount, np.where(goal, 0.0, gamma**steps), rtol=1e-6)
    # Rewards: -0.1 per step and +1 on reaching the goal, discounted within the transition.
    expected = -0.1 * (1 - gamma**steps) / (1 - gamma)
    expected = np.where(
        goal, -0.1 * (1 - gamma ** (steps - 1)) / (1 - gamma) + gamma ** (steps - 1), expected
    )
    np.testing.assert_allclose(data.reward, expected, atol=1e-5)


def test_learns_best_bandit_arm_for_every_seed(tmp_path: Path) -> None:
    env = OneStepBandit(num_arms=3)
    config = dqn.DQNConfig(
        total_env_steps=2000, num_envs=4, learning_starts=100, batch_size=32, hidden=(16,), learning_rate=3e-3,
        gradient_steps=2, log_every=200,
    )
    path = tmp_path / "seeds.msgpack"
    keys = jax.random.split(jax.random.key(0), 3)  # typed keys work as well as raw ones
    result = dqn.train_seeds(env, config, keys=keys, checkpoint=path)
    assert load_metadata(path)["done"] == config.iterations
    again = dqn.train_seeds(env, config, keys=keys, checkpoint=path)  # finished: just reloaded
    np.testing.assert_array_equal(again.metrics["q_loss"], result.metrics["q_loss"])
    assert all(v.shape == (3, config.iterations) for v in result.metrics.values())
    assert all(leaf.shape[0] == 3 for leaf in jax.tree.leaves(result.params))
    assert result.curve()["seed"].nunique() == 3
    obs = jnp.zeros((1,), jnp.float32)
    for seed in range(3):
        params = jax.tree.map(lambda x, s=seed: x[s], result.params)
        assert int(result.policy(params, obs, jax.random.PRNGKey(0))) == 2
        x = offpolicy.normalize(params["obs_stats"], obs, (1,))
        q = result.policy.network.apply(params["q"], x)
        np.testing.assert_allclose(q, [0.0, 0.5, 1.0], atol=0.05)  # Q = the arm rewards
    assert not np.allclose(result.metrics["q_loss"][0], result.metrics["q_loss"][1])  # seeds differ


def test_second_train_call_does_not_retrace(walk_run: TrainResult) -> None:
    assert_no_retrace(partial(dqn.train, WALK, WALK_CONFIG), WALK, walk_run, "q_loss", jax.random.PRNGKey(9))


def test_resume_after_crash_matches_uninterrupted_run(walk_run: TrainResult, tmp_path: Path) -> None:
    path = tmp_path / "dqn.msgpack"
    train = partial(dqn.train, WALK, WALK_CONFIG, key=jax.random.PRNGKey(0))
    crashed, calls = resume_after_crash(train, path, walk_run)
    iterations = WALK_CONFIG.iterations
    size = chunk_size(iterations, WALK_CONFIG.log_every)
    assert crashed["done"] == size
    expected = [min(done, iterations) for done in range(2 * size, iterations + size, size)]
    assert [c[1] for c in calls] == expected and all(c[2] == iterations for c in calls)


def test_saved_policy_reloads_with_identical_actions(walk_run: TrainResult, tmp_path: Path) -> None:
    path = tmp_path / "policy.msgpack"
    policy, params = save_and_load(dqn, walk_run, path)
    obs = _walk_observations()
    key = jax.random.PRNGKey(0)
    original = jax.vmap(lambda o: walk_run.policy(walk_run.params, o, key))(obs)
    reloaded = jax.vmap(lambda o: policy(params, o, key))(obs)
    np.testing.assert_array_equal(np.asarray(reloaded), np.asarray(original))
    for a, b in zip(jax.tree.leaves(params), jax.tree.leaves(walk_run.params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert len(set(np.asarray(original).tolist())) == 2  # the test compares a non-constant policy
    from decisions.core.agents import sac

    with pytest.raises(ValueError, match="not a saved sac policy"):
        sac.load_policy(path)


def test_save_policy_of_several_seeds_needs_a_seed(tmp_path: Path) -> None:
    policy = dqn.DQNPolicy(obs_shape=(2,), num_actions=3, action_dtype="int32", hidden=(4,))
    params = jax.vmap(policy.init)(jax.random.split(jax.random.PRNGKey(0), 2))
    result = TrainResult(policy=policy, params=params, metrics={}, train_seconds=0.0, env_steps=0)
    with pytest.raises(ValueError, match="^seed:"):
        dqn.save_policy(tmp_path / "p.msgpack", result)
    dqn.save_policy(tmp_path / "p.msgpack", result, seed=1)
    _, loaded = dqn.load_policy(tmp_path / "p.msgpack")
    np.testing.assert_array_equal(
        loaded["q"]["params"]["Dense_0"]["kernel"], params["q"]["params"]["Dense_0"]["kernel"][1]
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("total_env_steps", 0),
        ("total_env_steps", 300),  # nothing left after learning_starts
        ("num_envs", 0),
        ("learning_starts", 2.5),
        ("buffer_size", 2),  # smaller than num_envs
        ("batch_size", 0),
        ("gamma", 1.5),
        ("n_step", 0),
        ("train_freq", 0),
        ("gradient_steps", -1),
        ("learning_rate", 0.0),
        ("learning_rate", float("nan")),
        ("tau", 0.0),
        ("tau", 1.5),
        ("target_update_interval", 0),
        ("hidden", ()),
        ("hidden", (32, 0)),
        ("normalize_obs", 1),
        ("bootstrap_truncated", "yes"),
        ("reward_scale", -1.0),
        ("log_every", 0),
        ("exploration_fraction", 0.0),
        ("epsilon_start", 1.5),
        ("epsilon_end", -0.1),
        ("huber_delta", 0.0),
        ("loss", "l1"),
        ("grad_clip", "norm"),
    ],
)
def test_bad_config_raises_naming_the_field(field: str, value) -> None:
    base = {"total_env_steps": 1000, "learning_starts": 300, "num_envs": 4}
    with pytest.raises(ValueError, match=f"^{field}:"):
        dqn.DQNConfig(**{**base, field: value})


def test_config_is_hashable_and_derives_the_step_counts() -> None:
    config = dqn.DQNConfig(total_env_steps=1000, num_envs=4, learning_starts=10, train_freq=2, n_step=3)
    assert hash(config) == hash(dataclasses.replace(config))
    assert config.prefill_steps == 3  # 10 transitions rounded up to whole vector steps
    assert config.iterations == (1000 - 12) // 8
    assert config.env_steps == (2 + 3 + config.iterations * 2) * 4


def test_rejects_a_continuous_action_space() -> None:
    with pytest.raises(ValueError, match="Discrete action space"):
        dqn.train(ContinuousTarget(), WALK_CONFIG, key=jax.random.PRNGKey(0))


def test_td_loss_is_huber_by_default_or_half_the_squared_error() -> None:
    q, target = jnp.array([0.0, 0.0]), jnp.array([0.5, 3.0])
    huber = dqn.DQNConfig(total_env_steps=1000, learning_starts=10)
    assert float(huber.td_loss(q, target)) == pytest.approx((0.125 + 2.5) / 2)  # linear beyond delta 1
    squared = dataclasses.replace(huber, loss="squared")
    assert float(squared.td_loss(q, target)) == pytest.approx((0.125 + 4.5) / 2)


@pytest.mark.parametrize(("grad_clip", "expected"), [("global_norm", [0.6, 0.8]), ("value", [0.5, 1.0])])
def test_gradient_clip_is_by_global_norm_or_per_element(grad_clip: str, expected: list[float]) -> None:
    config = dqn.DQNConfig(total_env_steps=1000, learning_starts=10, max_grad_norm=1.0, grad_clip=grad_clip)
    clip = config.gradient_clip()
    grads = jnp.array([3.0, 4.0]) if grad_clip == "global_norm" else jnp.array([0.5, 4.0])
    clipped, _ = clip.update(grads, clip.init(grads))
    np.testing.assert_allclose(np.asarray(clipped), expected, rtol=1e-6)
