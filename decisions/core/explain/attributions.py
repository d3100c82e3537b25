"""Gradient-based attributions: integrated gradients (local and global) and gradient x input.

Integrated gradients attribute ``f(x) - f(x')`` to the features along the straight path from a
baseline ``x'``, ``IG_i(x) = (x_i - x'_i) * integral_0^1 df/dx_i(x' + a (x - x')) da``, by a
quadrature over ``steps`` intervals; the completeness gap it leaves is reported. A group's
attribution is the sum over its members.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from decisions.core.explain._inputs import (
    ActionFn,
    BaselineKind,
    Groups,
    as_observation,
    as_observations,
    check_feature_names,
    check_output,
    jit_bound,
    resolve_baseline,
    resolve_units,
    scalar_fn,
    sort_importance,
    unit_matrix,
)
from decisions.errors import InputError

Quadrature = Literal["trapezoid", "midpoint", "left", "right"]
_BATCH = 128


def _quadrature(steps: int, method: Quadrature) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``alpha`` in [0, 1] and weights summing to 1 for ``integral_0^1 g(a) da``."""
    if steps < 1:
        raise InputError("steps", f"must be >= 1, got {steps}")
    k = np.arange(steps, dtype=np.float64)
    if method == "trapezoid":
        alphas = np.linspace(0.0, 1.0, steps + 1)
        weights = np.full(steps + 1, 1.0 / steps)
        weights[[0, -1]] *= 0.5
        return alphas, weights
    offsets = {"midpoint": 0.5, "left": 0.0, "right": 1.0}
    if method not in offsets:
        raise InputError("method", f"unknown quadrature {method!r}; use trapezoid, midpoint, left or right")
    return (k + offsets[method]) / steps, np.full(steps, 1.0 / steps)


def _ig_batch(
    action_fn: ActionFn,
    output: int | None,
    xs: jax.Array,
    baseline: jax.Array,
    alphas: jax.Array,
    weights: jax.Array,
) -> jax.Array:
    grad_f = jax.vmap(jax.grad(scalar_fn(action_fn, output)))

    def one(x: jax.Array) -> jax.Array:
        path = baseline + alphas[:, None] * (x - baseline)
        return (x - baseline) * (weights @ grad_f(path))

    return jax.lax.map(one, xs, batch_size=_BATCH)


def grad_batch(action_fn: ActionFn, output: int | None, xs: jax.Array) -> jax.Array:
    """The gradient of ``action_fn``'s output (or its only one) at each row of ``xs``, in batches."""
    return jax.lax.map(jax.grad(scalar_fn(action_fn, output)), xs, batch_size=_BATCH)


def _value_batch(action_fn: ActionFn, output: int | None, xs: jax.Array) -> jax.Array:
    return jax.vmap(scalar_fn(action_fn, output))(xs)


def _as_batch(x: ArrayLike) -> tuple[jax.Array, bool]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        return as_observations(arr[None, :], "x"), True
    return as_observations(arr, "x"), False


def integrated_gradients(
    action_fn: ActionFn,
    x: ArrayLike,
    baseline: ArrayLike,
    *,
    steps: int = 64,
    method: Quadrature = "trapezoid",
    output: int | None = None,
) -> jax.Array:
    """Integrated-gradient attributions, shaped like ``x`` (``(F,)`` or ``(N, F)``), from a ``(F,)`` baseline."""
    xs, single = _as_batch(x)
    base = as_observation(baseline, xs.shape[1], "baseline")
    out = check_output(action_fn, xs[0], output, differentiable=True)
    alphas, weights = _quadrature(steps, method)
    dt = xs.dtype
    attr = jit_bound(_ig_batch, action_fn, out)(xs, base, jnp.asarray(alphas, dt), jnp.asarray(weights, dt))
    return attr[0] if single else attr


def gradient_x_input(action_fn: ActionFn, x: ArrayLike, *, output: int | None = None) -> jax.Array:
    """Gradient times input, ``x * df/dx``, of one observation ``(F,)`` or a batch ``(N, F)``."""
    xs, single = _as_batch(x)
    out = check_output(action_fn, xs[0], output, differentiable=True)
    gx = xs * jit_bound(grad_batch, action_fn, out)(xs)
    return gx[0] if single else gx


