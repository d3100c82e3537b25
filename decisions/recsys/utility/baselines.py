"""The policies the learnt agent is judged against, each given the same logs."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.recsys.utility import objectives as obj


def per_action_values(actions: np.ndarray, rewards: np.ndarray, n_actions: int, hide_cost: float) -> np.ndarray:
    """Mean logged objectives (engagement, revenue) of each weight vector: (A, 2) (NaN where never logged)."""
    values = np.asarray(obj.objectives(jnp.asarray(rewards), hide_cost), np.float64)
    counts = np.bincount(actions, minlength=n_actions).astype(np.float64)
    sums = np.stack([np.bincount(actions, weights=values[:, k], minlength=n_actions) for k in range(2)], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sums / counts[:, None]


def best_global(values: np.ndarray, lam: float, scales: Array, scalarisation: str = "linear") -> int:
    """The weight vector with the best scalarised value among ``values`` (A, 2) (never-logged ones skipped)."""
    usable = np.where(np.isfinite(values), values, -np.inf)
    table = jnp.asarray(usable, jnp.float32)[None]
    if scalarisation == "chebyshev":
        finite = np.where(np.isfinite(values), values, np.nan)
        ideal = jnp.asarray(np.nanmax(finite, axis=0), jnp.float32)
        scores = obj.chebyshev(table, lam, scales, ideal)
    else:
        scores = obj.linear(table, lam, scales)
    return int(jnp.argmax(jnp.where(jnp.isfinite(scores), scores, -jnp.inf)))


class LinUCB(NamedTuple):
    """Disjoint LinUCB's per-arm statistics on features ``[x, 1]``."""

    inverse: Array
    """(A, d + 1, d + 1) inverse of ``ridge I + sum x x^T`` per arm."""
    theta: Array
    """(A, d + 1, 3) ridge coefficients of the outcomes per arm."""
    hide_cost: float
    scales: Array


def fit_linucb(context: np.ndarray, actions: np.ndarray, rewards: np.ndarray, n_actions: int, hide_cost: float,
               scales: Array, ridge: float = 1.0) -> LinUCB:
    """Fit every arm's ridge regression of (success, hides, revenue) on the context."""
    x = jnp.concatenate([jnp.asarray(context, jnp.float32), jnp.ones((len(context), 1), jnp.float32)], axis=1)
    one_hot = jax.nn.one_hot(jnp.asarray(actions), n_actions)
    gram = jnp.einsum("na,ni,nj->aij", one_hot, x, x) + ridge * jnp.eye(x.shape[1])
    moment = jnp.einsum("na,ni,nm->aim", one_hot, x, jnp.asarray(rewards, jnp.float32))
    inverse = jnp.linalg.inv(gram)
    return LinUCB(inverse, jnp.einsum("aij,ajm->aim", inverse, moment), float(hide_cost), scales)


def linucb_scores(model: LinUCB, context: Array, lam: float, alpha: float) -> Array:
    """The lam-utility of each arm's mean prediction plus ``alpha`` times its width: (n, A)."""
    x = jnp.concatenate([context, jnp.ones((context.shape[0], 1), context.dtype)], axis=1)
    means = obj.objectives(jnp.einsum("ni,aim->nam", x, model.theta), model.hide_cost)
    width = jnp.sqrt(jnp.einsum("ni,aij,nj->na", x, model.inverse, x))
    return obj.linear(means, lam, model.scales) + alpha * width


def linucb_decide(model: LinUCB, context: Array, lam: float, alpha: float) -> Array:
    """LinUCB's weight vector for each request: (n,)."""
    return jnp.argmax(linucb_scores(model, context, lam, alpha), axis=-1)


def ips_utility(actions: np.ndarray, chosen: np.ndarray, propensity: np.ndarray, rewards: np.ndarray,
                lam: float, scales: Array, hide_cost: float) -> float:
    """IPS estimate of a deterministic policy's lam-utility on logs (used to tune on validation logs)."""
    utility = np.asarray(obj.linear(obj.objectives(jnp.asarray(rewards), hide_cost), lam, scales))
    return float(np.mean((chosen == actions) / propensity * utility))


def tune_linucb(model: LinUCB, validation: tuple[np.ndarray, ...], lam: float, alphas: list[float]) -> float:
    """The bonus among ``alphas`` with the best IPS utility on the validation logs (context, action, propensity,
    reward)."""
    context, actions, propensity, rewards = validation
    best = max(
        alphas,
        key=lambda a: ips_utility(actions, np.asarray(linucb_decide(model, jnp.asarray(context), lam, a)),
                                  propensity, rewards, lam, model.scales, model.hide_cost),
    )
    return float(best)


def oracle_actions(values: Array, lam: float, scales: Array, scalarisation: str = "linear") -> Array:
    """The best action per request for (n, A, 2) true (or context-expected) objective values: (n,)."""
    return jnp.argmax(obj.scalarise(values, lam, scales, scalarisation), axis=-1)
