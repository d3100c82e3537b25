"""Tests for decisions.core.agents.offpolicy.host_loop and core.host_envs (DQN on host environments, with masks)."""

from __future__ import annotations

from functools import partial
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from decisions.core.agents import dqn, offpolicy
from decisions.core.agents.offpolicy.host_loop import greedy_actions, train_agent_host
from decisions.core.agents.replay import Transition
from decisions.core.gym_adapter import GymnasiumEnv
from decisions.core.host_envs import GymVecSlots, SlotStep, SubprocessVecSlots, run_episodes
from tests.core.probe_envs import WalkToGoal

# MaskedLure: state s (one-hot), one step. The invalid action pays most in both states.
LURE_REWARDS = np.array([[0.2, 0.5, 1.0], [1.0, 0.3, 0.6]], np.float32)
LURE_MASKS = np.array([[True, True, False], [False, True, True]])
LURE_BEST = [1, 2]  # the best valid actions


class MaskedLure(gymnasium.Env):
    """A one-step contextual bandit whose most rewarding action is invalid; counts invalid actions taken."""

    observation_space = gymnasium.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(3)

    def __init__(self) -> None:
        self.state = 0
        self.invalid_taken = 0

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.state = int(self.np_random.integers(2))
        return np.eye(2, dtype=np.float32)[self.state], {"action_mask": LURE_MASKS[self.state]}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        self.invalid_taken += int(not LURE_MASKS[self.state, action])
        reward = float(LURE_REWARDS[self.state, action])
        return np.zeros(2, np.float32), reward, True, False, {"action_mask": np.ones(3, bool)}


LURE_CONFIG = dqn.DQNConfig(
    total_env_steps=800, num_envs=4, learning_starts=100, batch_size=32, hidden=(16,), learning_rate=3e-3,
    log_every=100,
)


def _lure_run(action_masks: bool) -> tuple[Any, list[MaskedLure]]:
    envs = [MaskedLure() for _ in range(4)]
    agent = dqn.agent_for_shapes(LURE_CONFIG, obs_shape=(2,), num_actions=3)
    return train_agent_host(agent, GymVecSlots(envs), key=jax.random.PRNGKey(0), action_masks=action_masks), envs


def test_masked_dqn_never_takes_the_invalid_lure() -> None:
    result, envs = _lure_run(action_masks=True)
    assert sum(env.invalid_taken for env in envs) == 0  # prefill and exploration included
    obs = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(greedy_actions(result.policy, result.params, obs, LURE_MASKS), LURE_BEST)
    x = jax.jit(offpolicy.normalize, static_argnums=2)(result.params["obs_stats"], jnp.asarray(obs), (2,))
    q = np.asarray(jax.jit(result.policy.network.apply)(result.params["q"], x))
    np.testing.assert_allclose(q[LURE_MASKS], LURE_REWARDS[LURE_MASKS], atol=0.1)  # Q = reward (one step)
    assert np.mean(result.metrics["episode_return"][-50:]) > 0.5  # exploring at epsilon 0.05


def test_without_masks_the_same_learner_takes_the_lure() -> None:
    """The guard of the test above: the lure is real, masks are what keeps the learner off it."""
    result, envs = _lure_run(action_masks=False)
    assert sum(env.invalid_taken for env in envs) > 100
    greedy = np.asarray(jax.jit(result.policy)(result.params, jnp.eye(2, dtype=jnp.float32), None))
    np.testing.assert_array_equal(greedy, [2, 0])  # the invalid, most rewarding actions


SMALL = dqn.agent_for_shapes(dqn.DQNConfig(hidden=(8,), total_env_steps=10_000), obs_shape=(3,), num_actions=4)


@jax.jit
def _small_state(key: jax.Array) -> dqn.DQNState:
    state = SMALL.init(key, jnp.zeros(3))
    # A distinct target network, so the double-DQN target is checked too.
    return state._replace(target_params=jax.tree.map(lambda p: p * 0.5 + 0.1, state.params))


