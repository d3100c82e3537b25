"""Tests for decisions.core.timing: best-of-n on a fake clock, interleaving, bump-and-revalue."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core import timing
from decisions.core.timing import LOOP, BumpTiming, best_of, bump_and_revalue, interleaved


class FakeClock:
    """A clock that only moves when a timed function says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def takes(self, durations: list[float]):
        """A function whose successive calls last ``durations`` (and records that it ran)."""
        calls: list[float] = []

        def fn() -> float:
            seconds = durations[len(calls)]
            calls.append(seconds)
            self.now += seconds
            return seconds

        fn.calls = calls  # type: ignore[attr-defined]
        return fn


def test_best_of_is_the_fastest_timed_call_and_skips_warmup() -> None:
    clock = FakeClock()
    fn = clock.takes([0.001, 5.0, 3.0, 4.0, 2.5, 6.0])  # the first (fastest) call is the warm-up
    assert best_of(fn, 5, clock=clock) == pytest.approx(2.5)
    assert len(fn.calls) == 6


def test_best_of_warmup_count() -> None:
    clock = FakeClock()
    fn = clock.takes([0.1, 0.2, 9.0, 8.0])
    assert best_of(fn, 2, warmup=2, clock=clock) == pytest.approx(8.0)
    clock = FakeClock()
    fn = clock.takes([0.1, 0.2])
    assert best_of(fn, 2, warmup=0, clock=clock) == pytest.approx(0.1)


def test_best_of_rejects_bad_counts() -> None:
    with pytest.raises(ValueError, match="repeats"):
        best_of(lambda: None, 0)
    with pytest.raises(ValueError, match="warmup"):
        best_of(lambda: None, 1, warmup=-1)


def test_best_of_blocks_on_jax_results() -> None:
    f = jax.jit(lambda x: (x @ x).sum())
    seconds = best_of(lambda: f(jnp.ones((64, 64))), 3)
    assert 0.0 < seconds < 10.0


def test_interleaved_times_each_function_in_rotating_rounds() -> None:
    clock = FakeClock()
    order: list[str] = []

    def make(name: str, durations: list[float]):
        fn = clock.takes(durations)

        def call() -> float:
            order.append(name)
            return fn()

        return call

    fns = {"a": make("a", [0.0, 3.0, 1.0, 2.0]), "b": make("b", [0.0, 0.5, 0.7, 0.4])}
    best = interleaved(fns, 3, clock=clock)
    assert best == {"a": pytest.approx(1.0), "b": pytest.approx(0.4)}
    assert order == ["a", "b", "a", "b", "b", "a", "a", "b"]  # warm-ups, then rotating rounds


def _quadratic(matrix: np.ndarray, vector: np.ndarray):
    a, b = jnp.asarray(matrix), jnp.asarray(vector)

    def value(x: dict) -> jax.Array:
        z = jnp.concatenate([x["u"], x["v"].ravel()])
        return 0.5 * z @ a @ z + b @ z

    return value


def test_bump_and_revalue_times_and_finite_differences_match_the_gradient() -> None:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(7, 7)).astype(np.float32)
    value = _quadratic(m @ m.T / 7 + np.eye(7, dtype=np.float32), rng.normal(size=7).astype(np.float32))
    inputs = {
        "u": jnp.asarray(rng.normal(size=3), jnp.float32),
        "v": jnp.asarray(rng.normal(size=(2, 2)), jnp.float32),
    }
    result = bump_and_revalue(value, inputs, bump=1e-2, chunks=(2, 3, 100), repeats=2, differences=True)
    assert isinstance(result, BumpTiming)
    assert result.revaluations == 8
    assert set(result.seconds_per_revaluation) == {LOOP, "jitted_vmap_2", "jitted_vmap_3", "jitted_vmap_8"}
    times = [result.gradient_seconds, result.value_seconds, result.loop_seconds, result.vmap_seconds]
    assert all(np.isfinite(t) and t > 0 for t in times)
    assert result.bump_seconds == pytest.approx(min(result.loop_seconds, result.vmap_seconds))
    assert result.speedup == pytest.approx(result.bump_seconds / result.gradient_seconds)
    assert result.grad_cost_ratio == pytest.approx(result.gradient_seconds / result.value_seconds)
    grads = jax.grad(value)(inputs)
    assert jax.tree_util.tree_structure(result.differences) == jax.tree_util.tree_structure(inputs)
    for fd, exact in zip(
        jax.tree_util.tree_leaves(result.differences), jax.tree_util.tree_leaves(grads), strict=True
    ):
        assert fd.shape == exact.shape
        # forward differences: error ~ bump x curvature / 2
        np.testing.assert_allclose(np.asarray(fd), np.asarray(exact), atol=0.05, rtol=0.01)


def test_bump_and_revalue_times_a_given_gradient_pass() -> None:
    calls: list[int] = []
    grad = jax.jit(jax.grad(lambda x: jnp.sum(x**2)))
    x = jnp.arange(4.0)

    def gradient() -> jax.Array:
        calls.append(1)
        return grad(x)

    result = bump_and_revalue(lambda y: jnp.sum(y**2), x, bump=1e-3, gradient=gradient, chunks=(), repeats=3)
    assert len(calls) == 4  # one warm-up and three timed rounds
    assert result.method == LOOP and result.vmap_seconds == float("inf")
    assert result.differences is None


def test_bump_and_revalue_rejects_disagreeing_vmaps_and_empty_inputs(monkeypatch) -> None:
    with pytest.raises(ValueError, match="at least one input"):
        bump_and_revalue(lambda x: 0.0, {}, bump=1.0)
    with pytest.raises(ValueError, match="chunk sizes"):
        bump_and_revalue(jnp.sum, jnp.ones(2), bump=1.0, chunks=(0,))
    real_vmap = jax.vmap
    monkeypatch.setattr(timing.jax, "vmap", lambda f: lambda x: real_vmap(f)(x) + 1.0)
    with pytest.raises(RuntimeError, match="disagree"):
        bump_and_revalue(jnp.sum, jnp.ones(2), bump=1.0, chunks=(2,), repeats=1)
