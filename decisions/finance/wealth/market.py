"""Capital market and the closed-form mean-variance efficient frontier (short sales allowed)."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from decisions.core.numbers import Float32
from decisions.core.settings import Settings

MOMENT_MAX = 10.0
"""Largest magnitude of an annual mean return or of a covariance entry (a volatility of 316%)."""

Moment = Annotated[float, Field(allow_inf_nan=False), Float32(MOMENT_MAX)]
"""A fund's annual mean return or a covariance entry: finite in float32, at most ``MOMENT_MAX``."""

DEFAULT_MEANS: tuple[float, ...] = (0.0493, 0.0770, 0.0886)
"""Annual mean returns of the three default funds (Das-Ostrov-Radhakrishnan-Srivastav 2020)."""

DEFAULT_COVARIANCE: tuple[tuple[float, ...], ...] = (
    (0.0017, -0.0017, -0.0021),
    (-0.0017, 0.0396, 0.0309),
    (-0.0021, 0.0309, 0.0392),
)
"""Annual covariance of the three default funds."""


class Market(Settings):
    """Fund means, their covariance and the number of frontier portfolios to choose from."""

    means: list[Moment] = Field(default_factory=lambda: list(DEFAULT_MEANS), min_length=1)
    covariance: list[list[Moment]] = Field(default_factory=lambda: [list(r) for r in DEFAULT_COVARIANCE])
    n_portfolios: int = Field(default=15, ge=1, le=1000)

    @field_validator("covariance")
    @classmethod
    def _positive_definite(cls, value: list[list[float]], info: ValidationInfo) -> list[list[float]]:
        means = info.data.get("means")
        n = len(means) if means is not None else len(value)
        if len(value) != n or any(len(row) != n for row in value):
            raise ValueError(f"must be a {n} x {n} matrix (one row and column per fund)")
        cov = np.asarray(value, dtype=float)
        if not np.allclose(cov, cov.T, rtol=0.0, atol=1e-12):
            raise ValueError("must be symmetric")
        try:
            np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            raise ValueError("must be positive definite") from None
        return value

    def frontier(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``n_portfolios`` efficient portfolios, equally spaced in mean.

        Returns:
            ``(mu, sigma)``, each of shape ``(n_portfolios,)``: means from the minimum-variance
            mean ``B / A`` up to the largest fund mean, and their frontier volatilities.
        """
        return efficient_frontier(np.asarray(self.means), np.asarray(self.covariance), self.n_portfolios)


def frontier_coefficients(means: np.ndarray, covariance: np.ndarray) -> tuple[float, float, float, float]:
    """Merton's ``(A, B, C, D)`` for the given means and covariance."""
    ones = np.ones_like(means)
    inv_ones = np.linalg.solve(covariance, ones)
    inv_m = np.linalg.solve(covariance, means)
    a = float(ones @ inv_ones)
    b = float(ones @ inv_m)
    c = float(means @ inv_m)
    return a, b, c, a * c - b * b


def frontier_variance(mu: np.ndarray | float, means: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """Frontier variance ``(A mu^2 - 2 B mu + C) / D`` at mean(s) ``mu``."""
    a, b, c, d = frontier_coefficients(means, covariance)
    mu = np.asarray(mu, dtype=float)
    if d <= 1e-15 * max(a * c, 1e-300):  # all funds have the same mean: only the min-variance point
        return np.full_like(mu, 1.0 / a)
    return (a * mu**2 - 2.0 * b * mu + c) / d


def efficient_frontier(
    means: np.ndarray, covariance: np.ndarray, n_portfolios: int
) -> tuple[np.ndarray, np.ndarray]:
    """Means and volatilities of ``n_portfolios`` efficient portfolios.

    Args:
        means: fund mean returns, shape ``(n,)``.
        covariance: fund covariance, shape ``(n, n)``, positive definite.
        n_portfolios: how many portfolios; one gives the global minimum-variance portfolio.

    Returns:
        ``(mu, sigma)`` with means equally spaced from ``B / A`` to ``max(means)``.
    """
    a, b, _, _ = frontier_coefficients(means, covariance)
    mu_lo = b / a
    mu_hi = max(float(np.max(means)), mu_lo)
    mu = np.linspace(mu_lo, mu_hi, n_portfolios)
    var = np.maximum(frontier_variance(mu, means, covariance), 1.0 / a)
    return mu, np.sqrt(var)
