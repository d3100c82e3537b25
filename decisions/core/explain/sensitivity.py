"""Sensitivity of the action to chosen features: ``feature_gradients`` (``d action / d feature`` at
every observation) and ``response_curve`` (the action with one feature swept over a grid).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from decisions.core.explain._inputs import (
    ActionFn,
    as_observations,
    check_feature_names,
    check_output,
    feature_index,
    jit_bound,
    scalar_fn,
    sort_importance,
)
from decisions.core.explain.attributions import grad_batch
from decisions.errors import InputError


def _batch_and_names(x: ArrayLike, feature_names: Sequence[str], name: str) -> tuple[jax.Array, list[str]]:
    arr = np.asarray(x, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[None, :]
    obs = as_observations(arr, name)
    return obs, check_feature_names(feature_names, obs.shape[1])


def feature_gradients(
    action_fn: ActionFn,
    observations: ArrayLike,
    feature_names: Sequence[str],
    *,
    features: Sequence[str] | None = None,
    output: int | None = None,
) -> pd.DataFrame:
    """Gradient of the action with respect to the named features at each observation.

    Args:
        features: Features to report (default: all), e.g. the forecast features.

    Returns:
        Long frame with columns ``obs_index, feature, value, gradient`` (``N * len(features)`` rows).
    """
    obs, names = _batch_and_names(observations, feature_names, "observations")
    chosen = list(names if features is None else features)
    if not chosen:
        raise InputError("features", "empty list")
    cols = [feature_index(names, f, "features") for f in chosen]
    out = check_output(action_fn, obs[0], output, differentiable=True)
    grads = np.asarray(jit_bound(grad_batch, action_fn, out)(obs), dtype=np.float64)[:, cols]
    values = np.asarray(obs, dtype=np.float64)[:, cols]
    n = obs.shape[0]
    return pd.DataFrame(
        {
            "obs_index": np.repeat(np.arange(n), len(cols)),
            "feature": np.tile(np.array(chosen, dtype=object), n),
            "value": values.ravel(),
            "gradient": grads.ravel(),
        }
    )


def sensitivity_summary(gradients: pd.DataFrame) -> pd.DataFrame:
    """Summarise :func:`feature_gradients` per feature.

    Returns:
        Columns ``feature, importance, std, mean_gradient``: mean ``|gradient|``, the spread of the
        gradient (ddof=1, 0 for one observation) and its signed mean, sorted by importance. The
        frame has the shape :func:`~decisions.core.explain.plots.plot_importance` expects.
    """
    missing = {"feature", "gradient"} - set(gradients.columns)
    if missing:
        raise InputError("gradients", f"missing columns {sorted(missing)}")
    g = gradients.groupby("feature", sort=False)["gradient"]
    df = pd.DataFrame(
        {
            "importance": g.apply(lambda s: float(np.abs(s).mean())),
            "std": g.std(ddof=1).fillna(0.0),
            "mean_gradient": g.mean(),
        }
    ).reset_index()
    return sort_importance(df)


def _curves(
    action_fn: ActionFn, output: int | None, xs: jax.Array, col: jax.Array, grid: jax.Array
) -> jax.Array:
    f = scalar_fn(action_fn, output)
    return jax.vmap(lambda x: jax.vmap(lambda v: f(x.at[col].set(v)))(grid))(xs)


def response_curve(
    action_fn: ActionFn,
    x: ArrayLike,
    feature_names: Sequence[str],
    feature: str,
    *,
    values: ArrayLike | None = None,
    observations: ArrayLike | None = None,
    n_points: int = 41,
    output: int | None = None,
) -> pd.DataFrame:
    """The action as one feature is swept over a range, all else held fixed.

    Args:
        x: The observation ``(F,)`` to perturb, or several ``(N, F)`` (one curve each).
        feature: The feature to sweep.
        values: The grid of values; default ``n_points`` evenly spaced over the feature's range in
            ``observations`` (or in ``x`` when it holds several observations).
        n_points: Grid size when ``values`` is not given.

    Returns:
        Long frame with columns ``obs_index, feature, value, action``.
    """
    xs, names = _batch_and_names(x, feature_names, "x")
    col = feature_index(names, feature)
    grid = _grid(values, observations, xs, col, feature, n_points)
    out = check_output(action_fn, xs[0], output, differentiable=False)
    acts = np.asarray(
        jit_bound(_curves, action_fn, out)(xs, jnp.asarray(col), jnp.asarray(grid, xs.dtype)),
        dtype=np.float64,
    )
    n, m = acts.shape
    return pd.DataFrame(
        {
            "obs_index": np.repeat(np.arange(n), m),
            "feature": feature,
            "value": np.tile(grid, n),
            "action": acts.ravel(),
        }
    )


def _grid(
    values: ArrayLike | None,
    observations: ArrayLike | None,
    xs: jax.Array,
    col: int,
    feature: str,
    n_points: int,
) -> np.ndarray:
    if values is not None:
        grid = np.asarray(values, dtype=np.float64).ravel()
        if grid.size == 0 or not np.all(np.isfinite(grid)):
            raise InputError("values", "must be a non-empty array of finite numbers")
        return grid
    if n_points < 2:
        raise InputError("n_points", f"must be >= 2, got {n_points}")
    src = xs if observations is None else as_observations(observations)
    if src.shape[1] != xs.shape[1]:
        raise InputError("observations", f"have {src.shape[1]} features but x has {xs.shape[1]}")
    lo, hi = float(jnp.min(src[:, col])), float(jnp.max(src[:, col]))
    if lo == hi:
        raise InputError("values", f"feature {feature!r} has no range in the observations; pass values")
    return np.linspace(lo, hi, n_points)
