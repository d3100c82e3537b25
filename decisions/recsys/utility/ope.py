"""Off-policy evaluation (OPE): IPS, SNIPS, DM, DR and Switch-DR in JAX, with bootstrap intervals.

A log holds ``n`` rounds; round ``i`` showed action ``a_i`` (chosen by the logging policy with
probability ``p_log(a_i | x_i)``) and observed ``M`` rewards ``r_i``. To estimate the value of a
target policy ``pi_e`` the estimators read four arrays (``OpeInputs``):

- ``rewards`` ``(n, M)``: the observed rewards ``r_i``;
- ``weights`` ``(n,)``: ``w_i = pi_e(a_i | x_i) / p_log(a_i | x_i)``;
- ``q_logged`` ``(n, M)``: a reward model's prediction for the logged action, ``q_hat(x_i, a_i)``;
- ``q_policy`` ``(n, M)``: its prediction under the target policy, ``sum_a pi_e(a | x_i) q_hat(x_i, a)``.

The definitions are those of obp (Saito et al., ``obp/ope/estimators.py``):

- IPS: ``mean(w r)``;
- SNIPS: ``sum(w r) / sum(w)``;
- DM: ``mean(q_policy)``;
- DR: ``mean(q_policy + w (r - q_logged))``;
- Switch-DR: ``mean(q_policy + 1{w <= tau} w (r - q_logged))`` (obp's ``SwitchDoublyRobust``).

The estimators are pure ``jax.numpy`` functions (jittable, vmappable); validation happens where the
arrays enter (``OpeInputs.of``, ``OpeInputs.from_policy``) and raises ``InputError`` naming the field.
``bootstrap`` resamples rounds with replacement (vmapped, chunked with ``jax.lax.map``) and
returns percentile intervals; ``summary_table`` puts estimates, intervals and errors in a DataFrame.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from decisions.recsys.utility.ope_checks import (
    action_indices,
    as_matrix,
    check_level,
    check_n_boot,
    check_row_problem,
    check_rows,
    check_tau,
    finite,
    objective_names,
    probabilities,
    propensities,
    reward_model,
    same_shape,
    truth_vector,
)

ESTIMATORS = ("ips", "snips", "dm", "dr", "switch_dr")
"""Every estimator ``estimate_all`` returns, in this order."""
DEFAULT_TAU = 10.0
"""Switch-DR's default weight threshold: rounds with ``w > tau`` fall back to DM. 10 is the smallest
threshold obp's ``SwitchDoublyRobustTuning`` tries in its Open Bandit example (its plain
``SwitchDoublyRobust`` defaults to infinity, which is DR)."""
_BOOTSTRAP_ELEMENTS = 1 << 22
"""Resampled rounds held at once by ``bootstrap`` (resamples per chunk = this // n)."""

Array = jax.Array


class OpeInputs(NamedTuple):
    """The four arrays every estimator reads (a pytree: jit, vmap and index it like arrays).

    Build it with ``OpeInputs.of`` or ``OpeInputs.from_policy``, which validate; the constructor
    itself does not.
    """

    rewards: Array
    """``(n, M)`` observed rewards."""
    weights: Array
    """``(n,)`` importance weights ``pi_e(a_i | x_i) / p_log(a_i | x_i)``."""
    q_logged: Array
    """``(n, M)`` reward model at the logged action."""
    q_policy: Array
    """``(n, M)`` reward model averaged over the target policy."""

    @property
    def n(self) -> int:
        """Logged rounds."""
        return int(self.rewards.shape[0])

    @classmethod
    def of(
        cls, rewards: np.ndarray, weights: np.ndarray, q_logged: np.ndarray, q_policy: np.ndarray
    ) -> OpeInputs:
        """Validate the four arrays and hold them as float32; ``(n,)`` rewards become ``(n, 1)``.

        Args:
            rewards: ``(n,)`` or ``(n, M)`` finite rewards.
            weights: ``(n,)`` finite, non-negative importance weights.
            q_logged: the reward model at the logged actions, the shape of ``rewards``.
            q_policy: the reward model under the target policy, the shape of ``rewards``.
        """
        r = as_matrix("rewards", rewards)
        w = finite("weights", weights, ndim=1)
        check_rows("weights", w, r.shape[0])
        check_row_problem("weights", w < 0, "is negative; importance weights must be >= 0")
        q_log = same_shape("q_logged", as_matrix("q_logged", q_logged), r.shape)
        q_pol = same_shape("q_policy", as_matrix("q_policy", q_policy), r.shape)
        return cls(*(jnp.asarray(x, dtype=jnp.float32) for x in (r, w, q_log, q_pol)))

    @classmethod
    def from_policy(
        cls,
        rewards: np.ndarray,
        actions: np.ndarray,
        logged_propensity: np.ndarray,
        target_probs: np.ndarray,
        q_hat: np.ndarray,
    ) -> OpeInputs:
        """Compute weights and reward-model terms from a target policy and a reward model.

        Args:
            rewards: ``(n,)`` or ``(n, M)`` finite rewards.
            actions: ``(n,)`` logged actions, integers in ``[0, A)``.
            logged_propensity: ``(n,)`` logging probability of each logged action, in ``(0, 1]``.
            target_probs: ``(n, A)`` target policy ``pi_e(a | x_i)`` (rows sum to 1; one-hot rows for
                a deterministic policy).
            q_hat: ``(n, A, M)`` reward model ``q_hat(x_i, a)`` (``(n, A)`` when ``M == 1``).

        Returns:
            The validated inputs: ``w_i = pi_e(a_i|x_i) / p_i``, ``q_logged = q_hat(x_i, a_i)``,
            ``q_policy = sum_a pi_e(a|x_i) q_hat(x_i, a)``.
        """
        r = as_matrix("rewards", rewards)
        n = r.shape[0]
        probs = probabilities("target_probs", target_probs, n)
        a = action_indices(actions, n, probs.shape[1])
        p = propensities(logged_propensity, n)
        q = reward_model(q_hat, n, probs.shape[1], r.shape[1])
        rows = np.arange(n)
        weights = probs[rows, a] / p
        return cls.of(r, weights, q[rows, a], np.einsum("na,nam->nm", probs, q))


# --- estimators (pure jax.numpy) ---------------------------------------------------------------


def _column(weights: Array, like: Array) -> Array:
    """Reshape ``(n,)`` weights to broadcast against ``(n,)`` or ``(n, M)`` values."""
    return jnp.reshape(weights, weights.shape + (1,) * (like.ndim - 1))


def ips(rewards: Array, weights: Array) -> Array:
    """Inverse propensity scoring, ``mean(w r)``, on the arrays of the module docstring.

    Rewards are ``(n,)`` or ``(n, M)``; the estimate is ``()`` or ``(M,)`` (as for every estimator here).
    """
    return jnp.mean(_column(weights, rewards) * rewards, axis=0)


def snips(rewards: Array, weights: Array) -> Array:
    """Self-normalised IPS: ``sum(w r) / sum(w)`` (obp: ``mean(w r / mean(w))``; weights not all zero)."""
    return jnp.sum(_column(weights, rewards) * rewards, axis=0) / jnp.sum(weights)


def dm(q_policy: Array) -> Array:
    """Direct method: the reward model averaged over the target policy, ``mean(q_policy)``."""
    return jnp.mean(q_policy, axis=0)


def dr(rewards: Array, weights: Array, q_logged: Array, q_policy: Array) -> Array:
    """Doubly robust: ``mean(q_policy + w (r - q_logged))``."""
    return jnp.mean(q_policy + _column(weights, rewards) * (rewards - q_logged), axis=0)


def switch_dr(
    rewards: Array, weights: Array, q_logged: Array, q_policy: Array, tau: float | Array = DEFAULT_TAU
) -> Array:
    """Switch-DR (obp's ``SwitchDoublyRobust``): ``mean(q_policy + 1{w <= tau} w (r - q_logged))``.

    Rounds with a weight above ``tau`` (> 0) keep only the DM term.
    """
    kept = jnp.where(weights <= tau, weights, 0.0)
    return jnp.mean(q_policy + _column(kept, rewards) * (rewards - q_logged), axis=0)


def _estimate_all(inputs: OpeInputs, tau: float | Array) -> dict[str, Array]:
    """Every estimator on one log (traceable)."""
    r, w, q_log, q_pol = inputs
    return {
        "ips": ips(r, w),
        "snips": snips(r, w),
        "dm": dm(q_pol),
        "dr": dr(r, w, q_log, q_pol),
        "switch_dr": switch_dr(r, w, q_log, q_pol, tau),
    }


_estimate_all_jit = jax.jit(_estimate_all)


def estimate_all(inputs: OpeInputs, tau: float = DEFAULT_TAU) -> dict[str, Array]:
    """Every estimator of ``ESTIMATORS`` on one log, in one compiled call.

    Args:
        inputs: the log (``OpeInputs.of`` or ``OpeInputs.from_policy``).
        tau: Switch-DR's weight threshold (> 0).

    Returns:
        ``{name: (M,) estimate}`` for each name of ``ESTIMATORS``.
    """
    check_tau(tau)
    estimates = _estimate_all_jit(inputs, jnp.float32(tau))
    return {name: estimates[name] for name in ESTIMATORS}


# --- bootstrap -----------------------------------------------------------------------------------


def resample(inputs: OpeInputs, key: Array) -> OpeInputs:
    """One bootstrap resample: ``n`` rounds drawn with replacement (traceable).

    Args:
        inputs: the log.
        key: a JAX random key.
    """
    n = inputs.rewards.shape[0]
    rows = jax.random.randint(key, (n,), 0, n)
    return jax.tree.map(lambda x: x[rows], inputs)


def _draws(inputs: OpeInputs, key: Array, tau: Array, n_boot: int, chunk: int) -> dict[str, Array]:
    """Every estimator on ``n_boot`` resamples, ``chunk`` resamples vmapped at a time."""
    keys = jax.random.split(key, n_boot)
    return jax.lax.map(lambda k: _estimate_all(resample(inputs, k), tau), keys, batch_size=chunk)


_draws_jit = jax.jit(_draws, static_argnames=("n_boot", "chunk"))


def bootstrap_draws(
    inputs: OpeInputs, key: Array, n_boot: int = 200, tau: float = DEFAULT_TAU
) -> dict[str, Array]:
    """``{name: (n_boot, M) estimates}``: every estimator on ``n_boot`` (>= 1) bootstrap resamples.

    The resampled rows depend only on ``key`` and ``n``: two logs of the same length resampled with
    the same key share their resamples (paired bootstrap, e.g. of a difference of values).
    """
    check_n_boot(n_boot)
    check_tau(tau)
    chunk = max(1, min(n_boot, _BOOTSTRAP_ELEMENTS // max(inputs.n, 1)))
    return _draws_jit(inputs, key, jnp.float32(tau), n_boot=n_boot, chunk=chunk)


def percentile_interval(draws: Array, level: float = 0.95) -> tuple[Array, Array]:
    """Percentile interval of bootstrap draws.

    Args:
        draws: ``(B, ...)`` bootstrap estimates.
        level: coverage in ``(0, 1)``.

    Returns:
        ``(low, high)``, each the shape of one draw.
    """
    check_level(level)
    tail = (1.0 - level) / 2.0
    return jnp.quantile(draws, tail, axis=0), jnp.quantile(draws, 1.0 - tail, axis=0)


def bootstrap(
    inputs: OpeInputs, key: Array, n_boot: int = 200, level: float = 0.95, tau: float = DEFAULT_TAU
) -> dict[str, tuple[Array, Array]]:
    """``{name: (low (M,), high (M,))}``: percentile bootstrap intervals of every estimator.

    Rounds are resampled with replacement (``n_boot`` >= 1 times; ``level`` in ``(0, 1)``, ``tau`` > 0).
    The reward model's predictions are held fixed across resamples, as in obp's ``estimate_interval``
    (which resamples per-round values and does not refit the model).
    """
    check_level(level)
    draws = bootstrap_draws(inputs, key, n_boot, tau)
    return {name: percentile_interval(d, level) for name, d in draws.items()}


def bootstrap_mean(
    values: np.ndarray, key: Array, n_boot: int = 200, level: float = 0.95
) -> tuple[float, float]:
    """``(low, high)``: the percentile bootstrap interval of a plain mean of ``(n,)`` finite values."""
    v = finite("values", values, ndim=1)
    n = v.shape[0]
    ones = np.ones(n)
    zeros = np.zeros((n, 1))
    draws = bootstrap_draws(OpeInputs.of(v, ones, zeros, zeros), key, n_boot)["ips"][:, 0]
    low, high = percentile_interval(draws, level)
    return float(low), float(high)


# --- table ---------------------------------------------------------------------------------------


def summary_table(
    inputs: OpeInputs,
    key: Array | None = None,
    *,
    n_boot: int = 200,
    level: float = 0.95,
    tau: float = DEFAULT_TAU,
    truth: float | Sequence[float] | np.ndarray | None = None,
    objectives: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Every estimator with its bootstrap interval, and its error when the truth is known.

    One row per estimator and objective: ``estimator``, ``objective`` (``objectives`` names, else
    ``objective_<j>``), ``estimate``, ``ci_low``, ``ci_high`` and, with ``truth`` (per objective;
    scalar when ``M == 1``), ``truth`` and ``rel_error = |estimate - truth| / |truth|``. ``key``
    defaults to ``jax.random.key(0)``.
    """
    m = int(inputs.rewards.shape[1])
    names = objective_names(objectives, m)
    target = None if truth is None else truth_vector(truth, m)
    estimates = estimate_all(inputs, tau)
    intervals = bootstrap(inputs, jax.random.key(0) if key is None else key, n_boot, level, tau)
    rows = []
    for est in ESTIMATORS:
        low, high = intervals[est]
        for j, objective in enumerate(names):
            row = {"estimator": est, "objective": objective, "estimate": float(estimates[est][j]),
                   "ci_low": float(low[j]), "ci_high": float(high[j])}
            if target is not None:
                row["truth"] = float(target[j])
                row["rel_error"] = relative_error(row["estimate"], row["truth"])
            rows.append(row)
    return pd.DataFrame(rows)


def relative_error(estimate: float, truth: float) -> float:
    """``|estimate - truth| / |truth|`` (infinite when the truth is 0 and the estimate is not).

    Args:
        estimate: the estimate.
        truth: the true value.
    """
    if truth == 0.0:
        return 0.0 if estimate == 0.0 else math.inf
    return abs(estimate - truth) / abs(truth)
