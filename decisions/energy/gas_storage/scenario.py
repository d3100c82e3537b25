"""Validated user input for a gas storage problem: facility, forward curve, price model."""

from __future__ import annotations

import math
from datetime import date, timedelta
from enum import StrEnum
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, ValidationError, model_validator

from decisions.core.numbers import PRICE_MAX, VOLUME_MAX, Float32, Float32Items
from decisions.core.settings import Settings, finite_items, finite_numbers
from decisions.errors import InputError

DAYS_PER_YEAR = 365.0

Volume = Annotated[float, Float32(VOLUME_MAX)]
"""An inventory or a rate per day: finite in float32, magnitude at most ``VOLUME_MAX`` (1e9)."""
Price = Annotated[float, Float32(PRICE_MAX)]
"""A price or a cost per unit: finite in float32, magnitude at most ``PRICE_MAX`` (1e6)."""
PriceCurve = Annotated[list[Annotated[float, Field(gt=0, allow_inf_nan=False)]], finite_items("day {i}"),
                       Float32Items(PRICE_MAX, "day {i}")]
"""Daily prices, each positive and a ``Price`` (checked in one call; an error names the day)."""
SPEED_MAX = 1e4
"""Largest mean-reversion speed, per year (a half-life of under an hour with daily steps)."""
VOLATILITY_MAX = 10.0
"""Largest volatility, per sqrt(year) (1000% a year; gas trades at 50-150%)."""
Speed = Annotated[float, Float32(SPEED_MAX)]
Volatility = Annotated[float, Float32(VOLATILITY_MAX)]


class RatchetCurve(Settings):
    """A rate that is piecewise linear in inventory (a ratchet)."""

    inventory: list[Volume] = Field(min_length=2, description="Inventory breakpoints, strictly increasing.")
    rate: list[Volume] = Field(min_length=2, description="Rate per day at each breakpoint, > 0.")

    @model_validator(mode="after")
    def _check(self) -> RatchetCurve:
        if len(self.inventory) != len(self.rate):
            raise ValueError("inventory and rate must have the same length")
        if not all(math.isfinite(v) for v in self.inventory + self.rate):
            raise ValueError("breakpoints and rates must be finite numbers")
        if any(b <= a for a, b in zip(self.inventory, self.inventory[1:], strict=False)):
            raise ValueError("inventory breakpoints must be strictly increasing")
        if any(r <= 0 for r in self.rate):
            raise ValueError("rates must be positive")
        return self


Rate = Annotated[float, Field(gt=0, allow_inf_nan=False), Float32(VOLUME_MAX)] | RatchetCurve


class TerminalRule(StrEnum):
    """What happens to the gas left at expiry."""

    REQUIRED = "required_end_inventory"
    """Inventory must equal ``end_inventory`` at expiry (enforced as a hard constraint)."""
    SPOT_VALUE = "spot_value"
    """Any end inventory is allowed; it is worth inventory x spot on the last day."""


class Facility(Settings):
    """A storage facility (a lease): capacity, rates, costs, start and end conditions."""

    min_inventory: Volume = Field(0.0, ge=0, allow_inf_nan=False, description="Minimum inventory (cushion gas).")
    max_inventory: Volume = Field(1000.0, gt=0, allow_inf_nan=False, description="Working capacity.")
    start_inventory: Volume = Field(0.0, ge=0, allow_inf_nan=False, description="Inventory on day 0.")
    max_injection: Rate = Field(25.0, description="Max injection per day: a number or a ratchet curve.")
    max_withdrawal: Rate = Field(50.0, description="Max withdrawal per day: a number or a ratchet curve.")
    injection_cost: Price = Field(0.10, ge=0, allow_inf_nan=False, description="Cost per unit injected.")
    withdrawal_cost: Price = Field(0.10, ge=0, allow_inf_nan=False, description="Cost per unit withdrawn.")
    terminal: TerminalRule = Field(TerminalRule.REQUIRED, description="Terminal condition at expiry.")
    end_inventory: Volume = Field(0.0, ge=0, allow_inf_nan=False, description="Required end inventory.")
    discount_rate: float = Field(0.03, ge=-0.5, le=1.0, allow_inf_nan=False, description="Annual rate.")

    @model_validator(mode="after")
    def _check(self) -> Facility:
        lo, hi = self.min_inventory, self.max_inventory
        if hi <= lo:
            raise ValueError(f"max_inventory ({hi}) must exceed min_inventory ({lo})")
        if not lo <= self.start_inventory <= hi:
            raise ValueError(f"start_inventory ({self.start_inventory}) must lie in [{lo}, {hi}]")
        if self.terminal is TerminalRule.REQUIRED and not lo <= self.end_inventory <= hi:
            raise ValueError(f"end_inventory ({self.end_inventory}) must lie in [{lo}, {hi}]")
        for name in ("max_injection", "max_withdrawal"):
            rate = getattr(self, name)
            if isinstance(rate, RatchetCurve) and (rate.inventory[0] > lo or rate.inventory[-1] < hi):
                raise ValueError(f"{name}: ratchet breakpoints must cover [{lo}, {hi}]")
        return self

    def rate_knots(self, which: Literal["injection", "withdrawal"]) -> tuple[np.ndarray, np.ndarray]:
        """Breakpoints ``(inventory, rate)`` of a rate; a constant rate becomes two equal knots."""
        rate = self.max_injection if which == "injection" else self.max_withdrawal
        if isinstance(rate, RatchetCurve):
            return np.asarray(rate.inventory, float), np.asarray(rate.rate, float)
        return np.array([self.min_inventory, self.max_inventory]), np.array([rate, rate], float)


