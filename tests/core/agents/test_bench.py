"""Our PPO and DQN against rejax's (``core.agents.bench``) and the gymnax adapter they run on.

The default suite needs neither gymnax nor rejax: what needs gymnax skips without it, and the
peer's figures are checked only where rejax is installed (``pytest.importorskip``), in a slow
test. The benchmark itself is costed by compilation (tens of seconds per agent on a CPU).
"""

from __future__ import annotations

import importlib.util
import math
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents import bench
from decisions.core.agents.bench_dqn import ours_dqn_config

OURS_KEYS = ("ours_final_return", "ours_final_return_std", "ours_train_seconds", "ours_run_seconds", "ours_compile_seconds")
PEER_KEYS = tuple(k.replace("ours", "rejax") for k in OURS_KEYS) + (
    "train_time_ratio_ours_over_rejax",
    "run_time_ratio_ours_over_rejax",
)

DQN_KEYS = tuple(f"dqn_{key}" for key in OURS_KEYS)
DQN_PEER_KEYS = tuple(f"dqn_{key}" for key in PEER_KEYS)

# Enough for our PPO to beat a random policy on CartPole by far (random: about 20 steps); DQN
# only runs (its 1,000 random steps, then 50 learning ones).
LEARN_BUDGET: dict[str, Any] = {
    "total_steps": 16 * 512, "seeds": 1, "eval_episodes": 16, "timed_repeats": 1, "peer": False, "dqn_total_steps": 1200,
}


def test_without_gymnax_only_the_note(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "gymnax" else real(name, *a))
    figures = bench.run_bench(**bench.SMOKE_BUDGET)
    assert figures["peer_available"] is False
    assert "gymnax is not installed" in figures["note"]
    assert not any("/" in key for key in figures)


def test_peer_absent_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gymnax")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rejax" else real(name, *a))
    assert bench.peer_status() == (False, f"rejax is not installed ({bench.PEER_INSTALL})")
    monkeypatch.setattr(importlib.util, "find_spec", real)
    if real("rejax") is not None:
        import gymnax.environments.environment as gymnax_env

        monkeypatch.setattr(gymnax_env.Environment, "is_truncated", lambda *a: None, raising=False)
        available, note = bench.peer_status()
        assert not available and "needs gymnax<1.0" in note


def test_hyperparameters_round_the_budget_to_iterations() -> None:
    hp = bench.Hyperparameters(num_envs=4, rollout_steps=128)
    assert hp.env_steps(500_000) == 976 * 512
    with pytest.raises(ValueError, match="total_steps"):
        hp.env_steps(100)
    with pytest.raises(ValueError, match="seeds"):
        bench.run_bench(seeds=0)


