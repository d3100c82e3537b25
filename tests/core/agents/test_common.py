"""The shared agent driver: chunked loop, checkpoint/resume, running statistics, episode evaluation."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents.common import (
    RunningStats,
    TrainResult,
    chunk_size,
    evaluate_episodes,
    run_chunked,
    train_in_turn,
)
from tests.core.probe_envs import OneStepBandit


def _counting_chunk(state, n):
    def body(carry, _):
        return carry + 1.0, carry * 2.0

    return jax.lax.scan(body, state, None, length=n)


def test_chunks_concatenate_to_the_full_log_and_report_progress():
    seen = []
    state, log = run_chunked(
        _counting_chunk, jnp.float32(0), iterations=7, log_every=3, kind="t", config={"a": 1},
        key=jax.random.PRNGKey(0), progress=lambda task, done, total: seen.append((done, total)),
    )
    assert float(state) == 7.0
    np.testing.assert_array_equal(np.asarray(log), 2.0 * np.arange(7))
    assert seen[-1] == (7, 7) and all(total == 7 for _, total in seen)


def test_resume_equals_an_uninterrupted_run_and_refuses_other_configs(tmp_path):
    path = tmp_path / "run.msgpack"
    common = dict(kind="t", config={"a": 1}, key=jax.random.PRNGKey(0), checkpoint=path)
    run_chunked(_counting_chunk, jnp.float32(0), iterations=4, log_every=2, **common)
    state, log = run_chunked(_counting_chunk, jnp.float32(0), iterations=8, log_every=2, **common)
    assert float(state) == 8.0
    np.testing.assert_array_equal(np.asarray(log), 2.0 * np.arange(8))
    with pytest.raises(ValueError, match="different config"):
        run_chunked(_counting_chunk, jnp.float32(0), iterations=8, log_every=2,
                    **{**common, "config": {"a": 2}})
    with pytest.raises(ValueError, match="different key"):
        run_chunked(_counting_chunk, jnp.float32(0), iterations=8, log_every=2,
                    **{**common, "key": jax.random.PRNGKey(1)})
    with pytest.raises(ValueError, match="not a other checkpoint"):
        run_chunked(_counting_chunk, jnp.float32(0), iterations=8, log_every=2, **{**common, "kind": "other"})


@dataclasses.dataclass(frozen=True)
class _Before:
    a: int = 1


@dataclasses.dataclass(frozen=True)
class _After:
    a: int = 1
    added: bool = False  # a field added since the checkpoint was written


def test_a_field_added_since_the_checkpoint_resumes_at_its_default_only(tmp_path):
    path = tmp_path / "run.msgpack"
    common = dict(kind="t", key=jax.random.PRNGKey(0), checkpoint=path)
    run_chunked(_counting_chunk, jnp.float32(0), iterations=4, log_every=2, config=_Before(), **common)
    with pytest.raises(ValueError, match=r"different config \(added\)"):
        run_chunked(_counting_chunk, jnp.float32(0), iterations=8, log_every=2, config=_After(added=True), **common)
    state, log = run_chunked(_counting_chunk, jnp.float32(0), iterations=8, log_every=2, config=_After(), **common)
    assert float(state) == 8.0
    np.testing.assert_array_equal(np.asarray(log), 2.0 * np.arange(8))


@pytest.mark.parametrize(("iterations", "log_every", "expected"), [(100, 10, 10), (36, 10, 9), (5, 10, 5), (97, 10, 10)])
def test_chunk_size_prefers_a_divisor_near_log_every(iterations, log_every, expected):
    assert chunk_size(iterations, log_every) == expected


def test_running_stats_match_numpy_over_several_batches():
    data = np.random.default_rng(0).normal(2.0, 3.0, size=(1000, 3)).astype(np.float32)
    stats = RunningStats.create((3,))
    for batch in np.split(data, 4):
        stats = stats.update(jnp.asarray(batch))
    np.testing.assert_allclose(np.asarray(stats.mean), data.mean(0), rtol=1e-4)
    np.testing.assert_allclose(np.asarray(stats.var), data.var(0), rtol=1e-3)


def test_evaluate_episodes_gives_the_known_bandit_returns():
    env = OneStepBandit(3)
    params = env.default_params
    returns = evaluate_episodes(
        env, params, lambda p, obs, key: jnp.int32(1), {}, key=jax.random.PRNGKey(0), num_episodes=4, max_steps=3
    )
    np.testing.assert_allclose(returns, 0.5)


def test_seeds_trained_in_turn_are_stacked_in_key_order_with_their_steps_counted_together():
    calls, reports = [], []

    def train_one(seed, key, report):
        calls.append((seed, np.asarray(key).tolist(), report is None))
        for done in (5, 10) if report else ():
            report("training", done, 10)
        return TrainResult(policy=None, params={"w": jnp.full(2, float(seed))}, metrics={"loss": np.arange(3.0) + seed},
                           train_seconds=1.5, env_steps=10)

    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    result = train_in_turn(train_one, keys, lambda task, done, total: reports.append((task, done, total)))
    assert calls == [(i, np.asarray(keys[i]).tolist(), False) for i in range(3)]
    assert reports == [("training", d, 30) for d in (5, 10, 15, 20, 25, 30)]
    np.testing.assert_array_equal(result.params["w"], [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]])
    np.testing.assert_array_equal(result.metrics["loss"], [[0, 1, 2], [1, 2, 3], [2, 3, 4]])
    assert result.train_seconds == 4.5 and result.env_steps == 10
    assert train_in_turn(train_one, keys[:1]).params["w"].shape == (1, 2)
    assert calls[-1][2] and len(reports) == 6  # no progress asked: none reported