class DeterministicPrices(Settings):
    """Spot prices follow the forward curve exactly (the intrinsic problem)."""

    model: Literal["deterministic"] = "deterministic"


class SeasonalOU(Settings):
    """Seasonal one-factor model: ``S_t = F_t exp(X_t - Var(X_t)/2)``, X an OU factor, ``X_0 = 0``."""

    model: Literal["seasonal_ou"] = "seasonal_ou"
    mean_reversion: Speed = Field(20.0, gt=0, allow_inf_nan=False, description="Speed a, per year.")
    volatility: Volatility = Field(1.0, ge=0, allow_inf_nan=False, description="Volatility s, per sqrt(year).")


class ExponentialOU(Settings):
    """Exponential OU spot: ``ln S`` mean-reverts to ``level`` (the forward curve is then model-implied)."""

    model: Literal["exponential_ou"] = "exponential_ou"
    speed: Speed = Field(10.0, gt=0, allow_inf_nan=False, description="Mean-reversion speed, per year.")
    level: Annotated[float, Float32(math.log(PRICE_MAX))] = Field(
        math.log(25.0), allow_inf_nan=False, description="Long-run mean of ln S (|level| <= ln PRICE_MAX)."
    )
    volatility: Volatility = Field(0.8, ge=0, allow_inf_nan=False, description="Volatility of ln S, per sqrt(year).")
    initial: Price = Field(22.0, gt=0, allow_inf_nan=False, description="Spot price on day 0.")

    def forward_curve(self, days: int) -> list[float]:
        """The forward curve the process implies on day 0: ``E[S_t]`` for ``t = 0 .. days - 1``."""
        k, s, x0 = self.speed, self.volatility, math.log(self.initial) - self.level
        curve = []
        for day in range(days):
            years = day / DAYS_PER_YEAR
            variance = s * s * (1.0 - math.exp(-2.0 * k * years)) / (2.0 * k)
            curve.append(math.exp(self.level + math.exp(-k * years) * x0 + 0.5 * variance))
        return curve


PriceModel = Annotated[DeterministicPrices | SeasonalOU | ExponentialOU, Field(discriminator="model")]


def seasonal_forward_curve(
    days: int = 365,
    *,
    start: date = date(2026, 4, 1),
    mean: float = 25.0,
    amplitude: float = 6.0,
    peak_day_of_year: int = 15,
    weekend_discount: float = 0.6,
) -> list[float]:
    """A stylised gas forward curve: annual cosine peaking in winter plus a weekend dip.

    Args:
        start: delivery date of the first price.
        peak_day_of_year: day of year of the seasonal peak (15 = mid January).
        weekend_discount: price reduction on Saturdays and Sundays.

    Returns:
        ``days`` prices, one per delivery day.
    """
    out = []
    for t in range(days):
        day = start + timedelta(days=t)
        phase = 2 * math.pi * (day.timetuple().tm_yday - peak_day_of_year) / DAYS_PER_YEAR
        out.append(mean + amplitude * math.cos(phase) - (weekend_discount if day.weekday() >= 5 else 0.0))
    return out