def test_ours_trainer_takes_the_shared_value_clipping(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gymnax")
    from decisions.core.agents.gymnax_adapter import GymnaxEnv

    configs: list[Any] = []
    monkeypatch.setattr(bench.ppo, "train_seeds", lambda env, config, keys: configs.append(config))
    env = GymnaxEnv.make("CartPole-v1")
    for clip in (True, False):
        train, _ = bench.ours_trainer(env, bench.Hyperparameters(clip_value_loss=clip), 512)
        train(jax.random.split(jax.random.PRNGKey(0), 1))
    assert [c.clip_value_loss for c in configs] == [True, False]


def test_ours_dqn_config_runs_as_rejax_does() -> None:
    config = ours_dqn_config(bench.DQNHyperparameters(), 100_000)
    assert (config.loss, config.grad_clip, config.bootstrap_truncated) == ("squared", "value", False)
    assert config.log_every == config.iterations and not config.normalize_obs
    huber = ours_dqn_config(bench.DQNHyperparameters(loss="huber"), 100_000)
    assert huber.loss == "huber"


def test_dqn_hyperparameters_round_the_budget_and_name_the_settings() -> None:
    hp = bench.DQNHyperparameters(num_envs=4, learning_starts=1_000)
    assert hp.env_steps(100_003) == 100_000
    with pytest.raises(ValueError, match="dqn_total_steps"):
        hp.env_steps(1_004)
    figures = hp.figures()
    assert figures["dqn_hidden"] == [64, 64] and figures["dqn_buffer_size"] == hp.buffer_size
    assert (figures["dqn_loss"], figures["dqn_grad_clip"], figures["dqn_bootstrap_truncated"]) == ("squared", "value", False)
    assert all(key.startswith("dqn_") for key in figures)
    with pytest.raises(ValueError, match="dqn_total_steps"):
        bench.run_bench(dqn_total_steps=500)
    with pytest.raises(ValueError, match="dqn_total_steps"):  # enough for the default prefill, not this one
        bench.run_bench(dqn_total_steps=1_500, dqn_hp=bench.DQNHyperparameters(learning_starts=2_000))


def test_adapter_splits_termination_from_truncation() -> None:
    pytest.importorskip("gymnax")
    from decisions.core.agents.gymnax_adapter import GymnaxEnv
    from decisions.core.spaces import Box, Discrete

    env = GymnaxEnv.make("CartPole-v1", max_steps_in_episode=5)
    params = env.default_params
    assert isinstance(env.action_space(params), Discrete) and env.action_space(params).n == 2
    assert isinstance(env.observation_space(params), Box) and env.observation_space(params).shape == (4,)

    @partial(jax.jit, static_argnums=0)
    def episode(env: GymnaxEnv, actions: jax.Array) -> tuple[jax.Array, ...]:
        params = env.default_params
        _, state = env.reset(jax.random.PRNGKey(0), params)

        def step(state: Any, action: jax.Array) -> tuple[Any, tuple[jax.Array, ...]]:
            obs, state, reward, terminated, truncated, _ = env.step(jax.random.PRNGKey(1), state, action, params)
            return state, (obs, reward, terminated, truncated)

        return jax.lax.scan(step, state, actions)[1]

    # Alternating pushes keep the pole up: the fifth step is cut by the time limit.
    obs, reward, terminated, truncated = episode(env, jnp.asarray([0, 1, 0, 1, 0], jnp.int32))
    assert obs.dtype == jnp.float32 and obs.shape == (5, 4) and reward.shape == (5,)
    assert not terminated.any()
    assert truncated.tolist() == [False, False, False, False, True]
    # Pushing one way for long enough (no time limit) topples the pole: a termination.
    _, _, terminated, truncated = episode(GymnaxEnv.make("CartPole-v1"), jnp.ones(60, jnp.int32))
    assert terminated.any() and not truncated.any()


def _finite(figures: dict[str, Any], env: str, keys: tuple[str, ...]) -> None:
    for key in keys:
        value = figures[f"{env}/{key}"]
        assert isinstance(value, float) and math.isfinite(value), (key, value)


@pytest.fixture(scope="module")
def ours_only() -> dict[str, Any]:
    pytest.importorskip("gymnax")
    return bench.run_bench(**LEARN_BUDGET)


def test_ours_reported_without_the_peer(ours_only: dict[str, Any]) -> None:
    _finite(ours_only, "CartPole-v1", (*OURS_KEYS, "random_return"))
    assert ours_only["peer_available"] is False and ours_only["note"]
    assert not any(key.startswith("CartPole-v1/rejax") or key.endswith("_over_rejax") for key in ours_only)
    assert ours_only["CartPole-v1/env_steps"] == LEARN_BUDGET["total_steps"]
    assert ours_only["hidden"] == [64, 64] and ours_only["num_envs"] == 4
    assert ours_only["clip_value_loss"] is True  # shared with rejax, which always clips its value loss


def test_dqn_row_beside_ppo(ours_only: dict[str, Any]) -> None:
    _finite(ours_only, "CartPole-v1", DQN_KEYS)
    assert ours_only["CartPole-v1/dqn_env_steps"] == LEARN_BUDGET["dqn_total_steps"]
    assert 0 < ours_only["CartPole-v1/dqn_ours_final_return"] <= 500
    assert ours_only["dqn_total_steps"] == LEARN_BUDGET["dqn_total_steps"] and ours_only["dqn_batch_size"] > 0
    assert not any(key.startswith("CartPole-v1/dqn_rejax") for key in ours_only)


def test_ours_beats_a_random_policy(ours_only: dict[str, Any]) -> None:
    ours, random = ours_only["CartPole-v1/ours_final_return"], ours_only["CartPole-v1/random_return"]
    assert ours > 2 * random + 20, (ours, random)


@pytest.mark.slow
def test_smoke_budget_with_the_peer() -> None:
    pytest.importorskip("rejax")
    available, note = bench.peer_status()
    if not available:
        pytest.skip(note)
    figures = bench.run_bench(**bench.SMOKE_BUDGET)
    assert figures["peer_available"] is True and figures["peer"].startswith("rejax")
    _finite(figures, "CartPole-v1", (*OURS_KEYS, *PEER_KEYS, *DQN_KEYS, *DQN_PEER_KEYS, "random_return"))
    names = ("ours_final_return", "rejax_final_return", "dqn_ours_final_return", "dqn_rejax_final_return", "random_return")
    assert all(0 < figures[f"CartPole-v1/{key}"] <= 500 for key in names)


def _skip_without_peer() -> None:
    """Skip the calling test unless rejax is installed and can run here (``bench.peer_status``)."""
    pytest.importorskip("rejax")
    available, why = bench.peer_status()
    if not available:
        pytest.skip(why)


@pytest.mark.slow
def test_dqn_peer_policy_is_greedy_on_its_params() -> None:
    _skip_without_peer()
    from decisions.core.agents.bench_dqn import rejax_dqn_trainer
    from decisions.core.agents.gymnax_adapter import GymnaxEnv

    env = GymnaxEnv.make("CartPole-v1")
    hp = bench.DQNHyperparameters(learning_starts=64, buffer_size=256, batch_size=16)
    with pytest.raises(ValueError, match="hidden"):
        rejax_dqn_trainer(env, bench.DQNHyperparameters(hidden=(32,)), 128)
    train, policy = rejax_dqn_trainer(env, hp, 128)
    params = train(jax.random.split(jax.random.PRNGKey(0), 2))
    obs = jnp.asarray([0.0, 0.0, 0.05, 0.0], jnp.float32)
    one = jax.tree_util.tree_map(lambda x: x[0], params)
    assert len({int(policy(one, obs, jax.random.PRNGKey(k))) for k in range(8)}) == 1
    assert np.isfinite(bench.evaluate_seeds(env, policy, params, 2, 2)).all()


@pytest.mark.slow
def test_peer_policy_is_greedy_on_its_params() -> None:
    _skip_without_peer()
    from decisions.core.agents.gymnax_adapter import GymnaxEnv

    env = GymnaxEnv.make("CartPole-v1")
    train, policy = bench.rejax_trainer(env, bench.Hyperparameters(rollout_steps=32), 128)
    params = jax.tree_util.tree_map(lambda x: x[0], train(jax.random.split(jax.random.PRNGKey(0), 1)))
    obs = jnp.asarray([0.0, 0.0, 0.05, 0.0], jnp.float32)
    actions = {int(policy(params, obs, jax.random.PRNGKey(k))) for k in range(8)}
    assert len(actions) == 1 and actions <= {0, 1}
    assert np.isfinite(bench.evaluate_seeds(env, policy, jax.tree_util.tree_map(lambda x: x[None], params), 1, 2)).all()
