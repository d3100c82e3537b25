"""Tests of CoMP tasks, PPO experts, the common evaluator and offline datasets (issue 6)."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from decisions.telecom.comp.dt.datasets import (
    OfflineDataset,
    default_behaviours,
    generate_dataset,
    returns_to_go,
)
from decisions.telecom.comp.policies.experts import (
    expert_config,
    expert_policy,
    load_expert,
    save_expert,
    train_expert,
)
from decisions.telecom.comp.policies.heuristics import SERVING_SET_POLICIES as POLICIES
from decisions.telecom.comp.policies.multitask import MultiTaskCompEnv, train_multitask
from decisions.telecom.comp.policies.rollouts import (
    ENV,
    EXPERT_ENV,
    epsilon_noisy,
    evaluate_policy,
    task_policy,
)
from decisions.telecom.comp.sim.catalog import FEATURE_DIM, TRAINING_TASKS, UNSEEN_TASKS, Task
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS
from decisions.telecom.comp.sim.env import hide_links
from decisions.telecom.comp.sim.tasks import features_from_params

SMALL = TRAINING_TASKS[0]
F = 2 * MAX_CELLS + 1
# Tiny PPO: one short iteration per chunk, small nets, so compile dominates and stays short.
TINY = expert_config(
    num_envs=4, rollout_steps=100, total_env_steps=800, hidden=(16,), epochs=1, minibatches=1, log_every=2
)
# The environments' resets jitted: one compile each, not one per operation.
_reset = jax.jit(ENV.reset)
_expert_reset = jax.jit(EXPERT_ENV.reset)


# ----------------------------------------------------------------------------- tasks


def test_task_name_params_and_features() -> None:
    task = Task(7, 15, "resource_fair", 0)
    assert task.name == "c7-u15-resource_fair-s0"
    assert SMALL.name == "c3-u5-resource_fair-me"
    params = task.params()
    assert int(params.cell_mask.sum()) == 7 and int(params.user_mask.sum()) == 15
    feats = Task(5, 12, "max_capacity", 4).features()
    assert feats.shape == (FEATURE_DIM,) and feats.dtype == np.float32
    np.testing.assert_allclose(feats, [5 / 13, 12 / 30, 0, 0, 0, 1])
    np.testing.assert_allclose(features_from_params(Task(5, 12, "max_capacity", 4).params()), feats)
    # same seed, same layout; mobile-env layout uses mobile-env's stations
    np.testing.assert_array_equal(task.params().cell_pos, Task(7, 15, "resource_fair", 0).params().cell_pos)
    assert not np.array_equal(task.params().cell_pos, Task(7, 15, "resource_fair", 1).params().cell_pos)
    np.testing.assert_array_equal(SMALL.params().cell_pos[:3], [[110, 130], [65, 80], [120, 30]])
    assert Task.from_dict(task.to_dict()) == task


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_cells": 2, "n_users": 10}, "n_cells"),
        ({"n_cells": 14, "n_users": 10}, "n_cells"),
        ({"n_cells": 5, "n_users": 4}, "n_users"),
        ({"n_cells": 5, "n_users": 31}, "n_users"),
        ({"n_cells": 5.5, "n_users": 10}, "n_cells"),
        ({"n_cells": 5, "n_users": 10, "scheduler": "round_robin"}, "scheduler"),
        ({"n_cells": 5, "n_users": 10, "layout_seed": -1}, "layout_seed"),
        ({"n_cells": 5, "n_users": 10, "layout": "mobile_env"}, "layout"),
    ],
)
def test_task_validation_names_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}:"):
        Task(**kwargs)


def test_task_sets() -> None:
    names = [t.name for t in (*TRAINING_TASKS, *UNSEEN_TASKS)]
    assert len(names) == len(set(names))
    train_keys = {t.config_key for t in TRAINING_TASKS}
    assert not any(t.config_key in train_keys for t in UNSEEN_TASKS)
    assert 10 <= len(TRAINING_TASKS) <= 16 and len(UNSEEN_TASKS) >= 4
    assert {t.scheduler for t in TRAINING_TASKS} == {
        "resource_fair",
        "rate_fair",
        "proportional_fair",
        "max_capacity",
    }
    me = {
        (t.n_cells, t.n_users)
        for t in TRAINING_TASKS
        if t.layout == "mobile_env" and t.scheduler == "resource_fair"
    }
    assert me == {(3, 5), (7, 15), (13, 30)}


# ----------------------------------------------------------------------------- evaluation


def test_evaluate_policy_reproducible_and_ordered() -> None:
    a = evaluate_policy(SMALL, POLICIES["max_snr"], episodes=16, seed=3)
    b = evaluate_policy(SMALL, POLICIES["max_snr"], episodes=16, seed=3)
    assert a == b
    rnd = evaluate_policy(SMALL, POLICIES["random"], episodes=16, seed=3)
    # random serving sets keep covered users served (at least their best cell), so they lose
    # less than random toggles did; max-SNR still wins on the same episodes
    assert a["return_mean"] > rnd["return_mean"] + 1.0
    assert a["qoe"] > rnd["qoe"]
    for r in (a, rnd):
        assert 0.0 <= r["qoe"] <= 1.0 and 0.0 < r["jain_qoe"] <= 1.0
        assert -100.0 <= r["return_mean"] <= 100.0


def test_epsilon_noisy() -> None:
    net = SMALL.params()
    obs, _ = _reset(jax.random.PRNGKey(0), net)
    key = jax.random.PRNGKey(1)
    base = POLICIES["max_snr"](obs, key, net)
    # each policy jitted: one compile, not one per operation
    np.testing.assert_array_equal(jax.jit(epsilon_noisy(POLICIES["max_snr"], 0.0))(obs, key, net), base)
    always = jax.jit(epsilon_noisy(POLICIES["max_snr"], 1.0))
    noisy = np.stack([always(obs, jax.random.PRNGKey(i), net) for i in range(2)])
    assert noisy[:, 5:].max() == 0 and noisy.max() <= 3 and len(np.unique(noisy[:, :5])) > 1
    with pytest.raises(ValueError, match="^epsilon:"):
        epsilon_noisy(POLICIES["max_snr"], 1.5)


# ----------------------------------------------------------------------------- datasets


EPISODES = 2
"""Episodes per behaviour of the recorded max-SNR datasets (one compiled rollout for all of them)."""


@pytest.fixture(scope="module")
def dataset() -> OfflineDataset:
    # one policy under two names: one compile, two behaviours with different episode keys
    pols = {"max_snr": POLICIES["max_snr"], "max_snr_b": POLICIES["max_snr"]}
    return generate_dataset(Task(4, 8, "proportional_fair", 2), pols, episodes_per_policy=EPISODES, seed=0)


def test_episode_counts_per_behaviour() -> None:
    pols = {"max_snr": POLICIES["max_snr"], "random": POLICIES["random"]}
    ds = generate_dataset(SMALL, pols, {"max_snr": EPISODES, "random": 1}, seed=0)
    assert list(ds.behaviour) == ["max_snr"] * EPISODES + ["random"]
    with pytest.raises(ValueError, match="episodes_per_policy"):
        generate_dataset(SMALL, pols, {"max_snr": 1}, seed=0)  # no count for random
    with pytest.raises(ValueError, match="episodes_per_policy"):
        generate_dataset(SMALL, pols, 0, seed=0)


def test_dataset_shapes_and_dtypes(dataset: OfflineDataset) -> None:
    n, t = 2 * EPISODES, 100
    assert dataset.obs.shape == (n, t, MAX_USERS, F) and dataset.obs.dtype == np.float32
    assert dataset.actions.shape == (n, t, MAX_USERS) and dataset.actions.dtype == np.int32
    assert dataset.actions.min() >= 0 and dataset.actions.max() <= MAX_CELLS
    assert dataset.actions[:, :, 8:].max() == 0  # padded users only keep
    assert dataset.rewards.shape == (n, t) and dataset.rewards.dtype == np.float32
    assert dataset.qoe.shape == (n, t) and dataset.qoe.dtype == np.float32
    assert ((dataset.qoe >= 0) & (dataset.qoe <= 1)).all()
    assert (
        list(dataset.behaviour) == ["max_snr"] * EPISODES + ["max_snr_b"] * EPISODES
        and dataset.behaviour.dtype.kind == "U"
    )
    assert dataset.user_mask.sum() == 8 and dataset.cell_mask.sum() == 4
    assert dataset.task == Task(4, 8, "proportional_fair", 2)
    # first observation: no connections, utility -1 for real users
    assert (dataset.obs[:, 0, :, :MAX_CELLS] == 0).all()
    np.testing.assert_array_equal(dataset.obs[:, 0, :8, -1], -1.0)
    assert not np.array_equal(dataset.rewards[:EPISODES], dataset.rewards[EPISODES:])  # per-name episode keys
    np.testing.assert_array_equal(dataset.select("max_snr_b").rewards, dataset.rewards[EPISODES:])
    assert np.all(np.abs(dataset.returns()) <= 100.0)


def test_dataset_round_trip_exact(dataset: OfflineDataset, tmp_path: Path) -> None:
    path = tmp_path / "task.npz"
    dataset.save(path)
    loaded = OfflineDataset.load(path)
    for name in ("obs", "actions", "rewards", "qoe", "behaviour", "user_mask", "cell_mask", "task_features"):
        a, b = getattr(dataset, name), getattr(loaded, name)
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    assert loaded.task == dataset.task
    with np.load(path, allow_pickle=False) as data:  # readable without pickle
        assert data["obs"].dtype == np.float32


def _tamper(src: Path, dst: Path, **changes: np.ndarray | None) -> Path:
    with np.load(src, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    for name, value in changes.items():
        if value is None:
            del arrays[name]
        else:
            arrays[name] = value
    np.savez_compressed(dst, **arrays)
    return dst


def test_dataset_load_rejects_tampered(dataset: OfflineDataset, tmp_path: Path) -> None:
    good = tmp_path / "good.npz"
    dataset.save(good)
    cases = {
        "rewards": {"rewards": None},
        "actions": {"actions": dataset.actions[:, :, :10]},
        "qoe": {"qoe": dataset.qoe.astype(np.float64)},
        "obs": {"obs": dataset.obs[:, :, :, :5]},
        "behaviour": {"behaviour": dataset.behaviour[:2]},
        "n_cells": {"n_cells": np.asarray(99)},
        "user_mask": {"user_mask": np.ones(MAX_USERS, bool)},
    }
    pickled = {"behaviour": np.asarray(list(dataset.behaviour), dtype=object)}  # needs pickle to read
    for i, (name, change) in enumerate([*cases.items(), ("behaviour", pickled)]):
        bad = _tamper(good, tmp_path / f"bad_{i}.npz", **change)
        with pytest.raises(ValueError, match=f"^{name}:"):
            OfflineDataset.load(bad)


def test_returns_to_go_matches_hand_loop() -> None:
    rewards = np.random.default_rng(0).normal(size=(3, 7)).astype(np.float32)
    for gamma in (1.0, 0.9):
        expected = np.zeros_like(rewards, dtype=np.float64)
        for i in range(3):
            for t in range(7):
                expected[i, t] = sum(gamma ** (k - t) * rewards[i, k] for k in range(t, 7))
        got = returns_to_go(rewards, gamma)
        assert got.dtype == np.float32 and got.shape == rewards.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)


# ----------------------------------------------------------------------------- PPO experts


def test_tiny_expert_save_load_and_dataset(tmp_path: Path) -> None:
    result = train_expert(SMALL, 800, seed=0, config=TINY)
    path = tmp_path / "expert.msgpack"
    save_expert(path, result, SMALL)
    policy, params, task = load_expert(path)
    assert task == SMALL
    obs, _ = _reset(jax.random.PRNGKey(1), SMALL.params())
    key = jax.random.PRNGKey(2)
    np.testing.assert_array_equal(result.policy(result.params, obs, key), policy(params, obs, key))
    np.testing.assert_array_equal(task_policy(result)(obs, key, SMALL.params()), policy(params, obs, key))
    # The expert learned without the link flags, and its file says so: it acts on hidden links.
    hidden_obs, _ = _expert_reset(jax.random.PRNGKey(1), SMALL.params())
    np.testing.assert_array_equal(hidden_obs, hide_links(obs))
    np.testing.assert_array_equal(
        expert_policy(path)(obs, key, SMALL.params()), policy(params, hidden_obs, key)
    )
    names = set(default_behaviours((policy, params)))
    assert names == {"expert", "expert_eps0.3", "max_snr", "top2", "random", "max_snr_eps0.3"}
    ds = generate_dataset(SMALL, {"expert": (policy, params)}, episodes_per_policy=2, seed=0)
    assert ds.actions[:, :, 5:].max() == 0  # padded users' (no-op) actions are written as keep
    assert ds.actions[:, :, :5].max() <= 3  # toggles of padded cells too


def test_tiny_multitask_training(tmp_path: Path) -> None:
    tasks = TRAINING_TASKS[:3]
    env = MultiTaskCompEnv()
    mparams = env.make_params(tasks)
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0), mparams)
    assert obs.shape == (ENV.obs_size + FEATURE_DIM,)
    np.testing.assert_allclose(obs[-FEATURE_DIM:], tasks[int(state.task)].features())
    result = train_multitask(tasks, 800, seed=0, config=TINY)
    assert np.isfinite(result.metrics["policy_loss"]).all()
    path = tmp_path / "mt.msgpack"
    save_expert(path, result, tasks)
    policy, params, loaded = load_expert(path)
    assert loaded == tuple(tasks)
    # acts on an unseen task: the task features are appended automatically
    unseen = UNSEEN_TASKS[0]
    obs, _ = _reset(jax.random.PRNGKey(1), unseen.params())
    key = jax.random.PRNGKey(2)
    action = task_policy((policy, params))(obs, key, unseen.params())
    full = np.concatenate([np.asarray(obs), unseen.features()])
    np.testing.assert_array_equal(action, result.policy(result.params, full, key))
    assert action.shape == (MAX_USERS,)
