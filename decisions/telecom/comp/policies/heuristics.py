"""Jit-able heuristic CoMP policies: ``policy(obs, key, params) -> action`` on padded arrays.

``POLICIES`` act in mobile-env's toggle mode (max-SNR, random, keep), ``SERVING_SET_POLICIES`` in the
serving-set mode (max-SNR, top-k, random sizes, all cells); ``pad_central_obs`` / ``unpad_action`` adapt
mobile-env's central observation and action to the padded ones.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.telecom.comp.sim.env import snr_rank
from decisions.telecom.comp.sim.network import NetworkParams

__all__ = [
    "POLICIES",
    "SERVING_SET_POLICIES",
    "Policy",
    "fixed_set_size",
    "keep",
    "max_snr_single",
    "pad_central_obs",
    "random_policy",
    "random_set_size",
    "split_obs",
    "top_k",
    "unpad_action",
]

Policy = Callable[[Array, Array, NetworkParams], Array]
"""``policy(obs, key, params) -> action``."""


def split_obs(obs: Array, params: NetworkParams) -> tuple[Array, Array, Array]:
    """Split a ``CompEnv`` observation into connection flags, normalised SNRs and utilities.

    Returns:
        ``(conn, snr, util)`` of shapes ``(users, cells)``, ``(users, cells)``, ``(users,)``.
    """
    n_users, n_cells = params.user_mask.shape[-1], params.cell_mask.shape[-1]
    table = obs.reshape(n_users, 2 * n_cells + 1)
    return table[:, :n_cells] > 0.5, table[:, n_cells : 2 * n_cells], table[:, -1]


def keep(obs: Array, key: Array, params: NetworkParams) -> Array:
    """Never toggle: all zeros."""
    del key
    return jnp.zeros(params.user_mask.shape, jnp.int32)


def random_policy(obs: Array, key: Array, params: NetworkParams) -> Array:
    """Uniform over keep and the existing cells for each existing user (0 for padded users)."""
    del obs
    n = jnp.sum(params.cell_mask)
    action = jax.random.randint(key, params.user_mask.shape, 0, n + 1, dtype=jnp.int32)
    return jnp.where(params.user_mask, action, 0)


def top_k(k: int) -> Policy:
    """A policy that steers each user's serving set to its ``k`` best-SNR cells (see module docstring).

    Returns:
        The policy.
    """
    if int(k) != k or k < 1:
        raise ValueError(f"k: must be a positive integer, got {k!r}")

    def policy(obs: Array, key: Array, params: NetworkParams) -> Array:
        del key
        conn, snr, _ = split_obs(obs, params)
        cells = params.cell_mask[None, :]
        score = jnp.where(cells, snr, -1.0)
        rank = snr_rank(score, cells)  # 0 = best, the lowest index first on ties (argmax's choice)
        top = (rank < k) & cells
        missing = top & ~conn
        extra = conn & ~top
        served = jnp.any(conn & top, axis=1)
        first_extra = jnp.argmax(extra, axis=1)
        best_missing = jnp.argmax(jnp.where(missing, score, -2.0), axis=1)
        action = jnp.where(
            served & jnp.any(extra, axis=1),
            first_extra + 1,
            jnp.where(jnp.any(missing, axis=1), best_missing + 1, 0),
        )
        return jnp.where(params.user_mask, action, 0).astype(jnp.int32)

    return policy


max_snr_single: Policy = top_k(1)
"""Each user connected to its best-SNR cell only (``top_k(1)``)."""

POLICIES: dict[str, Policy] = {
    "max_snr": max_snr_single,
    "top2": top_k(2),
    "random": random_policy,
    "keep": keep,
}
"""The baseline policies of the toggle mode by name."""


def fixed_set_size(k: int) -> Policy:
    """Serving-set mode: every user served by its ``k`` strongest connectable cells.

    Raises:
        ValueError: ``k`` not a non-negative integer.
    """
    if int(k) != k or k < 0:
        raise ValueError(f"k: must be a non-negative integer, got {k!r}")

    def policy(obs: Array, key: Array, params: NetworkParams) -> Array:
        del obs, key
        return jnp.where(params.user_mask, int(k), 0).astype(jnp.int32)

    return policy


def random_set_size(obs: Array, key: Array, params: NetworkParams) -> Array:
    """Serving-set mode: a uniform size in 0..(number of cells) for each real user."""
    del obs
    n = jnp.sum(params.cell_mask)
    action = jax.random.randint(key, params.user_mask.shape, 0, n + 1, dtype=jnp.int32)
    return jnp.where(params.user_mask, action, 0)


SERVING_SET_POLICIES: dict[str, Policy] = {
    "max_snr": fixed_set_size(1),
    "top2": fixed_set_size(2),
    "random": random_set_size,
}
"""The baseline policies of the serving-set mode (the learning tasks) by name."""


def pad_central_obs(
    obs: np.ndarray, n_cells: int, n_users: int, max_cells: int, max_users: int
) -> np.ndarray:
    """Pad mobile-env's central observation (``n_users * (2 n_cells + 1)``) to ``CompEnv``'s layout.

    Returns:
        ``(max_users * (2 max_cells + 1),)`` float32 observation, zeros in the padding.
    """
    table = np.asarray(obs, np.float32).reshape(n_users, 2 * n_cells + 1)
    out = np.zeros((max_users, 2 * max_cells + 1), np.float32)
    out[:n_users, :n_cells] = table[:, :n_cells]
    out[:n_users, max_cells : max_cells + n_cells] = table[:, n_cells : 2 * n_cells]
    out[:n_users, -1] = table[:, -1]
    return out.reshape(-1)


def unpad_action(action: Array | np.ndarray, n_users: int) -> np.ndarray:
    """The first ``n_users`` entries of a ``CompEnv`` action, for mobile-env's central handler.

    Returns:
        ``(n_users,)`` int64 action.
    """
    return np.asarray(action, np.int64)[:n_users]
