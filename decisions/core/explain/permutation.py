"""Permutation importance: the mean absolute change of the actions (for discrete policies the
fraction of decisions that change) when a feature, or a group with one shared permutation, is
shuffled across the batch; optionally the drop of a user score. One jitted call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from decisions.core.explain._inputs import (
    ActionFn,
    Groups,
    action_shape,
    as_observations,
    check_feature_names,
    jit_bound,
    policy_actions,
    resolve_units,
    sort_importance,
    unit_matrix,
)
from decisions.errors import InputError

ScoreFn = Callable[[np.ndarray, np.ndarray], float]
"""``score_fn(observations (N, F), actions (N, ...)) -> float``: higher is better.

Called with the *original* observations and the actions the policy takes on the
original or the permuted batch. For an episode return, pass the batch in time order
and replay the actions in a simulator inside ``score_fn``."""


def _permuted_actions(action_fn: ActionFn, obs: jax.Array, masks: jax.Array, perms: jax.Array) -> jax.Array:
    """Actions ``(U, R, N, ...)``: unit ``u``'s columns permuted by permutation ``r``."""
    act = jax.vmap(action_fn)

    def for_unit(mask: jax.Array) -> jax.Array:
        return jax.vmap(lambda perm: act(jnp.where(mask, obs[perm], obs)))(perms)

    return jax.lax.map(for_unit, masks)


def _labels(actions: np.ndarray, n_batch_dims: int) -> np.ndarray:
    """Discrete decisions: argmax of a vector action, else the rounded scalar."""
    if actions.ndim > n_batch_dims:
        return np.argmax(actions, axis=-1)
    return np.rint(actions).astype(np.int64)


def _change(base: np.ndarray, permuted: np.ndarray, discrete: bool) -> np.ndarray:
    """Per unit and repeat ``(U, R)`` change of the actions versus the unpermuted ones."""
    if discrete:
        return (_labels(permuted, 3) != _labels(base, 1)[None, None]).mean(axis=2)
    diff = np.abs(permuted.astype(np.float64) - base.astype(np.float64)[None, None])
    return diff.reshape(diff.shape[0], diff.shape[1], -1).mean(axis=2)


def _mean_std(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    std = values.std(axis=1, ddof=1) if values.shape[1] > 1 else np.zeros(values.shape[0])
    return values.mean(axis=1), std


def permutation_importance(
    action_fn: ActionFn,
    observations: ArrayLike,
    feature_names: Sequence[str],
    *,
    key: jax.Array | int = 0,
    n_repeats: int = 5,
    groups: Groups | None = None,
    score_fn: ScoreFn | None = None,
    discrete: bool = False,
) -> pd.DataFrame:
    """Global importance of each feature (or group) by shuffling it across the batch.

    Args:
        key: JAX PRNG key (or an int seed) for the ``n_repeats`` permutations, shared by all units.
        n_repeats: Permutations per feature; ``std`` is their spread (ddof=1; 0 for one repeat).
        score_fn: Optional score of the actions (see :data:`ScoreFn`); adds ``score_drop`` (original
            score minus score with the feature permuted) and ``score_std``.
        discrete: Treat actions as decisions (argmax of a vector, else the rounded scalar) and
            report the fraction of decisions that change.

    Returns:
        Columns ``feature, importance, std`` (plus ``score_drop, score_std``) sorted by importance.
    """
    obs = as_observations(observations)
    if obs.shape[0] < 2:
        raise InputError("observations", "permutation importance needs at least 2 observations")
    if n_repeats < 1:
        raise InputError("n_repeats", f"must be >= 1, got {n_repeats}")
    names = check_feature_names(feature_names, obs.shape[1])
    units = resolve_units(names, groups)
    action_shape(action_fn, obs[0])
    rng = jax.random.PRNGKey(key) if isinstance(key, int) else key
    perms = jax.vmap(lambda k: jax.random.permutation(k, obs.shape[0]))(jax.random.split(rng, n_repeats))
    masks = jnp.asarray(unit_matrix(units, obs.shape[1]) > 0)
    base = np.asarray(policy_actions(action_fn, obs))
    permuted = np.asarray(jit_bound(_permuted_actions, action_fn)(obs, masks, perms))
    importance, std = _mean_std(_change(base, permuted, discrete))
    df = pd.DataFrame({"feature": [u[0] for u in units], "importance": importance, "std": std})
    if score_fn is not None:
        obs_np = np.asarray(obs)
        ref = float(score_fn(obs_np, base))
        drops = np.array([[ref - float(score_fn(obs_np, a)) for a in per_unit] for per_unit in permuted])
        df["score_drop"], df["score_std"] = _mean_std(drops)
    return sort_importance(df)
