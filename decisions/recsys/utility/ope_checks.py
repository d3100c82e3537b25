"""Validation of off-policy evaluation inputs and settings: each check raises ``InputError`` naming the field."""

from __future__ import annotations

from collections.abc import Sequence

import jax
import numpy as np

from decisions.errors import InputError

PROBABILITY_TOLERANCE = 1e-3
"""How far a target policy's probabilities may sum from 1 in one round (Monte Carlo, float32)."""


def objective_names(objectives: Sequence[str] | None, m: int) -> list[str]:
    """The objectives' names, checked against ``M``."""
    if objectives is None:
        return [f"objective_{j}" for j in range(m)]
    names = [str(o) for o in objectives]
    if len(names) != m:
        raise InputError("objectives", f"{len(names)} names given for {m} objectives")
    return names


def truth_vector(truth: float | Sequence[float] | np.ndarray, m: int) -> np.ndarray:
    """The truth as ``(M,)`` finite floats."""
    t = np.atleast_1d(np.asarray(truth, dtype=float))
    if t.shape != (m,):
        raise InputError("truth", f"shape {t.shape} does not match the {m} objectives")
    if not np.all(np.isfinite(t)):
        raise InputError("truth", "must be finite")
    return t


def is_concrete(x: object) -> bool:
    """Whether ``x`` holds a value now (not a JAX tracer inside jit or vmap)."""
    return not isinstance(x, jax.core.Tracer)


def check_tau(tau: float) -> None:
    """Switch-DR's threshold must be a positive number (NaN rejected)."""
    if is_concrete(tau) and not float(tau) > 0.0:
        raise InputError("tau", f"must be > 0, got {float(tau)}")


def check_n_boot(n_boot: int) -> None:
    """Bootstrap resamples: a positive integer."""
    if isinstance(n_boot, bool) or not isinstance(n_boot, int | np.integer) or n_boot < 1:
        raise InputError("n_boot", f"must be an integer >= 1, got {n_boot!r}")


def check_level(level: float) -> None:
    """Interval coverage strictly between 0 and 1."""
    if not 0.0 < float(level) < 1.0:
        raise InputError("level", f"must lie in (0, 1), got {level}")


def numeric_array(field: str, values: object) -> np.ndarray:
    """``values`` as a float64 numpy array, or an ``InputError`` naming the field."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(field, f"not numeric ({exc})") from None


def first_bad_row(bad: np.ndarray) -> int:
    """Index of the first round with a problem (``bad`` is ``(n, ...)`` bool)."""
    return int(np.argmax(bad.reshape(bad.shape[0], -1).any(axis=1)))


def check_row_problem(field: str, bad: np.ndarray, problem: str) -> None:
    """Raise naming the field and the first bad row, if any row is bad."""
    if bad.size and bad.any():
        raise InputError(field, f"row {first_bad_row(bad)} {problem}")


def finite(field: str, values: object, *, ndim: int | None = None) -> np.ndarray:
    """A finite float array with ``ndim`` dimensions (any when ``None``)."""
    x = numeric_array(field, values)
    if ndim is not None and x.ndim != ndim:
        raise InputError(field, f"expected {ndim} dimension(s), got shape {x.shape}")
    if x.ndim == 0 or x.shape[0] == 0:
        raise InputError(field, "is empty")
    check_row_problem(field, ~np.isfinite(x), "is not finite (NaN or infinite)")
    return x


def as_matrix(field: str, values: object) -> np.ndarray:
    """A finite ``(n, M)`` array; ``(n,)`` becomes ``(n, 1)``."""
    x = finite(field, values)
    if x.ndim == 1:
        return x[:, None]
    if x.ndim != 2:
        raise InputError(field, f"expected shape (n,) or (n, M), got {x.shape}")
    return x


def check_rows(field: str, x: np.ndarray, n: int) -> None:
    """The first axis must have the log's ``n`` rounds."""
    if x.shape[0] != n:
        raise InputError(field, f"has {x.shape[0]} rows but rewards has {n}")


def same_shape(field: str, x: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``x`` must have the rewards' shape."""
    if x.shape != shape:
        raise InputError(field, f"shape {x.shape} does not match rewards' {shape}")
    return x


def probabilities(field: str, values: object, n: int) -> np.ndarray:
    """``(n, A)`` rows of probabilities (>= 0, summing to 1)."""
    probs = finite(field, values, ndim=2)
    check_rows(field, probs, n)
    check_row_problem(field, probs < 0, "has a negative probability")
    off = np.abs(probs.sum(axis=1) - 1.0) > PROBABILITY_TOLERANCE
    check_row_problem(field, off, "does not sum to 1")
    return probs


def action_indices(values: object, n: int, n_actions: int) -> np.ndarray:
    """``(n,)`` integer actions in ``[0, A)``."""
    a = finite("actions", values, ndim=1)
    check_rows("actions", a, n)
    check_row_problem("actions", a != np.round(a), "is not an integer")
    check_row_problem("actions", (a < 0) | (a >= n_actions), f"is outside [0, {n_actions})")
    return a.astype(np.int64)


def propensities(values: object, n: int) -> np.ndarray:
    """``(n,)`` logging probabilities in ``(0, 1]``."""
    p = finite("logged_propensity", values, ndim=1)
    check_rows("logged_propensity", p, n)
    check_row_problem("logged_propensity", (p <= 0) | (p > 1), "is outside (0, 1]")
    return p


def reward_model(values: object, n: int, n_actions: int, m: int) -> np.ndarray:
    """``(n, A, M)`` reward model; ``(n, A)`` accepted when ``M == 1``."""
    q = finite("q_hat", values)
    if q.ndim == 2 and m == 1:
        q = q[:, :, None]
    if q.shape != (n, n_actions, m):
        raise InputError("q_hat", f"shape {q.shape} does not match (n, A, M) = {(n, n_actions, m)}")
    return q