IMPLIED_CURVE_RTOL = 1e-9
"""How closely a given forward curve must match the one an exponential OU implies."""


class Scenario(Settings):
    """A complete gas storage problem: facility, daily forward curve and price model."""

    section = "scenario"

    facility: Facility = Field(default_factory=Facility)
    forward_curve: PriceCurve = Field(
        default_factory=seasonal_forward_curve, min_length=2, description="Daily forward prices, > 0."
    )
    horizon_days: int | None = Field(
        None, ge=2, le=3_650,
        description="Days of the horizon where the price model implies the curve (exponential OU; default 365).",
    )
    start_date: date = Field(date(2026, 4, 1), description="Delivery date of the first forward price.")
    prices: PriceModel = Field(default_factory=SeasonalOU)

    @model_validator(mode="before")
    @classmethod
    def _implied_curve(cls, data: object) -> object:
        """Under exponential OU, fill in the implied forward curve (or check a given one against it)."""
        if not isinstance(data, dict):
            return data
        prices = data.get("prices")
        model = prices.get("model") if isinstance(prices, dict) else getattr(prices, "model", None)
        if model != "exponential_ou":
            if data.get("horizon_days") is not None:
                raise ValueError(
                    "horizon_days: only with prices.model = 'exponential_ou' (here the forward curve sets the horizon)"
                )
            return data
        try:
            process = prices if isinstance(prices, ExponentialOU) else ExponentialOU.model_validate(prices)
        except ValidationError:
            return data  # the prices' own validation names the problem
        given, days = data.get("forward_curve"), data.get("horizon_days")
        if days is not None and (isinstance(days, bool) or not isinstance(days, int) or not 2 <= days <= 3_650):
            return data  # the field's own validation names the problem
        if given is None:
            return {**data, "forward_curve": process.forward_curve(365 if days is None else int(days))}
        curve = finite_numbers(given, "day {i}")
        if not isinstance(curve, list | tuple):
            return data  # the field's own validation names the problem
        implied = process.forward_curve(len(curve))
        if days is not None and int(days) != len(curve):
            raise ValueError(f"horizon_days: {days} days, but forward_curve has {len(curve)}")
        if any(abs(float(a) - b) > IMPLIED_CURVE_RTOL * b for a, b in zip(curve, implied, strict=True)):
            raise ValueError(
                "forward_curve: with prices.model = 'exponential_ou' the forward curve is the one the "
                "process implies; leave it out and give horizon_days"
            )
        return data

    @model_validator(mode="after")
    def _check_reachable(self) -> Scenario:
        fac = self.facility
        if fac.terminal is TerminalRule.REQUIRED:
            lo, hi = reachable_range(fac, self.horizon)
            if not lo - 1e-9 <= fac.end_inventory <= hi + 1e-9:
                raise ValueError(
                    f"facility.end_inventory: {fac.end_inventory} is unreachable from start_inventory "
                    f"{fac.start_inventory} in {self.horizon} days (reachable range [{lo:.4g}, {hi:.4g}])"
                )
        return self

    @property
    def horizon(self) -> int:
        """Number of daily decisions."""
        return len(self.forward_curve)

    @property
    def dates(self) -> list[date]:
        """Delivery date of each day."""
        return [self.start_date + timedelta(days=t) for t in range(self.horizon)]

    def with_prices(self, prices: DeterministicPrices | SeasonalOU | ExponentialOU) -> Scenario:
        """The same scenario under another price model."""
        return self.model_copy(update={"prices": prices})


def reachable_range(facility: Facility, days: int) -> tuple[float, float]:
    """Lowest and highest inventory reachable after ``days`` days at full withdrawal / injection."""
    inj_x, inj_y = facility.rate_knots("injection")
    wd_x, wd_y = facility.rate_knots("withdrawal")
    low = high = facility.start_inventory
    for _ in range(days):
        high = min(facility.max_inventory, high + float(np.interp(high, inj_x, inj_y)))
        low = max(facility.min_inventory, low - float(np.interp(low, wd_x, wd_y)))
    return low, high


def require_positive_int(name: str, value: int) -> int:
    """Validate a positive integer setting (paths, steps), raising ``InputError`` naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(name, f"must be a positive integer, got {value!r}")
    return value
