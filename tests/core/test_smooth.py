"""Tests for decisions.core.smooth: limits as tau -> 0, documented bounds, gradients."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from decisions.core import smooth

TAUS = (1e-1, 1e-2, 1e-3)
LOG2 = math.log(2.0)
GRID = jnp.linspace(-2.0, 2.0, 4001)  # contains 0 and +-1 exactly (step 1e-3)
FLOAT_SLACK = 2e-6  # float32 rounding on values of order 1


def _max_error(smooth_fn, hard_fn, x=GRID) -> list[float]:
    return [float(jnp.max(jnp.abs(smooth_fn(x, tau) - hard_fn(x)))) for tau in TAUS]


def _assert_shrinks_within(errors: list[float], bounds: list[float]) -> None:
    assert all(e <= b + FLOAT_SLACK for e, b in zip(errors, bounds, strict=True)), (errors, bounds)
    assert errors[0] > errors[1] > errors[2], errors


def test_smooth_relu_error_is_tau_log2_at_zero() -> None:
    errors = _max_error(smooth.smooth_relu, lambda x: jnp.maximum(x, 0.0))
    _assert_shrinks_within(errors, [tau * LOG2 for tau in TAUS])
    # The bound is attained at x = 0 (on the grid), so it is tight.
    np.testing.assert_allclose(errors, [tau * LOG2 for tau in TAUS], rtol=1e-3)
    for tau in TAUS:
        assert bool(jnp.all(smooth.smooth_relu(GRID, tau) >= jnp.maximum(GRID, 0.0) - FLOAT_SLACK))


@pytest.mark.parametrize("b", [-0.7, 0.0, 0.3])
def test_smooth_max_is_upper_bound_within_tau_log2(b: float) -> None:
    errors = _max_error(lambda x, t: smooth.smooth_max(x, b, t), lambda x: jnp.maximum(x, b))
    _assert_shrinks_within(errors, [tau * LOG2 for tau in TAUS])
    for tau in TAUS:
        assert bool(jnp.all(smooth.smooth_max(GRID, b, tau) >= jnp.maximum(GRID, b) - FLOAT_SLACK))


@pytest.mark.parametrize("b", [-0.7, 0.0, 0.3])
def test_smooth_min_is_lower_bound_within_tau_log2(b: float) -> None:
    errors = _max_error(lambda x, t: smooth.smooth_min(x, b, t), lambda x: jnp.minimum(x, b))
    _assert_shrinks_within(errors, [tau * LOG2 for tau in TAUS])
    for tau in TAUS:
        assert bool(jnp.all(smooth.smooth_min(GRID, b, tau) <= jnp.minimum(GRID, b) + FLOAT_SLACK))


def test_smooth_clip_error_within_tau_log2() -> None:
    lo, hi = -0.5, 1.0
    errors = _max_error(lambda x, t: smooth.smooth_clip(x, lo, hi, t), lambda x: jnp.clip(x, lo, hi))
    _assert_shrinks_within(errors, [tau * LOG2 for tau in TAUS])


def test_smooth_box_is_elementwise_clip() -> None:
    x = jnp.array([-3.0, 0.2, 5.0])
    lower, upper = jnp.array([-1.0, 0.0, 0.0]), jnp.array([1.0, 1.0, 2.0])
    out = smooth.smooth_box(x, lower, upper, 1e-3)
    np.testing.assert_allclose(out, [-1.0, 0.2, 2.0], atol=1e-3 * LOG2 + FLOAT_SLACK)
    np.testing.assert_array_equal(out, smooth.smooth_clip(x, lower, upper, 1e-3))


@pytest.mark.parametrize("upper", [True, False])
def test_softplus_barrier_tends_to_hinge(upper: bool) -> None:
    limit = 0.4
    hinge = (lambda x: jnp.maximum(x - limit, 0.0)) if upper else (lambda x: jnp.maximum(limit - x, 0.0))
    errors = _max_error(lambda x, t: smooth.softplus_barrier(x, limit, t, upper=upper), hinge)
    _assert_shrinks_within(errors, [tau * LOG2 for tau in TAUS])
    assert bool(jnp.all(smooth.softplus_barrier(GRID, limit, 1e-2, upper=upper) >= 0.0))


def test_smooth_step_tends_to_indicator_away_from_zero() -> None:
    delta = 0.05
    away = GRID[jnp.abs(GRID) >= delta]
    errors = _max_error(smooth.smooth_step, lambda x: (x > 0).astype(x.dtype), x=away)
    # The largest error off [-delta, delta] is sigmoid(-delta / tau), at |x| = delta.
    bounds = [float(jax.nn.sigmoid(-delta / tau)) for tau in TAUS]
    assert errors[0] > errors[1] >= errors[2]
    assert all(e <= b + FLOAT_SLACK for e, b in zip(errors, bounds, strict=True))
    assert errors[2] < 1e-6
    assert float(smooth.smooth_step(0.0, 1e-3)) == pytest.approx(0.5)


def test_smooth_abs_error_below_tau_and_exact_at_zero() -> None:
    errors = _max_error(smooth.smooth_abs, jnp.abs)
    _assert_shrinks_within(errors, list(TAUS))
    for tau in TAUS:
        assert float(smooth.smooth_abs(0.0, tau)) == 0.0
        assert bool(jnp.all(smooth.smooth_abs(GRID, tau) <= jnp.abs(GRID) + FLOAT_SLACK))


def test_hard_clip_ignores_tau() -> None:
    x = jnp.array([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(smooth.hard_clip(x, 0.0, 1.0, 0.3), jnp.array([0.0, 0.5, 1.0]))
    np.testing.assert_array_equal(smooth.hard_clip(x, 0.0, 1.0), smooth.hard_clip(x, 0.0, 1.0, 1e-3))


_clip = jax.jit(smooth.smooth_clip)


@pytest.mark.parametrize("tau", [1.0, *TAUS])
def test_smooth_clip_inside_bounds_and_monotone(tau: float) -> None:
    lo, hi = -1.0, 2.0
    x = jnp.linspace(-1e3, 1e3, 20_001)
    y = _clip(x, lo, hi, tau)
    assert float(jnp.min(y)) >= lo
    assert float(jnp.max(y)) <= hi
    # Monotone up to float32 rounding of the bounds (not of |x|, which reaches 1e3 here).
    ulp = float(jnp.finfo(jnp.float32).eps) * max(abs(lo), abs(hi))
    assert float(jnp.min(jnp.diff(y))) >= -2 * ulp
    inner = (x > lo - 5 * tau) & (x < hi + 5 * tau)
    assert bool(jnp.all(jnp.diff(y)[inner[1:]] > 0.0))  # strictly increasing where not saturated


def _grad(fn):
    """Elementwise d fn(x, tau) / dx, jitted once per ``fn`` with ``tau`` traced."""
    return jax.jit(jax.vmap(jax.grad(fn), in_axes=(0, None)))


def test_gradients_finite_everywhere_including_kinks_and_tiny_tau() -> None:
    x = jnp.concatenate([GRID, jnp.array([-1e3, 1e3])])
    fns = {
        "relu": smooth.smooth_relu,
        "max": lambda v, t: smooth.smooth_max(v, 0.3, t),
        "min": lambda v, t: smooth.smooth_min(v, 0.3, t),
        "clip": lambda v, t: smooth.smooth_clip(v, -0.5, 1.0, t),
        "barrier": lambda v, t: smooth.softplus_barrier(v, 0.4, t),
        "step": smooth.smooth_step,
        "abs": smooth.smooth_abs,
    }
    for name, fn in fns.items():
        grad = _grad(fn)
        for tau in (*TAUS, 1e-5):
            g = grad(x, tau)
            assert bool(jnp.all(jnp.isfinite(g))), (name, tau)


@pytest.mark.parametrize(
    ("name", "fn", "points", "hard_grad"),
    [
        ("relu", smooth.smooth_relu, [-0.5, 0.5], [0.0, 1.0]),
        ("max", lambda v, t: smooth.smooth_max(v, 0.3, t), [0.0, 0.6], [0.0, 1.0]),
        ("min", lambda v, t: smooth.smooth_min(v, 0.3, t), [0.0, 0.6], [1.0, 0.0]),
        ("clip", lambda v, t: smooth.smooth_clip(v, -0.5, 1.0, t), [-1.0, 0.25, 1.5], [0.0, 1.0, 0.0]),
        ("barrier", lambda v, t: smooth.softplus_barrier(v, 0.4, t), [0.0, 0.8], [0.0, 1.0]),
        ("abs", smooth.smooth_abs, [-0.5, 0.5], [-1.0, 1.0]),
    ],
)
def test_gradients_match_hard_gradient_away_from_kinks(name, fn, points, hard_grad) -> None:
    x, grad = jnp.asarray(points), _grad(fn)
    for tau in TAUS:
        g = np.asarray(grad(x, tau))
        np.testing.assert_allclose(g, hard_grad, atol=0.05 if tau == 1e-1 else 1e-3, err_msg=name)
        # Where the hard rule passes a gradient, the smooth one does too (nonzero).
        assert all(abs(gi) > 0.5 for gi, hi in zip(g, hard_grad, strict=True) if hi != 0.0), name


def test_gradient_nonzero_at_kink_where_hard_is_ambiguous() -> None:
    # At x = lo the hard clip's gradient is 0 or 1; the surrogate passes about 1/2.
    grad = _grad(lambda v, tau: smooth.smooth_clip(v, 0.0, 1.0, tau))
    for tau in TAUS:
        assert float(grad(jnp.zeros(1), tau)[0]) == pytest.approx(0.5, abs=1e-3)


_smax = jax.jit(smooth.smooth_max)
_smin = jax.jit(smooth.smooth_min)


def _floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    # float32 values without float32 subnormals: XLA on CPU flushes those to zero, numpy does not.
    return st.floats(float(np.float32(lo)), float(np.float32(hi)), width=32, allow_subnormal=False)


@settings(max_examples=150, deadline=None, database=None)
@given(
    x=_floats(-100.0, 100.0),
    lo=_floats(-50.0, 50.0),
    width=_floats(0.0, 50.0),
    tau=_floats(1e-3, 1.0),
)
def test_property_smooth_clip_feasible_and_close(x: float, lo: float, width: float, tau: float) -> None:
    hi = lo + width
    y = float(_clip(jnp.float32(x), jnp.float32(lo), jnp.float32(hi), jnp.float32(tau)))
    lo32, hi32 = float(np.float32(lo)), float(np.float32(hi))
    assert lo32 <= y <= hi32
    slack = 1e-6 * (1.0 + abs(x) + abs(lo) + abs(hi))
    assert abs(y - float(np.clip(x, lo, hi))) <= tau * LOG2 + slack


@settings(max_examples=150, deadline=None, database=None)
@given(a=_floats(-100.0, 100.0), b=_floats(-100.0, 100.0), tau=_floats(1e-3, 1.0))
def test_property_smooth_max_min_bracket_hard(a: float, b: float, tau: float) -> None:
    args = (jnp.float32(a), jnp.float32(b), jnp.float32(tau))
    hi, lo = float(_smax(*args)), float(_smin(*args))
    slack = 1e-6 * (1.0 + abs(a) + abs(b))
    assert max(a, b) - slack <= hi <= max(a, b) + tau * LOG2 + slack
    assert min(a, b) - tau * LOG2 - slack <= lo <= min(a, b) + slack