def _stats(values: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    n = values.shape[axis]
    return values.mean(axis=axis), (
        values.std(axis=axis, ddof=1) if n > 1 else np.zeros_like(values.mean(axis))
    )


def ig_importance(
    action_fn: ActionFn,
    observations: ArrayLike,
    feature_names: Sequence[str],
    *,
    baseline: ArrayLike | BaselineKind | None = None,
    groups: Groups | None = None,
    steps: int = 32,
    method: Quadrature = "trapezoid",
    output: int | None = None,
) -> pd.DataFrame:
    """Global importance: mean absolute integrated-gradient attribution over a batch.

    A group's attribution per observation is the (signed) sum over its members, then
    taken in absolute value, so opposing members can cancel as they do in the policy.

    ``baseline``: a ``(F,)`` array, ``"mean"``/``"median"``/``"zeros"``, or None (feature means).

    Returns:
        Columns ``feature, importance, std, mean_attribution`` sorted by importance
        (``std`` is the spread of ``|attribution|`` over the batch).
    """
    obs = as_observations(observations)
    names = check_feature_names(feature_names, obs.shape[1])
    units = resolve_units(names, groups)
    base = resolve_baseline(baseline, obs, obs.shape[1])
    attr = np.asarray(integrated_gradients(action_fn, obs, base, steps=steps, method=method, output=output))
    per_unit = attr.astype(np.float64) @ unit_matrix(units, obs.shape[1]).T
    mean_abs, std_abs = _stats(np.abs(per_unit))
    df = pd.DataFrame(
        {
            "feature": [u[0] for u in units],
            "importance": mean_abs,
            "std": std_abs,
            "mean_attribution": per_unit.mean(axis=0),
        }
    )
    return sort_importance(df)


@dataclass(frozen=True)
class LocalAttribution:
    """Why the policy chose ``action`` at one observation, relative to a baseline."""

    table: pd.DataFrame
    """Columns ``feature, value, baseline, gradient, attribution, grad_x_input``, sorted by ``|attribution|``.
    Group rows have NaN ``value``, ``baseline`` and ``gradient`` and summed attributions."""
    # ``f(x)``: the policy's action (component ``output``) at the observation.
    action: float
    # ``f(baseline)``.
    baseline_action: float
    # ``sum(attribution) - (f(x) - f(baseline))``: quadrature error, ~0 for enough steps.
    completeness_gap: float

    @property
    def relative_gap(self) -> float:
        """``|completeness_gap| / max(|f(x) - f(baseline)|, 1e-12)``."""
        return abs(self.completeness_gap) / max(abs(self.action - self.baseline_action), 1e-12)


def explain_decision(
    action_fn: ActionFn,
    x: ArrayLike,
    feature_names: Sequence[str],
    *,
    baseline: ArrayLike | BaselineKind | None = None,
    observations: ArrayLike | None = None,
    groups: Groups | None = None,
    steps: int = 64,
    method: Quadrature = "trapezoid",
    output: int | None = None,
) -> LocalAttribution:
    """Attribute one decision to the features (integrated gradients, plus gradient x input).

    ``baseline`` as for ``ig_importance``, derived from ``observations`` when not an array.
    """
    x_np = np.asarray(x, dtype=np.float64)
    if x_np.ndim != 1:
        raise InputError("x", f"expected one observation (F,), got shape {x_np.shape}")
    names = check_feature_names(feature_names, x_np.shape[0])
    xv = as_observation(x_np, len(names), "x")
    obs = None if observations is None else as_observations(observations)
    if obs is not None and obs.shape[1] != xv.shape[0]:
        raise InputError("observations", f"have {obs.shape[1]} features but x has {xv.shape[0]}")
    base = resolve_baseline(baseline, obs, xv.shape[0])
    attr = np.asarray(
        integrated_gradients(action_fn, xv, base, steps=steps, method=method, output=output), float
    )
    out = check_output(action_fn, xv, output, differentiable=True)
    grad = np.asarray(jit_bound(grad_batch, action_fn, out)(xv[None])[0], float)
    fx, fb = (float(v) for v in jit_bound(_value_batch, action_fn, out)(jnp.stack([xv, base])))
    table = _local_table(names, groups, np.asarray(xv, float), np.asarray(base, float), grad, attr)
    return LocalAttribution(table, fx, fb, float(attr.sum() - (fx - fb)))


def _local_table(
    names: list[str],
    groups: Groups | None,
    x: np.ndarray,
    base: np.ndarray,
    grad: np.ndarray,
    attr: np.ndarray,
) -> pd.DataFrame:
    units = resolve_units(names, groups)
    rows = []
    for name, cols in units:
        c = cols[0] if len(cols) == 1 and names[cols[0]] == name else None
        rows.append(
            {
                "feature": name,
                "value": np.nan if c is None else float(x[c]),
                "baseline": np.nan if c is None else float(base[c]),
                "gradient": np.nan if c is None else float(grad[c]),
                "attribution": float(attr[cols].sum()),
                "grad_x_input": float((grad * x)[cols].sum()),
            }
        )
    df = pd.DataFrame(rows)
    order = np.argsort(-np.abs(df["attribution"].to_numpy()), kind="stable")
    return df.iloc[order].reset_index(drop=True)
