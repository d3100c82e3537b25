"""Input validation and shared helpers for :mod:`decisions.core.explain`; every check raises a
one-line ``InputError``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from decisions.errors import InputError

# A JAX-traceable policy ``obs (F,) -> action () or (A,)`` with its parameters closed over.
ActionFn = Callable[[jax.Array], jax.Array]

# Named feature groups, e.g. ``{"price forecast": ["price_6h", "price_12h", "price_24h"]}``.
Groups = Mapping[str, Sequence[str]]

BaselineKind = Literal["mean", "median", "zeros"]


def as_observations(observations: ArrayLike, name: str = "observations") -> jax.Array:
    """Validate a batch ``(N, F)`` of observations (non-empty, finite) and return it as a JAX array."""
    obs = np.asarray(observations, dtype=np.float64)
    if obs.ndim != 2:
        raise InputError(name, f"expected a 2-D array (N, F), got shape {obs.shape}")
    if obs.shape[0] == 0:
        raise InputError(name, "empty batch (N = 0)")
    if obs.shape[1] == 0:
        raise InputError(name, "no features (F = 0)")
    bad = int(np.count_nonzero(~np.isfinite(obs)))
    if bad:
        raise InputError(name, f"{bad} of {obs.size} values are not finite")
    return jnp.asarray(obs, dtype=jnp.result_type(float))


def as_observation(x: ArrayLike, n_features: int, name: str = "x") -> jax.Array:
    """Validate one observation of shape ``(F,)``."""
    obs = np.asarray(x, dtype=np.float64)
    if obs.shape != (n_features,):
        raise InputError(name, f"expected shape ({n_features},), got {obs.shape}")
    if not np.all(np.isfinite(obs)):
        raise InputError(name, "contains non-finite values")
    return jnp.asarray(obs, dtype=jnp.result_type(float))


def check_feature_names(feature_names: Sequence[str], n_features: int) -> list[str]:
    """Check that there is one unique name per feature column."""
    names = [str(n) for n in feature_names]
    if len(names) != n_features:
        raise InputError(
            "feature_names", f"has {len(names)} names but the observations have {n_features} features"
        )
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise InputError("feature_names", f"duplicate name {n!r}")
        seen.add(n)
    return names


def feature_index(feature_names: Sequence[str], feature: str, name: str = "feature") -> int:
    """Column index of ``feature``, or a one-line error naming ``name``."""
    try:
        return list(feature_names).index(feature)
    except ValueError:
        raise InputError(name, f"unknown feature {feature!r}") from None


def resolve_units(feature_names: Sequence[str], groups: Groups | None) -> list[tuple[str, list[int]]]:
    """Turn optional groups into explanation units ``(name, column indices)``.

    Each group is one unit; every feature not in any group is its own unit. Groups
    must be non-empty, name known features, not overlap, and not reuse the name of
    an ungrouped feature.
    """
    if not groups:
        return [(n, [i]) for i, n in enumerate(feature_names)]
    owner: dict[str, str] = {}
    units: list[tuple[str, list[int]]] = []
    for gname, members in groups.items():
        if isinstance(members, str) or len(members) == 0:
            raise InputError("groups", f"group {gname!r} must be a non-empty list of feature names")
        cols = []
        for m in members:
            cols.append(feature_index(feature_names, m, "groups"))
            if m in owner and owner[m] != gname:
                raise InputError("groups", f"feature {m!r} is in both {owner[m]!r} and {gname!r}")
            owner[m] = gname
        units.append((str(gname), sorted(set(cols))))
    group_names = {u[0] for u in units}
    for i, n in enumerate(feature_names):
        if n in owner:
            continue
        if n in group_names:
            raise InputError("groups", f"group name {n!r} clashes with an ungrouped feature")
        units.append((n, [i]))
    return units


def unit_matrix(units: Sequence[tuple[str, list[int]]], n_features: int) -> np.ndarray:
    """``(U, F)`` 0/1 membership matrix of the units."""
    m = np.zeros((len(units), n_features), dtype=np.float64)
    for u, (_, cols) in enumerate(units):
        m[u, cols] = 1.0
    return m


def make_baseline(observations: ArrayLike, kind: BaselineKind = "mean") -> jax.Array:
    """A ``(F,)`` reference observation for integrated gradients: feature ``mean``, ``median`` or ``zeros``."""
    obs = as_observations(observations)
    if kind == "mean":
        return jnp.mean(obs, axis=0)
    if kind == "median":
        return jnp.median(obs, axis=0)
    if kind == "zeros":
        return jnp.zeros(obs.shape[1], dtype=obs.dtype)
    raise InputError("baseline", f"unknown kind {kind!r}; use 'mean', 'median' or 'zeros'")


def resolve_baseline(
    baseline: ArrayLike | BaselineKind | None, observations: jax.Array | None, n_features: int
) -> jax.Array:
    """Baseline ``(F,)`` from an array, a kind (needs observations) or None (feature means)."""
    if baseline is None or isinstance(baseline, str):
        if observations is None:
            raise InputError(
                "baseline", "pass a baseline array or the observations to take feature means from"
            )
        return make_baseline(observations, baseline or "mean")
    return as_observation(baseline, n_features, "baseline")


def action_shape(action_fn: ActionFn, x: jax.Array) -> jax.ShapeDtypeStruct:
    """Shape/dtype of ``action_fn(x)``; only ``()`` and ``(A,)`` actions are accepted."""
    try:
        out = jax.eval_shape(action_fn, x)
    except Exception as exc:  # report any tracing failure on one line, naming the argument
        detail = " ".join(str(exc).split())[:200]
        raise InputError(
            "action_fn", f"could not be traced on one observation ({type(exc).__name__}: {detail})"
        ) from exc
    if not hasattr(out, "shape") or len(out.shape) > 1:
        raise InputError(
            "action_fn", f"must return a scalar or a 1-D array, got {getattr(out, 'shape', out)}"
        )
    return out


def check_output(
    action_fn: ActionFn, x: jax.Array, output: int | None, *, differentiable: bool
) -> int | None:
    """Validate ``output`` against the action shape; returns the component index to use (or None).

    A vector action of size > 1 needs ``output`` to pick the component to explain.
    Gradient-based methods also need a floating-point action.
    """
    out = action_shape(action_fn, x)
    size = int(np.prod(out.shape)) if out.shape else 1
    if output is None and size > 1:
        raise InputError(
            "output", f"action_fn returns shape {tuple(out.shape)}; pass output=<index> to pick one"
        )
    if output is not None and not -size <= output < size:
        raise InputError("output", f"index {output} out of range for {size} action components")
    if differentiable and not jnp.issubdtype(out.dtype, jnp.floating):
        raise InputError(
            "action_fn",
            f"returns {out.dtype} actions, which have no gradient; return probabilities or expected_action(...)",
        )
    return None if output is None else output % size


def jit_bound(fn: Callable[..., jax.Array], *bound: object) -> Callable[..., jax.Array]:
    """``jax.jit(partial(fn, *bound))``: jit with the policy bound per call.

    Deliberately not ``static_argnames``: jit's cache would keep every ``action_fn``
    (and the parameters it closes over) alive for the life of the process.
    """
    return jax.jit(partial(fn, *bound))


def policy_actions(action_fn: ActionFn, observations: jax.Array) -> jax.Array:
    """The policy's actions on a batch ``(N, F)``: one jitted, vmapped call."""
    return jax.jit(jax.vmap(action_fn))(observations)


