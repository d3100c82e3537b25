"""The shared agent driver: chunked loop, checkpoint/resume, running statistics, episode evaluation."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents.common import RunningStats, chunk_size, evaluate_episodes, run_chunked
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
