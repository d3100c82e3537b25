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

from decisions.errors import InputError

ESTIMATORS = ("ips", "snips", "dm", "dr", "switch_dr")
"""Every estimator ``estimate_all`` returns, in this order."""
DEFAULT_TAU = 10.0
"""Switch-DR's default weight threshold: rounds with ``w > tau`` fall back to DM. 10 is the smallest
threshold obp's ``SwitchDoublyRobustTuning`` tries in its Open Bandit example (its plain
``SwitchDoublyRobust`` defaults to infinity, which is DR)."""
PROBABILITY_TOLERANCE = 1e-3
"""How far a target policy's probabilities may sum from 1 in one round (Monte Carlo, float32)."""
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

        Returns:
            The validated inputs.
        """
        r = _as_matrix("rewards", rewards)
        w = _finite("weights", weights, ndim=1)
        _check_rows("weights", w, r.shape[0])
        _check_row_problem("weights", w < 0, "is negative; importance weights must be >= 0")
        q_log = _same_shape("q_logged", _as_matrix("q_logged", q_logged), r.shape)
        q_pol = _same_shape("q_policy", _as_matrix("q_policy", q_policy), r.shape)
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
        r = _as_matrix("rewards", rewards)
        n = r.shape[0]
        probs = _probabilities("target_probs", target_probs, n)
        a = _actions(actions, n, probs.shape[1])
        p = _propensities(logged_propensity, n)
        q = _reward_model(q_hat, n, probs.shape[1], r.shape[1])
        rows = np.arange(n)
        weights = probs[rows, a] / p
        return cls.of(r, weights, q[rows, a], np.einsum("na,nam->nm", probs, q))


# --- estimators (pure jax.numpy) ---------------------------------------------------------------


def _column(weights: Array, like: Array) -> Array:
    """Reshape ``(n,)`` weights to broadcast against ``(n,)`` or ``(n, M)`` values."""
    return jnp.reshape(weights, weights.shape + (1,) * (like.ndim - 1))


def ips(rewards: Array, weights: Array) -> Array:
    """Inverse propensity scoring: ``mean(w r)``.

    Args:
        rewards: ``(n,)`` or ``(n, M)`` rewards.
        weights: ``(n,)`` importance weights.

    Returns:
        The estimate, ``()`` or ``(M,)``.
    """
    return jnp.mean(_column(weights, rewards) * rewards, axis=0)


def snips(rewards: Array, weights: Array) -> Array:
    """Self-normalised IPS: ``sum(w r) / sum(w)`` (obp: ``mean(w r / mean(w))``).

    Args:
        rewards: ``(n,)`` or ``(n, M)`` rewards.
        weights: ``(n,)`` importance weights (not all zero).

    Returns:
        The estimate, ``()`` or ``(M,)``.
    """
    return jnp.sum(_column(weights, rewards) * rewards, axis=0) / jnp.sum(weights)


def dm(q_policy: Array) -> Array:
    """Direct method: the reward model averaged over the target policy, ``mean(q_policy)``.

    Args:
        q_policy: ``(n,)`` or ``(n, M)`` ``sum_a pi_e(a | x_i) q_hat(x_i, a)``.

    Returns:
        The estimate, ``()`` or ``(M,)``.
    """
    return jnp.mean(q_policy, axis=0)


def dr(rewards: Array, weights: Array, q_logged: Array, q_policy: Array) -> Array:
    """Doubly robust: ``mean(q_policy + w (r - q_logged))``.

    Args:
        rewards: ``(n,)`` or ``(n, M)`` rewards.
        weights: ``(n,)`` importance weights.
        q_logged: reward model at the logged actions, the shape of ``rewards``.
        q_policy: reward model under the target policy, the shape of ``rewards``.

    Returns:
        The estimate, ``()`` or ``(M,)``.
    """
    return jnp.mean(q_policy + _column(weights, rewards) * (rewards - q_logged), axis=0)


def switch_dr(
    rewards: Array, weights: Array, q_logged: Array, q_policy: Array, tau: float | Array = DEFAULT_TAU
) -> Array:
    """Switch-DR (obp's ``SwitchDoublyRobust``): ``mean(q_policy + 1{w <= tau} w (r - q_logged))``.

    Args:
        rewards: ``(n,)`` or ``(n, M)`` rewards.
        weights: ``(n,)`` importance weights.
        q_logged: reward model at the logged actions, the shape of ``rewards``.
        q_policy: reward model under the target policy, the shape of ``rewards``.
        tau: weight threshold (> 0); rounds above it keep only the DM term.

    Returns:
        The estimate, ``()`` or ``(M,)``.
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
    _check_tau(tau)
    estimates = _estimate_all_jit(inputs, jnp.float32(tau))
    return {name: estimates[name] for name in ESTIMATORS}


# --- bootstrap -----------------------------------------------------------------------------------


def resample(inputs: OpeInputs, key: Array) -> OpeInputs:
    """One bootstrap resample: ``n`` rounds drawn with replacement (traceable).

    Args:
        inputs: the log.
        key: a JAX random key.

    Returns:
        The resampled log, same shapes.
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
    """Every estimator on ``n_boot`` bootstrap resamples of the rounds.

    The resampled rows depend only on ``key`` and ``n``: two logs of the same length resampled
    with the same key share their resamples (paired bootstrap, e.g. of a difference of values).

    Args:
        inputs: the log.
        key: a JAX random key.
        n_boot: resamples (>= 1).
        tau: Switch-DR's weight threshold (> 0).

    Returns:
        ``{name: (n_boot, M) estimates}``.
    """
    _check_n_boot(n_boot)
    _check_tau(tau)
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
    _check_level(level)
    tail = (1.0 - level) / 2.0
    return jnp.quantile(draws, tail, axis=0), jnp.quantile(draws, 1.0 - tail, axis=0)


def bootstrap(
    inputs: OpeInputs, key: Array, n_boot: int = 200, level: float = 0.95, tau: float = DEFAULT_TAU
) -> dict[str, tuple[Array, Array]]:
    """Percentile bootstrap intervals of every estimator (rounds resampled with replacement).

    The reward model is held fixed across resamples (obp refits it on each).

    Args:
        inputs: the log.
        key: a JAX random key.
        n_boot: resamples (>= 1).
        level: coverage in ``(0, 1)``.
        tau: Switch-DR's weight threshold (> 0).

    Returns:
        ``{name: (low (M,), high (M,))}``.
    """
    _check_level(level)
    draws = bootstrap_draws(inputs, key, n_boot, tau)
    return {name: percentile_interval(d, level) for name, d in draws.items()}


def bootstrap_mean(
    values: np.ndarray, key: Array, n_boot: int = 200, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of a plain mean (e.g. an on-policy click rate).

    Args:
        values: ``(n,)`` finite values.
        key: a JAX random key.
        n_boot: resamples (>= 1).
        level: coverage in ``(0, 1)``.

    Returns:
        ``(low, high)``.
    """
    v = _finite("values", values, ndim=1)
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

    Args:
        inputs: the log.
        key: a JAX random key for the bootstrap (``jax.random.key(0)`` when ``None``).
        n_boot: resamples (>= 1).
        level: coverage in ``(0, 1)``.
        tau: Switch-DR's weight threshold (> 0).
        truth: the true value per objective (scalar when ``M == 1``), or ``None``.
        objectives: names of the ``M`` objectives (``objective_0``... when ``None``).

    Returns:
        One row per estimator and objective: ``estimator``, ``objective``, ``estimate``, ``ci_low``,
        ``ci_high`` and, with a truth, ``truth`` and ``rel_error = |estimate - truth| / |truth|``.
    """
    m = int(inputs.rewards.shape[1])
    names = _objective_names(objectives, m)
    target = None if truth is None else _truth(truth, m)
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

    Returns:
        The relative error.
    """
    if truth == 0.0:
        return 0.0 if estimate == 0.0 else math.inf
    return abs(estimate - truth) / abs(truth)


# --- validation ----------------------------------------------------------------------------------


def _objective_names(objectives: Sequence[str] | None, m: int) -> list[str]:
    """The objectives' names, checked against ``M``."""
    if objectives is None:
        return [f"objective_{j}" for j in range(m)]
    names = [str(o) for o in objectives]
    if len(names) != m:
        raise InputError("objectives", f"{len(names)} names given for {m} objectives")
    return names


def _truth(truth: float | Sequence[float] | np.ndarray, m: int) -> np.ndarray:
    """The truth as ``(M,)`` finite floats."""
    t = np.atleast_1d(np.asarray(truth, dtype=float))
    if t.shape != (m,):
        raise InputError("truth", f"shape {t.shape} does not match the {m} objectives")
    if not np.all(np.isfinite(t)):
        raise InputError("truth", "must be finite")
    return t


def _is_concrete(x: object) -> bool:
    """Whether ``x`` holds a value now (not a JAX tracer inside jit or vmap)."""
    return not isinstance(x, jax.core.Tracer)


def _check_tau(tau: float) -> None:
    """Switch-DR's threshold must be a positive number (NaN rejected)."""
    if _is_concrete(tau) and not float(tau) > 0.0:
        raise InputError("tau", f"must be > 0, got {float(tau)}")


def _check_n_boot(n_boot: int) -> None:
    """Bootstrap resamples: a positive integer."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
        raise InputError("n_boot", f"must be an integer >= 1, got {n_boot!r}")


def _check_level(level: float) -> None:
    """Interval coverage strictly between 0 and 1."""
    if not 0.0 < float(level) < 1.0:
        raise InputError("level", f"must lie in (0, 1), got {level}")


def _array(field: str, values: object) -> np.ndarray:
    """``values`` as a float64 numpy array, or an ``InputError`` naming the field."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(field, f"not numeric ({exc})") from None


def _first_bad_row(bad: np.ndarray) -> int:
    """Index of the first round with a problem (``bad`` is ``(n, ...)`` bool)."""
    return int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))


