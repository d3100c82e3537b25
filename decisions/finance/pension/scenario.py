"""Validated user input for a pension asset-liability problem."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from pydantic import Field, ValidationInfo, field_validator

from decisions.core.numbers import COUNT_MAX, MONEY_MAX, Float32
from decisions.core.settings import Settings, finite_items, finite_numbers, one_per

Finite = Annotated[float, Field(allow_inf_nan=False), Float32()]
"""A finite number that stays finite in float32 (its field sets the range)."""

YEARS_MAX = 200.0
"""Longest tenor, bond duration or Nelson-Siegel decay, in years."""
SPEED_MAX = 100.0
"""Largest mean-reversion speed of a curve factor, per year."""
FACTOR_VOLATILITY_MAX = 1.0
"""Largest volatility of a curve factor, per sqrt(year) (100 percentage points of rate)."""

Years = Annotated[float, Float32(YEARS_MAX)]
Money = Annotated[float, Float32(MONEY_MAX)]
"""An amount of money: finite in float32, at most ``MONEY_MAX`` (1e12)."""

STANDARD_TENORS: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0)
"""The usual 11 key tenors (years): 3m, 6m, 1y, 2y, 3y, 5y, 7y, 10y, 15y, 20y, 30y."""

STANDARD_RATES: tuple[float, ...] = (
    0.0215, 0.0228, 0.0250, 0.0282, 0.0302, 0.0323, 0.0333, 0.0339, 0.0343, 0.0345, 0.0347,
)
"""Default zero rates at ``STANDARD_TENORS``: a Nelson-Siegel shape (level 3.5%, slope -1.5%,
curvature 1%, decay 2 years), rounded to a basis point."""

N_FACTORS = 3
"""Curve factors: level, slope, curvature."""


class YieldCurve(Settings):
    """The initial zero curve (key rates) and its factor dynamics."""

    tenors: Annotated[list[Years], finite_items("tenor[{i}]")] = Field(
        default_factory=lambda: list(STANDARD_TENORS), min_length=2, description="Key tenors in years, increasing."
    )
    rates: Annotated[list[Finite], finite_items("entry[{i}]")] = Field(
        default_factory=lambda: list(STANDARD_RATES), min_length=2, description="Zero rates at the key tenors."
    )
    ns_decay: Years = Field(2.0, gt=0, allow_inf_nan=False, description="Nelson-Siegel decay (years).")
    speeds: Annotated[list[Annotated[float, Float32(SPEED_MAX)]], finite_items("entry[{i}]")] = Field(
        default_factory=lambda: [0.10, 0.30, 0.60],
        min_length=N_FACTORS,
        max_length=N_FACTORS,
        description="Mean-reversion speeds of level, slope, curvature (per year, > 0).",
    )
    volatilities: Annotated[
        list[Annotated[float, Float32(FACTOR_VOLATILITY_MAX)]], finite_items("entry[{i}]")
    ] = Field(
        default_factory=lambda: [0.010, 0.012, 0.015],
        min_length=N_FACTORS,
        max_length=N_FACTORS,
        description="Factor volatilities (per sqrt(year), >= 0).",
    )

    @field_validator("tenors")
    @classmethod
    def _increasing(cls, value: list[float]) -> list[float]:
        if value[0] <= 0:
            raise ValueError(f"tenors must be positive, got {value[0]}")
        for i, (a, b) in enumerate(zip(value, value[1:], strict=False)):
            if b <= a:
                raise ValueError(f"tenors must be strictly increasing (tenor {i + 1}: {b} after {a})")
        return value

    @field_validator("rates")
    @classmethod
    def _rates(cls, value: list[float], info: ValidationInfo) -> list[float]:
        one_per(value, info.data.get("tenors"), "rate per tenor")
        if any(not -0.2 < r < 1.0 for r in value):
            raise ValueError("zero rates must lie in (-0.2, 1.0)")
        return value

    @field_validator("speeds")
    @classmethod
    def _speeds(cls, value: list[float]) -> list[float]:
        if any(v <= 0 for v in value):
            raise ValueError("mean-reversion speeds must be positive")
        return value

    @field_validator("volatilities")
    @classmethod
    def _vols(cls, value: list[float]) -> list[float]:
        if any(v < 0 for v in value):
            raise ValueError("volatilities must be >= 0")
        return value


class RiskyAsset(Settings):
    """A lognormal asset class (equities, real estate)."""

    name: str = Field(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_]+$", description="Label.")
    expected_return: float = Field(ge=-0.5, le=1.0, allow_inf_nan=False, description="mu, annual, continuous.")
    volatility: float = Field(ge=0, le=2.0, allow_inf_nan=False, description="Annual volatility.")


def _default_risky() -> list[RiskyAsset]:
    return [
        RiskyAsset(name="equities", expected_return=0.065, volatility=0.16),
        RiskyAsset(name="real_estate", expected_return=0.05, volatility=0.11),
    ]


def default_correlation(n_risky: int) -> list[list[float]]:
    """Default correlation of the shocks ``[level, slope, curvature, risky_1 .. risky_R]``.

    Args:
        n_risky: number of risky assets R.

    Returns:
        The ``(3 + R) x (3 + R)`` matrix as nested lists.
    """
    s = N_FACTORS + n_risky
    m = np.eye(s)
    m[0, 1] = m[1, 0] = -0.3
    m[1, 2] = m[2, 1] = 0.2
    for i in range(N_FACTORS, s):
        m[0, i] = m[i, 0] = -0.1
        for j in range(i + 1, s):
            m[i, j] = m[j, i] = 0.5
    return m.tolist()


class Assets(Settings):
    """The investable universe: cash, constant-duration zero-coupon bond buckets, lognormal assets."""

    bond_durations: list[Years] = Field(
        default_factory=lambda: [2.0, 5.0, 10.0, 20.0],
        max_length=20,
        description="Durations (years) of the bond buckets, increasing, each > 1/12.",
    )
    risky: list[RiskyAsset] = Field(default_factory=_default_risky, max_length=20)
    correlation: list[list[Finite]] | None = Field(
        None, description="Correlation matrix of [level, slope, curvature, risky...]; default: default_correlation."
    )

    @field_validator("bond_durations")
    @classmethod
    def _durations(cls, value: list[float]) -> list[float]:
        finite_numbers(value, "duration[{i}]")
        if any(d <= 1.0 / 12.0 for d in value):
            raise ValueError("bond durations must exceed one month (1/12 year)")
        if any(b <= a for a, b in zip(value, value[1:], strict=False)):
            raise ValueError("bond durations must be strictly increasing")
        return value

    @field_validator("risky")
    @classmethod
    def _unique(cls, value: list[RiskyAsset]) -> list[RiskyAsset]:
        names = [a.name for a in value]
        if len(set(names)) != len(names) or {"cash"} & set(names) or any(n.startswith("bond_") for n in names):
            raise ValueError("risky asset names must be unique and not 'cash' or 'bond_*'")
        return value

    @field_validator("correlation")
    @classmethod
    def _correlation(cls, value: list[list[float]] | None, info: ValidationInfo) -> list[list[float]] | None:
        if value is None:
            return None
        risky = info.data.get("risky")
        size = N_FACTORS + (len(risky) if risky is not None else 0)
        if len(value) != size or any(len(row) != size for row in value):
            raise ValueError(f"must be {size} x {size} (level, slope, curvature and {size - N_FACTORS} risky assets)")
        for row in value:
            finite_numbers(row, "entry[{i}]")
        m = np.asarray(value, dtype=float)
        if not np.allclose(m, m.T, atol=1e-9):
            raise ValueError("must be symmetric")
        if not np.allclose(np.diag(m), 1.0, atol=1e-9):
            raise ValueError("diagonal entries must be 1")
        if np.any(np.abs(m) > 1.0):
            raise ValueError("entries must lie in [-1, 1]")
        smallest = float(np.linalg.eigvalsh(m).min())
        if smallest <= 1e-8:
            raise ValueError(f"is not positive definite (smallest eigenvalue {smallest:.3g})")
        return value

    @property
    def correlation_matrix(self) -> np.ndarray:
        """The shock correlation matrix (the default when none was given)."""
        value = self.correlation if self.correlation is not None else default_correlation(len(self.risky))
        return np.asarray(value, dtype=float)

    @property
    def names(self) -> list[str]:
        """Asset labels in portfolio order: cash, bond buckets, risky assets."""
        return ["cash"] + [f"bond_{d:g}y" for d in self.bond_durations] + [a.name for a in self.risky]


class GompertzMakeham(Settings):
    """Force of mortality ``mu(x) = scale * (a + b c^x)`` at age ``x``."""

    a: float = Field(0.00022, ge=0, le=0.1, allow_inf_nan=False, description="Makeham constant.")
    b: float = Field(2.7e-6, gt=0, le=0.1, allow_inf_nan=False, description="Gompertz level.")
    c: float = Field(1.124, gt=1.0, le=1.5, allow_inf_nan=False, description="Gompertz growth per year of age.")
    scale: float = Field(1.0, gt=0, le=5.0, allow_inf_nan=False, description="Mortality scaling factor.")


class Cohort(Settings):
    """A group of identical members. Actives (age below retirement) carry salary and past service;
    pensioners (age at or above retirement) carry their current annual pension."""

    age: float = Field(ge=16, le=110, allow_inf_nan=False, description="Age today (years).")
    count: Annotated[float, Float32(COUNT_MAX)] = Field(gt=0, allow_inf_nan=False, description="Number of members.")
    salary: Money = Field(0.0, ge=0, allow_inf_nan=False, description="Annual salary today (actives).")
    service: float = Field(0.0, ge=0, le=70, allow_inf_nan=False, description="Past service years (actives).")
    pension: Money = Field(0.0, ge=0, allow_inf_nan=False, description="Annual pension today (pensioners).")


def default_cohorts() -> list[Cohort]:
    """A stylised scheme: actives aged 25-60 (100 each), pensioners aged 65-90 (fewer with age)."""
    actives = [
        Cohort(age=age, count=100.0, salary=round(35.0 * 1.02 ** (age - 25), 2), service=float(age - 25))
        for age in range(25, 65, 5)
    ]
    pensioners = [
        Cohort(age=age, count=n, pension=p)
        for age, n, p in zip(range(65, 95, 5), (90, 80, 65, 45, 25, 10), (40, 36, 33, 30, 27, 25), strict=True)
    ]
    return actives + pensioners


class Population(Settings):
    """Members and the benefit rules (a final-salary defined-benefit scheme)."""

    retirement_age: float = Field(65.0, ge=40, le=80, allow_inf_nan=False, description="Normal retirement age.")
    cohorts: list[Cohort] = Field(default_factory=default_cohorts, min_length=1, max_length=2000)
    accrual_rate: float = Field(1.0 / 60.0, gt=0, le=0.1, allow_inf_nan=False, description="Pension per service year.")
    salary_growth: float = Field(0.025, ge=-0.1, le=0.2, allow_inf_nan=False, description="Annual, continuous.")
    indexation: float = Field(0.015, ge=-0.1, le=0.2, allow_inf_nan=False, description="Annual, continuous.")
    mortality: GompertzMakeham = Field(default_factory=GompertzMakeham)

    @field_validator("cohorts")
    @classmethod
    def _has_benefits(cls, value: list[Cohort], info: ValidationInfo) -> list[Cohort]:
        retirement = info.data.get("retirement_age")
        if retirement is None:
            return value
        for i, c in enumerate(value):
            if c.age < retirement and c.salary <= 0:
                raise ValueError(f"cohort {i} (age {c.age:g}) is active and needs a salary > 0")
            if c.age >= retirement and c.pension <= 0:
                raise ValueError(f"cohort {i} (age {c.age:g}) is retired and needs a pension > 0")
        return value


class Funding(Settings):
    """Initial assets, the sponsor's contribution bounds and the objective's weights."""

    initial_assets: Money | None = Field(
        None, gt=0, allow_inf_nan=False, description="Assets today; default initial_funding_ratio x L_0."
    )
    initial_funding_ratio: float = Field(
        1.0, gt=0, le=5.0, allow_inf_nan=False, description="Used when initial_assets is not given."
    )
    contribution_min: float = Field(0.0, ge=0, le=1.0, allow_inf_nan=False, description="Min rate x payroll.")
    contribution_max: float = Field(0.30, ge=0, le=1.0, allow_inf_nan=False, description="Max rate x payroll.")
    floor: float = Field(0.9, gt=0, le=3.0, allow_inf_nan=False, description="Funding-ratio floor.")
    penalty_weight: float = Field(2.0, ge=0, le=1e6, allow_inf_nan=False, description="Weight of the shortfall.")
    contribution_cost: float = Field(
        1.2, ge=0, le=100.0, allow_inf_nan=False, description="Sponsor cost per unit contributed."
    )
    discount_rate: float = Field(
        0.06, ge=-0.1, le=0.5, allow_inf_nan=False, description="Sponsor's discount rate (annual, continuous)."
    )

    @field_validator("contribution_max")
    @classmethod
    def _above_min(cls, value: float, info: ValidationInfo) -> float:
        low = info.data.get("contribution_min")
        if low is not None and value < low:
            raise ValueError(f"must be >= contribution_min ({low})")
        return value


class Scenario(Settings):
    """A complete pension ALM problem: horizon, curve, assets, members, funding."""

    section = "scenario"

    horizon_years: int = Field(20, gt=0, le=60, description="Simulation horizon in years (monthly steps).")
    curve: YieldCurve = Field(default_factory=YieldCurve)
    assets: Assets = Field(default_factory=Assets)
    population: Population = Field(default_factory=Population)
    funding: Funding = Field(default_factory=Funding)
    liability_bucket_months: int = Field(
        12, ge=1, le=12, description="Months per discounting bucket of the simulated liability (1 = exact)."
    )

    @field_validator("horizon_years", mode="before")
    @classmethod
    def _integer(cls, value: object) -> object:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value

    @property
    def months(self) -> int:
        """Number of monthly steps."""
        return 12 * self.horizon_years
