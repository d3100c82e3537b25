"""Tests for decisions.core.agents.onpolicy.host_loop (PPO on host environments, with masks)."""

from __future__ import annotations

from functools import partial
from typing import Any

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents import ppo
from decisions.core.agents.onpolicy import Batch, gae, surrogate_loss
from decisions.core.agents.onpolicy.host_loop import bootstrap_values, policy_actions, train_agent_host
from decisions.core.gym_adapter import GymnasiumEnv
from decisions.core.host_envs import GymVecSlots, run_episodes
from tests.core.probe_envs import MatchTwo, WalkToGoal
from tests.core.test_host_loop import LURE_BEST, LURE_MASKS, MaskedLure

LURE_CONFIG = ppo.PPOConfig(
    num_envs=4,
    rollout_steps=16,
    total_env_steps=64 * 20,
    epochs=4,
    minibatches=2,
    hidden=(16,),
    learning_rate=1e-2,
    lr_schedule="constant",
    log_every=10,
)


def _lure_run(action_masks: bool) -> tuple[Any, list[MaskedLure]]:
    envs = [MaskedLure() for _ in range(4)]
    agent = ppo.PPOAgent.for_shapes(LURE_CONFIG, obs_shape=(2,), num_actions=3)
    return train_agent_host(
        agent, GymVecSlots(envs), key=jax.random.PRNGKey(0), action_masks=action_masks
    ), envs


def test_masked_ppo_never_takes_the_invalid_lure() -> None:
    result, envs = _lure_run(action_masks=True)
    assert sum(env.invalid_taken for env in envs) == 0  # every sampled action of the run was valid
    obs = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(policy_actions(result.policy, result.params, obs, LURE_MASKS), LURE_BEST)
    rows, masks = np.repeat(obs, 500, axis=0), np.repeat(LURE_MASKS, 500, axis=0)
    sampled = policy_actions(result.policy, result.params, rows, masks, key=jax.random.PRNGKey(1))
    assert masks[np.arange(1000), sampled].all()
    assert np.mean(result.metrics["episode_return"][-5:]) > 0.5  # the best valid rewards are 0.5 and 0.6


def test_without_masks_the_same_learner_takes_the_lure() -> None:
    """The guard of the test above: the lure is real, masks are what keeps PPO off it."""
    result, envs = _lure_run(action_masks=False)
    assert sum(env.invalid_taken for env in envs) > 100
    greedy = np.asarray(jax.jit(result.policy)(result.params, jnp.eye(2, dtype=jnp.float32), None))
    np.testing.assert_array_equal(greedy, [2, 0])  # the invalid, most rewarding actions


def test_truncated_steps_bootstrap_from_the_final_observation_value() -> None:
    value = jnp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    last_value = jnp.asarray([7.0, 8.0])
    final_value = jnp.asarray([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])
    truncated = jnp.asarray([[False, True], [True, False], [False, True]])
    next_value = jax.jit(bootstrap_values)(value, last_value, final_value, truncated)
    np.testing.assert_array_equal(np.asarray(next_value), [[3.0, 20.0], [30.0, 6.0], [7.0, 60.0]])
    # Slot 0 terminates at step 0: no bootstrap there; GAE with gamma 0.5, lambda 1, rewards 1.
    terminated = jnp.asarray([[True, False], [False, False], [False, False]])
    gae_jit = jax.jit(gae, static_argnums=(5, 6))
    advantages, _ = gae_jit(jnp.ones((3, 2)), value, next_value, terminated, truncated, 0.5, 1.0)
    expected = [
        [1.0 - 1.0, 1.0 + 0.5 * 20.0 - 2.0],  # terminated: r - V; truncated: r + gamma V(final_obs) - V
        [1.0 + 0.5 * 30.0 - 3.0, (1.0 + 0.5 * 6.0 - 4.0) + 0.5 * (1.0 + 0.5 * 60.0 - 6.0)],
        [1.0 + 0.5 * 7.0 - 5.0, 1.0 + 0.5 * 60.0 - 6.0],
    ]
    np.testing.assert_allclose(np.asarray(advantages), expected, rtol=1e-6)