def _check_row_problem(field: str, bad: np.ndarray, problem: str) -> None:
    """Raise naming the field and the first bad row, if any row is bad."""
    if bad.size and bad.any():
        raise InputError(field, f"row {_first_bad_row(bad)} {problem}")


def _finite(field: str, values: object, *, ndim: int | None = None) -> np.ndarray:
    """A finite float array with ``ndim`` dimensions (any when ``None``)."""
    x = _array(field, values)
    if ndim is not None and x.ndim != ndim:
        raise InputError(field, f"expected {ndim} dimension(s), got shape {x.shape}")
    if x.ndim == 0 or x.shape[0] == 0:
        raise InputError(field, "is empty")
    _check_row_problem(field, ~np.isfinite(x), "is not finite (NaN or infinite)")
    return x


def _as_matrix(field: str, values: object) -> np.ndarray:
    """A finite ``(n, M)`` array; ``(n,)`` becomes ``(n, 1)``."""
    x = _finite(field, values)
    if x.ndim == 1:
        return x[:, None]
    if x.ndim != 2:
        raise InputError(field, f"expected shape (n,) or (n, M), got {x.shape}")
    return x


def _check_rows(field: str, x: np.ndarray, n: int) -> None:
    """The first axis must have the log's ``n`` rounds."""
    if x.shape[0] != n:
        raise InputError(field, f"has {x.shape[0]} rows but rewards has {n}")


