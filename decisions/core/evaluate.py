"""Monte Carlo value estimates and paired comparisons on common random paths.

Every policy, baseline and exact optimum is evaluated on the same scenario
paths, so differences between methods are estimated *paired*: the standard
error of ``mean(a - b)`` uses the per-path differences, which is much smaller
than combining the two marginal standard errors when the methods are
correlated through the shared paths. Confidence intervals use the normal
approximation (``mean +- 1.96 stderr``), which is what Monte Carlo sample
sizes (hundreds of paths or more) justify.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

Z95: float = NormalDist().inv_cdf(0.975)
"""Two-sided 95% normal quantile (1.959964...)."""


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

    mean: float
    """Sample mean over paths."""
    stderr: float
    """Standard error of the mean, ``std(ddof=1) / sqrt(n)`` (NaN when ``n == 1``)."""
    n: int
    """Number of paths."""
    ci95_low: float
    """``mean - 1.96 stderr``."""
    ci95_high: float
    """``mean + 1.96 stderr``."""

    @classmethod
    def from_samples(cls, samples: ArrayLike) -> ValueEstimate:
        """Estimate from per-path values.

        Args:
            samples: 1-D array of per-path values (finite).

        Returns:
            The estimate.

        Raises:
            ValueError: empty, not 1-D, or holding NaN/inf values.
        """
        x = _as_samples(samples)
        mean, se = float(np.mean(x)), _stderr(x)
        return cls(mean=mean, stderr=se, n=int(x.size), ci95_low=mean - Z95 * se, ci95_high=mean + Z95 * se)

    def __str__(self) -> str:
        return f"{self.mean:.6g} ± {Z95 * self.stderr:.2g} (95% CI, n={self.n})"


def monte_carlo_value(samples: ArrayLike) -> ValueEstimate:
    """Mean, standard error and 95% CI of per-path values.

    Args:
        samples: 1-D array of per-path values.

    Returns:
        ``ValueEstimate.from_samples(samples)``.
    """
    return ValueEstimate.from_samples(samples)


def compare(values: Mapping[str, ArrayLike], *, reference: str | None = None) -> pd.DataFrame:
    """Tabulate methods evaluated on common paths, optionally against a reference.

    Args:
        values: method name -> 1-D per-path values; all on the same paths, in the
            same order (so all of the same length).
        reference: name of the method to compare against (a baseline or the exact
            optimum), or None.

    Returns:
        A DataFrame indexed by method (in the given order) with columns ``n``,
        ``mean``, ``stderr``, ``ci95_low``, ``ci95_high``; with a reference also
        ``ratio_to_reference`` (``mean / reference mean``, NaN if that is 0), ``diff_mean``
        (mean of the per-path differences ``method - reference``) and
        ``diff_stderr`` (standard error of those paired differences).

    Raises:
        ValueError: no methods, lengths differ, bad samples, or an unknown reference.
    """
    if not values:
        raise ValueError("values: no methods to compare")
    arrays = {name: _as_samples(v, name) for name, v in values.items()}
    lengths = {name: a.size for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"values: methods must be evaluated on common paths, got lengths {lengths}")
    if reference is not None and reference not in arrays:
        raise ValueError(f"reference: {reference!r} is not one of {list(arrays)}")
    rows = []
    for name, x in arrays.items():
        est = ValueEstimate.from_samples(x)
        row = {
            "method": name,
            "n": est.n,
            "mean": est.mean,
            "stderr": est.stderr,
            "ci95_low": est.ci95_low,
            "ci95_high": est.ci95_high,
        }
        if reference is not None:
            ref = arrays[reference]
            ref_mean = float(np.mean(ref))
            diff = x - ref
            row["ratio_to_reference"] = est.mean / ref_mean if ref_mean != 0 else math.nan
            row["diff_mean"] = float(np.mean(diff))
            row["diff_stderr"] = _stderr(diff)
        rows.append(row)
    return pd.DataFrame(rows).set_index("method")
