"""Numbers from users, checked in the precision the simulators compute in (float32): finite after
the cast, within a magnitude limit, and not rounding to zero. ``Float32`` is the check as
pydantic ``Annotated`` metadata (``Annotated[float, Float32(VOLUME_MAX)]``), ``float32_problem``
the same for code reading numbers itself. Why: ``docs/notes/core.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

# Largest finite float32 (about 3.4e38): the default limit, finiteness after the cast only.
FLOAT32_MAX = float(np.finfo(np.float32).max)

# Volumes and rates of flow (MWh, units per day, kWh, kW).
VOLUME_MAX = 1e9

# Prices and costs per unit (currency per MWh, $/kWh, $/kg); a price's magnitude.
PRICE_MAX = 1e6

# Amounts of money (wealth, assets, salaries, pensions, cash flows).
MONEY_MAX = 1e12

# Counts of people or things given as real numbers (members of a cohort).
COUNT_MAX = 1e9

# Utilities (scores in the user's own units).
UTILITY_MAX = 1e9

# Weights of penalty terms in an objective.
PENALTY_MAX = 1e6

# Annealing temperatures of smoothed surrogates (dimensionless).
TEMPERATURE_MAX = 1e3

# Upper bound of integer settings without a natural one (seeds, step counts).
INT32_MAX = 2**31 - 1


def float32_problem(value: float, max_abs: float = FLOAT32_MAX) -> str | None:
    """What is wrong with a number once cast to float32, as a phrase starting with the value (not
    finite, beyond ``max_abs`` or float32's range, or rounding to 0), or None."""
    value = float(value)
    if not math.isfinite(value):
        return f"{value} is not a finite number"
    limit = min(max_abs, FLOAT32_MAX)
    if abs(value) > limit:
        return f"{value:g} is out of range (magnitude at most {limit:.3g})"
    if value != 0.0 and abs(value) < NEAR_FLOAT32_ZERO:
        with np.errstate(under="ignore"):
            if float(np.float32(value)) == 0.0:
                return f"{value:g} is too small: it rounds to 0 in float32"
    return None


NEAR_FLOAT32_ZERO = 1e-44
"""Below this magnitude a number may round to 0 in float32 (its smallest subnormal is about 1.4e-45)."""


def plainly_float32(value: float, limit: float = FLOAT32_MAX) -> bool:
    """Whether the float ``value`` is fine for ``float32_problem(value, limit)`` at a glance: 0, or a
    magnitude from ``NEAR_FLOAT32_ZERO`` up to ``limit``. False (NaN, beyond, tiny) leaves it to the full check."""
    return value == 0.0 or NEAR_FLOAT32_ZERO <= abs(value) <= limit


def finite_floats(values: Sequence[object]) -> bool:
    """Whether every item of ``values`` is a float (not a subclass, an int or a bool) and finite, all at
    once: their sum is finite. False (a sum beyond float64 included) leaves each to the full check."""
    return tuple(map(type, values)).count(float) == len(values) and math.isfinite(sum(values))  # type: ignore[arg-type]


def plainly_float32s(values: Sequence[float], limit: float = FLOAT32_MAX) -> bool:
    """Whether ``plainly_float32(value, limit)`` holds for every float of ``values``, all at once: a finite
    sum rules out NaN and infinities, then where all share a sign the least and greatest bound every
    magnitude (zeros or both signs: one by one). False leaves each to the full check."""
    if not values:
        return True
    if not math.isfinite(sum(values)):  # NaN or an infinity (or a sum beyond float64: the full check finds none)
        return False
    low, high = min(values), max(values)
    if low > 0.0:
        return NEAR_FLOAT32_ZERO <= low and high <= limit
    if high < 0.0:
        return -limit <= low and high <= -NEAR_FLOAT32_ZERO
    near = NEAR_FLOAT32_ZERO  # plainly_float32 written out: a call per float would cost more than the test
    return all([near <= abs(value) <= limit or value == 0.0 for value in values])


def check_float32(value: float, max_abs: float = FLOAT32_MAX) -> float:
    """``value`` unchanged; ``ValueError`` with the problem when ``float32_problem`` finds one."""
    problem = float32_problem(value, max_abs)
    if problem is not None:
        raise ValueError(problem)
    return value


@dataclass(frozen=True)
class Float32:
    """``Annotated`` metadata: after the field's own checks, its float must survive the cast to
    float32 within ``max_abs`` (NaN and infinities refused, whatever ``allow_inf_nan`` says)."""

    # Largest magnitude allowed.
    max_abs: float = FLOAT32_MAX

    def __post_init__(self) -> None:
        if not self.max_abs > 0:
            raise ValueError(f"max_abs: must be positive, got {self.max_abs!r}")

    def check(self, value: float) -> float:
        """The validator: ``check_float32(value, self.max_abs)``, a ``plainly_float32`` value passed without it."""
        if plainly_float32(value, min(self.max_abs, FLOAT32_MAX)):
            return value
        return check_float32(value, self.max_abs)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        """Wrap the field's schema with ``check`` (an after validator, its limit worked out once)."""
        return core_schema.no_info_after_validator_function(_float32_check(self.max_abs), handler(source))


def _float32_check(max_abs: float) -> Callable[[float], float]:
    """``Float32(max_abs).check`` with its limit worked out once."""
    limit = min(max_abs, FLOAT32_MAX)

    def check(value: float) -> float:
        if plainly_float32(value, limit):
            return value
        return check_float32(value, max_abs)

    return check


@dataclass(frozen=True)
class Float32Items:
    """``Annotated`` metadata of a list of floats: ``Float32(max_abs)`` of every item in one call (a
    long curve checked at once, not an item at a time); an error names the first bad item by ``where``
    formatted with its index (``"day {i}"``)."""

    # Largest magnitude allowed.
    max_abs: float = FLOAT32_MAX
    # How an error names an item.
    where: str = "item {i}"

    def check(self, values: Sequence[float]) -> Sequence[float]:
        """The validator: ``values`` unchanged; ``ValueError`` naming the first item ``float32_problem`` refuses."""
        if plainly_float32s(values, min(self.max_abs, FLOAT32_MAX)):
            return values
        for i, value in enumerate(values):
            problem = float32_problem(value, self.max_abs)
            if problem is not None:
                raise ValueError(f"{self.where.format(i=i)}: {problem}")
        return values

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        """Wrap the list's schema with ``check`` (after its items' own checks)."""
        return core_schema.no_info_after_validator_function(self.check, handler(source))