def _same_shape(field: str, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``x`` must have the rewards' shape."""
    if x.shape != shape:
        raise InputError(field, f"shape {x.shape} does not match rewards' {shape}")
    return x


def _probabilities(field: str, values: object, n: int) -> np.ndarray:
    """``(n, A)`` rows of probabilities (>= 0, summing to 1)."""
    probs = _finite(field, values, ndim=2)
    _check_rows(field, probs, n)
    _check_row_problem(field, probs < 0, "has a negative probability")
    off = np.abs(probs.sum(axis=1) - 1.0) > PROBABILITY_TOLERANCE
    _check_row_problem(field, off, "does not sum to 1")
    return probs


def _actions(values: object, n: int, n_actions: int) -> np.ndarray:
    """``(n,)`` integer actions in ``[0, A)``."""
    a = _finite("actions", values, ndim=1)
    _check_rows("actions", a, n)
    _check_row_problem("actions", a != np.round(a), "is not an integer")
    _check_row_problem("actions", (a < 0) | (a >= n_actions), f"is outside [0, {n_actions})")
    return a.astype(np.int64)


def _propensities(values: object, n: int) -> np.ndarray:
    """``(n,)`` logging probabilities in ``(0, 1]``."""
    p = _finite("logged_propensity", values, ndim=1)
    _check_rows("logged_propensity", p, n)
    _check_row_problem("logged_propensity", (p <= 0) | (p > 1), "is outside (0, 1]")
    return p


def _reward_model(values: object, n: int, n_actions: int, m: int) -> np.ndarray:
    """``(n, A, M)`` reward model; ``(n, A)`` accepted when ``M == 1``."""
    q = _finite("q_hat", values)
    if q.ndim == 2 and m == 1:
        q = q[:, :, None]
    if q.shape != (n, n_actions, m):
        raise InputError("q_hat", f"shape {q.shape} does not match (n, A, M) = {(n, n_actions, m)}")
    return q