def test_td_target_maximises_over_the_next_valid_actions_only() -> None:
    agent, state = SMALL, _small_state(jax.random.PRNGKey(1))
    apply = jax.jit(agent.network.apply)
    keys = jax.random.split(jax.random.PRNGKey(2), 2)
    batch = Transition(
        obs=jax.random.normal(keys[0], (5, 3)), action=jnp.asarray([0, 1, 2, 3, 1], jnp.int32),
        reward=jnp.linspace(-1.0, 1.0, 5), next_obs=jax.random.normal(keys[1], (5, 3)),
        discount=jnp.asarray([0.99, 0.99, 0.0, 0.99, 0.5]),
    )
    online_next = np.asarray(apply(state.params, batch.next_obs))
    next_mask = np.ones((5, 4), bool)
    next_mask[np.arange(5), online_next.argmax(axis=1)] = False  # the unmasked argmax is now invalid
    best = np.where(next_mask, online_next, -np.inf).argmax(axis=1)
    target_next = np.asarray(apply(state.target_params, batch.next_obs))
    target = np.asarray(batch.reward) + np.asarray(batch.discount) * target_next[np.arange(5), best]
    q = np.asarray(apply(state.params, batch.obs))[np.arange(5), np.asarray(batch.action)]
    expected = float(np.mean(optax.huber_loss(q, target, delta=1.0)))
    update, update_masked = jax.jit(agent.update), jax.jit(agent.update_masked)
    _, metrics = update_masked(state, batch, jnp.asarray(next_mask), None)
    assert float(metrics["q_loss"]) == pytest.approx(expected, rel=1e-5)
    plain, unmasked = update(state, batch, None)
    assert float(unmasked["q_loss"]) != pytest.approx(expected, rel=1e-3)
    # With every action valid the masked update is the unmasked one, exactly.
    all_valid, _ = update_masked(state, batch, jnp.ones((5, 4), bool), None)
    for a, b in zip(jax.tree.leaves(all_valid), jax.tree.leaves(plain), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_random_and_exploring_actions_are_valid_and_uniform() -> None:
    agent, state = SMALL, _small_state(jax.random.PRNGKey(1))
    mask = jnp.asarray([[True, False, True, False], [False, False, False, True]])
    rows = jnp.tile(mask, (2000, 1))
    actions = np.asarray(jax.jit(agent.random_valid_action)(jax.random.PRNGKey(3), rows)).reshape(2000, 2)
    assert set(actions[:, 1]) == {3}
    assert set(actions[:, 0]) == {0, 2} and abs(np.mean(actions[:, 0] == 0) - 0.5) < 0.05
    obs = jax.random.normal(jax.random.PRNGKey(4), (4000, 3))
    explored = np.asarray(jax.jit(agent.explore_masked)(state, obs, rows, jax.random.PRNGKey(5), 0.0))
    assert np.all(np.asarray(rows)[np.arange(4000), explored])
    assert len(set(explored[0::2].tolist())) == 2  # epsilon 1 at progress 0: both valid actions are explored


def test_dqn_on_cartpole_beats_a_random_policy() -> None:
    config = dqn.DQNConfig(
        total_env_steps=6000, num_envs=8, learning_starts=1000, batch_size=64, hidden=(64, 64),
        learning_rate=2.3e-3, tau=0.01, train_freq=2, gradient_steps=2, exploration_fraction=0.2,
        epsilon_end=0.04, log_every=100,
    )
    envs = GymVecSlots([gymnasium.make("CartPole-v1") for _ in range(8)])
    agent = dqn.agent_for_shapes(config, obs_shape=(envs.obs_dim,), num_actions=envs.num_actions)
    result = train_agent_host(agent, envs, key=jax.random.PRNGKey(0))
    assert result.env_steps == config.env_steps == 1000 + config.iterations * 16
    evaluation = GymVecSlots([gymnasium.make("CartPole-v1") for _ in range(4)])
    trained = run_episodes(evaluation, partial(greedy_actions, result.policy, result.params), seed=100,
                           episodes_per_slot=2)
    rng = np.random.default_rng(0)
    random = run_episodes(evaluation, lambda obs, mask: rng.integers(0, 2, len(obs)), seed=100, episodes_per_slot=5)
    assert np.mean(random) < 30  # CartPole's random policy lasts about 22 steps
    assert np.mean(trained) > max(60.0, 2.5 * np.mean(random)), (np.mean(trained), np.mean(random))


def test_host_loop_reproduces_the_functional_loop_exactly() -> None:
    """Same key, deterministic env, no masks: the same actions, replay, updates and curves, bit for bit."""
    walk = WalkToGoal(length=3, max_steps=10)
    config = dqn.DQNConfig(
        total_env_steps=600, num_envs=4, learning_starts=200, batch_size=32, hidden=(32,), n_step=3,
        train_freq=2, gradient_steps=2, log_every=25,
    )
    reference = dqn.train(walk, config, key=jax.random.PRNGKey(3))
    agent = dqn.agent_for_shapes(config, obs_shape=(2,), num_actions=2)
    assert agent == dqn.make_agent(walk, config)
    calls: list[tuple[str, int, int]] = []
    envs = GymVecSlots([GymnasiumEnv(walk) for _ in range(4)])
    result = train_agent_host(agent, envs, key=jax.random.PRNGKey(3), action_masks=False, progress=lambda *c: calls.append(c))
    assert calls == [("dqn training", 25, 50), ("dqn training", 50, 50)]
    assert set(result.metrics) == set(reference.metrics) and result.env_steps == reference.env_steps
    for name in reference.metrics:
        np.testing.assert_array_equal(result.metrics[name], reference.metrics[name], err_msg=name)
    for a, b in zip(jax.tree.leaves(result.params), jax.tree.leaves(reference.params), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert np.mean(reference.metrics["episodes"]) > 0.5  # episodes did end (and auto-reset) during the run


def test_gym_slots_pad_observations_and_mask_padded_actions() -> None:
    envs = GymVecSlots([gymnasium.make("CartPole-v1"), MaskedLure()])
    assert (envs.num_slots, envs.obs_dim, envs.num_actions) == (2, 4, 3)
    obs, mask = envs.reset(seed=0)
    assert obs.dtype == np.float32 and obs.shape == (2, 4) and np.all(obs[1, 2:] == 0.0)
    np.testing.assert_array_equal(mask[0], [True, True, False])
    np.testing.assert_array_equal(mask[1], LURE_MASKS[np.argmax(obs[1, :2])])
    out = envs.step(np.asarray([0, LURE_BEST[int(np.argmax(obs[1, :2]))]]))
    assert out.terminated[1] and not out.terminated[0]
    np.testing.assert_array_equal(out.final_obs[1], 0.0)  # MaskedLure's final observation, before the reset
    np.testing.assert_array_equal(out.final_mask[1], [True, True, True])
    assert out.obs[1, :2].sum() == 1.0  # a new episode's first observation
    with pytest.raises(ValueError, match="slot 0 has 2 actions"):
        envs.step(np.asarray([2, 1]))


def test_subprocess_slots_step_two_cartpoles_like_in_process_ones() -> None:
    local = GymVecSlots([gymnasium.make("CartPole-v1") for _ in range(2)])
    with SubprocessVecSlots([partial(GymVecSlots.make, "CartPole-v1")] * 2) as remote:
        assert (remote.num_slots, remote.obs_dim, remote.num_actions) == (2, 4, 2)
        for got, want in zip(remote.reset(7), local.reset(7), strict=True):
            np.testing.assert_array_equal(got, want)
        ended = False
        for t in range(40):  # always pushing left ends an episode in about ten steps
            actions = np.asarray([0, t % 2])
            got, want = remote.step(actions), local.step(actions)
            assert isinstance(got, SlotStep) and got.obs.shape == (2, 4) and got.mask.shape == (2, 2)
            assert got.reward.shape == got.terminated.shape == got.truncated.shape == (2,)
            for name in ("obs", "mask", "reward", "terminated", "truncated", "final_obs", "final_mask"):
                np.testing.assert_array_equal(getattr(got, name), getattr(want, name), err_msg=name)
            ended |= bool(got.terminated[0])
        assert ended


class _Scripted:
    """A MultiAgentVecEnv of the lure's sizes (4 slots, 2 observations, 3 actions) whose reset and step
    outputs a test can break."""

    num_slots, obs_dim, num_actions = 4, 2, 3

    def __init__(self, reset_out: tuple[Any, ...] | None = None, step_out: tuple[Any, ...] | None = None) -> None:
        self.reset_out = reset_out or (np.zeros((4, 2), np.float32), np.ones((4, 3), bool))
        self.step_out = step_out or _step_out()

    def reset(self, seed: int) -> tuple[Any, ...]:
        return self.reset_out

    def step(self, actions: np.ndarray) -> tuple[Any, ...]:
        return self.step_out

    def close(self) -> None:
        pass


def _step_out(**change: Any) -> tuple[Any, ...]:
    fields = {
        "obs": np.zeros((4, 2), np.float32), "mask": np.ones((4, 3), bool), "reward": np.zeros(4, np.float32),
        "terminated": np.zeros(4, bool), "truncated": np.zeros(4, bool), "final_obs": np.zeros((4, 2), np.float32),
        "final_mask": np.ones((4, 3), bool),
    }
    return tuple(SlotStep(**{**fields, **change}))


BAD_CONFIG = dqn.DQNConfig(total_env_steps=20, num_envs=2, learning_starts=2, batch_size=2, hidden=(4,))
_NO_VALID_ACTION_IN_SLOT_1 = np.asarray([[1, 1, 1], [0, 0, 0], [1, 1, 1], [1, 1, 1]], bool)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (_Scripted(reset_out=(np.zeros((4, 3), np.float32), np.ones((4, 3), bool))), r"reset obs: .* got \(4, 3\)"),
        (_Scripted(reset_out=(np.zeros((4, 2), np.float32), np.ones((4, 2), bool))), r"reset mask: .* got \(4, 2\)"),
        (_Scripted(reset_out=(np.zeros((4, 2), np.float32), np.ones((4, 3), int))), "reset mask: must be a bool"),
        (_Scripted(reset_out=(np.zeros((4, 2), np.float32), _NO_VALID_ACTION_IN_SLOT_1)),
         r"slots \[1\] have no valid action"),
        (_Scripted(step_out=_step_out(final_obs=np.zeros((4, 3), np.float32))), "step final_obs: "),
        (_Scripted(step_out=_step_out(mask=np.ones((5, 3), bool))), "step mask: "),
        (_Scripted(step_out=_step_out(reward=np.zeros((4, 1), np.float32))), r"step reward: .* got \(4, 1\)"),
        (_Scripted(step_out=_step_out()[:6]), "step: must return 7 arrays"),
    ],
)
def test_bad_environment_output_raises_a_clear_error(env: _Scripted, message: str) -> None:
    agent = dqn.agent_for_shapes(LURE_CONFIG, obs_shape=(2,), num_actions=3)  # the lure's agent (compiled there)
    with pytest.raises(ValueError, match=message):
        train_agent_host(agent, env, key=jax.random.PRNGKey(0))


def test_agent_and_environments_must_agree() -> None:
    env = _Scripted()
    with pytest.raises(ValueError, match="^num_envs: the config has 2"):
        train_agent_host(dqn.agent_for_shapes(BAD_CONFIG, obs_shape=(2,), num_actions=3), env, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="^obs_shape: "):
        train_agent_host(dqn.agent_for_shapes(LURE_CONFIG, obs_shape=(3,), num_actions=3), env, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="^num_actions: "):
        train_agent_host(dqn.agent_for_shapes(LURE_CONFIG, obs_shape=(2,), num_actions=2), env, key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="^num_actions: "):
        dqn.agent_for_shapes(BAD_CONFIG, obs_shape=(3,), num_actions=0)