def test_host_loop_reproduces_the_functional_loop() -> None:
    """Same key, deterministic env that truncates often, no observation normalisation: the same run."""
    walk = WalkToGoal(length=3, max_steps=6)
    config = ppo.PPOConfig(
        num_envs=4,
        rollout_steps=16,
        total_env_steps=64 * 8,
        minibatches=2,
        hidden=(16,),
        normalize_obs=False,
        log_every=3,
    )
    reference = ppo.train(walk, config, key=jax.random.PRNGKey(3))
    agent = ppo.PPOAgent.for_shapes(config, obs_shape=(2,), num_actions=2)
    assert agent == ppo.make_agent(walk, config)
    calls: list[tuple[str, int, int]] = []
    envs = GymVecSlots([GymnasiumEnv(walk) for _ in range(4)])
    result = train_agent_host(agent, envs, key=jax.random.PRNGKey(3), progress=lambda *c: calls.append(c))
    assert calls == [("ppo", 3, 8), ("ppo", 6, 8), ("ppo", 8, 8)]
    assert set(result.metrics) == set(reference.metrics) and result.env_steps == reference.env_steps
    # Bit for bit under XLA's default flags (but the mean return's summation order); the suite's unoptimised
    # compilation (conftest.TEST_XLA_FLAGS) rounds the two programs apart in the last bits: relative to the
    # metric's scale, as a mean whose terms cancel (the policy loss near 0) keeps only its terms' rounding.
    for name in reference.metrics:
        scale = float(np.max(np.abs(reference.metrics[name])))
        np.testing.assert_allclose(
            result.metrics[name], reference.metrics[name], rtol=1e-5, atol=1e-8 + 1e-5 * scale, err_msg=name
        )
    for a, b in zip(jax.tree.leaves(result.params), jax.tree.leaves(reference.params), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    assert np.sum(reference.metrics["episodes"]) > 20  # episodes did end (and auto-reset) during the run


def test_ppo_on_cartpole_beats_a_random_policy() -> None:
    config = ppo.PPOConfig(
        num_envs=8,
        rollout_steps=32,
        total_env_steps=10_240,
        epochs=10,
        minibatches=4,
        learning_rate=1e-3,
        gamma=0.98,
        gae_lambda=0.8,
        hidden=(64, 64),
        log_every=10,
    )
    envs = GymVecSlots([gymnasium.make("CartPole-v1") for _ in range(8)])
    agent = ppo.PPOAgent.for_shapes(config, obs_shape=(envs.obs_dim,), num_actions=envs.num_actions)
    result = train_agent_host(agent, envs, key=jax.random.PRNGKey(0))
    assert result.env_steps == 10_240 and result.metrics["episode_return"].shape == (40,)
    evaluation = GymVecSlots([gymnasium.make("CartPole-v1") for _ in range(4)])
    act = partial(policy_actions, result.policy, result.params)
    trained = run_episodes(evaluation, act, seed=100, episodes_per_slot=2)
    rng = np.random.default_rng(0)
    random = run_episodes(
        evaluation, lambda obs, mask: rng.integers(0, 2, len(obs)), seed=100, episodes_per_slot=5
    )
    assert np.mean(random) < 30  # CartPole's random policy lasts about 22 steps
    assert np.mean(trained) > max(100.0, 4 * np.mean(random)), (np.mean(trained), np.mean(random))


def test_an_all_valid_mask_changes_nothing_and_a_mask_gives_the_masked_distribution() -> None:
    config = ppo.PPOConfig(num_envs=2, rollout_steps=3, total_env_steps=6, minibatches=1, hidden=(8,))
    policy = ppo.PPOAgent.for_shapes(config, obs_shape=(3,), num_actions=4).policy
    params = jax.jit(policy.init)(jax.random.PRNGKey(0))
    net = params["net"]
    keys = jax.random.split(jax.random.PRNGKey(1), 2)
    mask = jnp.asarray([[True, False, True, False], [False, True, True, True]] * 3)
    batch = Batch(
        obs=jax.random.normal(keys[0], (6, 3)),
        action=jnp.asarray([0, 1, 2, 2, 3, 3]),
        log_prob=jnp.full((6,), -1.0),
        advantage=jax.random.normal(keys[1], (6,)),
        target=jnp.zeros(6),
    )
    # The loss, its metrics and its gradient in one program (one per batch structure: with and without mask).
    loss_and_grad = jax.jit(jax.value_and_grad(surrogate_loss, has_aux=True), static_argnums=(1, 3, 4))
    (plain, _), (all_valid, _) = (
        loss_and_grad(net, policy, batch, config, 0.2),
        loss_and_grad(net, policy, batch._replace(mask=mask | True), config, 0.2),
    )
    for a, b in zip(jax.tree.leaves(plain), jax.tree.leaves(all_valid), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    (_, metrics), grads = loss_and_grad(net, policy, batch._replace(mask=mask), config, 0.2)
    logits = np.asarray(policy.network.apply(net, batch.obs, method="actor"), np.float64)
    p = np.where(mask, np.exp(logits - logits.max(axis=1, keepdims=True)), 0.0)
    p /= p.sum(axis=1, keepdims=True)
    entropy = -np.sum(np.where(mask, p * np.log(np.where(mask, p, 1.0)), 0.0), axis=1)
    assert float(metrics["entropy"]) == pytest.approx(entropy.mean(), rel=1e-5)
    assert all(np.isfinite(np.asarray(g)).all() for g in jax.tree.leaves(grads))
    greedy = policy_actions(policy, params, batch.obs, mask)
    np.testing.assert_array_equal(greedy, np.where(mask, logits, -np.inf).argmax(axis=1))


class _Slots:
    """A MultiAgentVecEnv of given sizes that is never stepped (the loop refuses it first)."""

    def __init__(self, num_slots: int, obs_dim: int, num_actions: int) -> None:
        self.num_slots, self.obs_dim, self.num_actions = num_slots, obs_dim, num_actions

    def reset(self, seed: int) -> tuple[np.ndarray, np.ndarray]:
        raise AssertionError("reset before the checks")

    def step(self, actions: np.ndarray) -> Any:
        raise AssertionError("step before the checks")

    def close(self) -> None:
        pass


SMALL = ppo.PPOConfig(num_envs=4, rollout_steps=2, total_env_steps=8, minibatches=1, hidden=(4,))


def test_agent_and_environments_must_agree() -> None:
    agent = ppo.PPOAgent.for_shapes(SMALL, obs_shape=(3,), num_actions=2)
    with pytest.raises(ValueError, match="^num_envs: the config has 4, the environments have 2 slots"):
        train_agent_host(agent, _Slots(2, 3, 2), key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="^obs_shape: "):
        train_agent_host(agent, _Slots(4, 5, 2), key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="^num_actions: "):
        train_agent_host(agent, _Slots(4, 3, 3), key=jax.random.PRNGKey(0))
    multi = ppo.make_agent(MatchTwo(), SMALL)  # MultiDiscrete actions
    with pytest.raises(
        ValueError, match="^policy: the host loop needs float observations and Discrete actions"
    ):
        train_agent_host(multi, _Slots(4, 7, 7), key=jax.random.PRNGKey(0))
    with pytest.raises(ValueError, match="^num_actions: "):
        ppo.PPOAgent.for_shapes(SMALL, obs_shape=(3,), num_actions=0)