def scalar_fn(action_fn: ActionFn, output: int | None) -> Callable[[jax.Array], jax.Array]:
    """``x -> action`` as a scalar (component ``output`` of a vector action)."""

    def f(x: jax.Array) -> jax.Array:
        a = jnp.ravel(jnp.asarray(action_fn(x)))
        return a[0 if output is None else output]

    return f


def expected_action(logits_fn: ActionFn, levels: ArrayLike | None = None) -> ActionFn:
    """Wrap a discrete policy's logits into a differentiable scalar: the expected action level.

    ``expected_action(logits_fn, levels)(x) = sum_k softmax(logits_fn(x))_k * levels_k``; with
    ``levels=None`` the level of choice ``k`` is ``k`` (the expected index). Use it for
    gradient-based explanations of discrete policies; the surrogate tree takes the raw
    logits (it uses their argmax).
    """
    lv = (
        None
        if levels is None
        else jnp.asarray(np.asarray(levels, dtype=np.float64), dtype=jnp.result_type(float))
    )

    def f(x: jax.Array) -> jax.Array:
        logits = jnp.ravel(logits_fn(x))
        p = jax.nn.softmax(logits)
        values = jnp.arange(logits.shape[0], dtype=p.dtype) if lv is None else lv
        return jnp.sum(p * values)

    return f


def sort_importance(df: pd.DataFrame, key: str = "importance") -> pd.DataFrame:
    """Sort a frame by ``key`` descending (stable) and renumber rows."""
    return df.sort_values(key, ascending=False, kind="stable").reset_index(drop=True)
