"""Monte Carlo value estimates and paired comparisons on common random paths, with normal 95%
intervals and optional control variates (``control_variate``). Rationale: ``docs/notes/core.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

# Two-sided 95% normal quantile (1.959964...).
Z95: float = NormalDist().inv_cdf(0.975)


def _as_samples(samples: ArrayLike, name: str = "samples") -> np.ndarray:
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D array of per-path values, got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"{name}: no samples")
    bad = int(np.count_nonzero(~np.isfinite(x)))
    if bad:
        raise ValueError(f"{name}: {bad} of {x.size} values are not finite")
    return x


def _stderr(x: np.ndarray) -> float:
    return float(np.std(x, ddof=1) / math.sqrt(x.size)) if x.size > 1 else math.nan


@dataclass(frozen=True)
class ValueEstimate:
    """A Monte Carlo estimate of an expected value with its 95% confidence interval."""

    # Sample mean over paths.
    mean: float
    # Standard error of the mean, ``std(ddof=1) / sqrt(n)`` (NaN when ``n == 1``).
    stderr: float
    # Number of paths.
    n: int
    # ``mean - 1.96 stderr``.
    ci95_low: float
    # ``mean + 1.96 stderr``.
    ci95_high: float

    @classmethod
    def from_samples(cls, samples: ArrayLike) -> ValueEstimate:
        """Estimate from a 1-D array of finite per-path values.

        Raises:
            ValueError: empty, not 1-D, or holding NaN/inf values.
        """
        x = _as_samples(samples)
        mean, se = float(np.mean(x)), _stderr(x)
        return cls(mean=mean, stderr=se, n=int(x.size), ci95_low=mean - Z95 * se, ci95_high=mean + Z95 * se)

    def __str__(self) -> str:
        return f"{self.mean:.6g} ± {Z95 * self.stderr:.2g} (95% CI, n={self.n})"


def monte_carlo_value(samples: ArrayLike) -> ValueEstimate:
    """Mean, standard error and 95% CI of per-path values (``ValueEstimate.from_samples``)."""
    return ValueEstimate.from_samples(samples)


@dataclass(frozen=True)
class ControlVariateFit:
    """Per-path values with a control variate subtracted."""

    # ``samples - controls @ coefficients``: same expectation, smaller variance.
    adjusted: np.ndarray
    # The least-squares coefficients, one per control.
    coefficients: np.ndarray
    # ``var(samples) / var(adjusted)`` (1 when the controls explain nothing).
    variance_reduction: float


def control_variate(samples: ArrayLike, controls: ArrayLike) -> ControlVariateFit:
    """Subtract from ``(n,)`` per-path values the least-squares combination of ``(n,)`` or ``(n, k)``
    per-path controls of expectation exactly 0, fitted on the same paths.

    Raises:
        ValueError: bad samples, or controls not of shape ``(n,)`` / ``(n, k)`` or not finite.
    """
    y = _as_samples(samples)
    c = np.asarray(controls, dtype=np.float64)
    c = c[:, None] if c.ndim == 1 else c
    if c.ndim != 2 or c.shape[0] != y.size:
        raise ValueError(f"controls: expected shape ({y.size},) or ({y.size}, k), got {np.shape(controls)}")
    if not np.isfinite(c).all():
        raise ValueError("controls: not all finite")
    centred = c - c.mean(axis=0)
    coefficients = np.linalg.lstsq(centred, y - y.mean(), rcond=None)[0]
    adjusted = y - c @ coefficients
    if y.size < 2:
        reduction = math.nan
    else:
        before, after = float(np.var(y, ddof=1)), float(np.var(adjusted, ddof=1))
        reduction = before / after if after > 0 else (1.0 if before == 0 else math.inf)
    return ControlVariateFit(adjusted=adjusted, coefficients=coefficients, variance_reduction=reduction)


def compare(
    values: Mapping[str, ArrayLike],
    *,
    reference: str | None = None,
    controls: Mapping[str, ArrayLike] | None = None,
) -> pd.DataFrame:
    """Tabulate methods evaluated on the same paths, in order, optionally against a ``reference``.

    Args:
        values: method name -> 1-D per-path values, all on the same paths.
        controls: method name -> mean-zero control variates of its values; a paired difference
            uses both methods'. Adds ``variance_reduction`` columns (1 where none are given).

    Returns:
        Indexed by method: ``n``, ``mean``, ``stderr``, ``ci95_low``, ``ci95_high``; with a
        reference also ``ratio_to_reference`` (NaN for a zero reference), and ``diff_mean`` and
        ``diff_stderr`` of the paired per-path differences.

    Raises:
        ValueError: no methods, lengths differ, bad samples, an unknown reference or
            controls for an unknown method.
    """
    controls = dict(controls or {})
    if not values:
        raise ValueError("values: no methods to compare")
    arrays = {name: _as_samples(v, name) for name, v in values.items()}
    lengths = {name: a.size for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"values: methods must be evaluated on common paths, got lengths {lengths}")
    if reference is not None and reference not in arrays:
        raise ValueError(f"reference: {reference!r} is not one of {list(arrays)}")
    unknown = set(controls) - set(arrays)
    if unknown:
        raise ValueError(f"controls: {sorted(unknown)} are not among the methods {list(arrays)}")

    def with_controls(x: np.ndarray, names: tuple[str, ...]) -> tuple[np.ndarray, float]:
        given = [np.asarray(controls[n], np.float64).reshape(x.size, -1) for n in names if n in controls]
        if not given:
            return x, 1.0
        fit = control_variate(x, np.hstack(given))
        return fit.adjusted, fit.variance_reduction

    rows = []
    for name, raw in arrays.items():
        x, reduction = with_controls(raw, (name,))
        est = ValueEstimate.from_samples(x)
        row = {
            "method": name,
            "n": est.n,
            "mean": est.mean,
            "stderr": est.stderr,
            "ci95_low": est.ci95_low,
            "ci95_high": est.ci95_high,
        }
        if controls:
            row["variance_reduction"] = reduction
        if reference is not None:
            ref, _ = with_controls(arrays[reference], (reference,))
            ref_mean = float(np.mean(ref))
            diff, diff_reduction = with_controls(raw - arrays[reference], tuple(dict.fromkeys((name, reference))))
            if name == reference:
                diff, diff_reduction = np.zeros_like(raw), 1.0
            row["ratio_to_reference"] = est.mean / ref_mean if ref_mean != 0 else math.nan
            row["diff_mean"] = float(np.mean(diff))
            row["diff_stderr"] = _stderr(diff)
            if controls:
                row["diff_variance_reduction"] = diff_reduction
        rows.append(row)
    return pd.DataFrame(rows).set_index("method")
