"""Numbers from users, checked in the precision the simulators compute in (float32).

A job spec is validated in float64 (Python floats), but the JAX simulators cast every input
to float32, whose largest finite value is about 3.4e38: ``1e308`` passes a float64 finiteness
check and becomes ``inf`` in the simulator (and NaN in an LP built from it), and ``1e20``
stays finite but makes every result meaningless. So a numeric input is checked *after* the
cast: it must be finite in float32, lie within a magnitude limit that makes sense for the
field, and not round to zero unless it is zero.

``Float32`` is the one reusable check, used as ``Annotated`` metadata on a pydantic field
(or on the items of a list field)::

    Volume = Annotated[float, Float32(VOLUME_MAX)]

    class Facility(Settings):
        max_inventory: Volume = Field(1000.0, gt=0, description="Working capacity.")

Its error is a plain ``ValueError`` that pydantic reports at the field, so ``Settings.parse``
raises a one-line ``InputError`` naming it (``scenario.facility.max_inventory: 1e+20 is out
of range (magnitude at most 1e+09)``). ``float32_problem`` is the same check for code that
reads numbers itself (CSV cells).

The magnitude limits below are generous but physical; a domain picks the one that fits a field
or a tighter one of its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

FLOAT32_MAX = float(np.finfo(np.float32).max)
"""Largest finite float32 (about 3.4e38): the default limit, finiteness after the cast only."""

VOLUME_MAX = 1e9
"""Volumes and rates of flow (MWh, units per day, kWh, kW)."""

PRICE_MAX = 1e6
"""Prices and costs per unit (currency per MWh, $/kWh, $/kg); a price's magnitude."""

MONEY_MAX = 1e12
"""Amounts of money (wealth, assets, salaries, pensions, cash flows)."""

COUNT_MAX = 1e9
"""Counts of people or things given as real numbers (members of a cohort)."""

UTILITY_MAX = 1e9
"""Utilities (scores in the user's own units)."""

PENALTY_MAX = 1e6
"""Weights of penalty terms in an objective."""

TEMPERATURE_MAX = 1e3
"""Annealing temperatures of smoothed surrogates (dimensionless)."""

INT32_MAX = 2**31 - 1
"""Upper bound of integer settings without a natural one (seeds, step counts)."""


def float32_problem(value: float, max_abs: float = FLOAT32_MAX) -> str | None:
    """What is wrong with a number once it is cast to float32, if anything.

    Args:
        value: the number (a Python or numpy float or int).
        max_abs: largest magnitude allowed (at most ``FLOAT32_MAX`` matters: beyond it
            the cast overflows to ``inf``).

    Returns:
        ``None`` when the value is fine, else the problem as a phrase starting with the value:
        not finite, out of range (the magnitude limit or float32's), or so small that it
        rounds to 0 in float32.
    """
    value = float(value)
    if not math.isfinite(value):
        return f"{value} is not a finite number"
    limit = min(max_abs, FLOAT32_MAX)
    with np.errstate(over="ignore", under="ignore"):
        single = float(np.float32(value))
    if abs(value) > limit or not math.isfinite(single):
        return f"{value:g} is out of range (magnitude at most {limit:.3g})"
    if value != 0.0 and single == 0.0:
        return f"{value:g} is too small: it rounds to 0 in float32"
    return None


def check_float32(value: float, max_abs: float = FLOAT32_MAX) -> float:
    """Return ``value`` unchanged when ``float32_problem`` finds nothing wrong with it.

    Args:
        value: the number.
        max_abs: largest magnitude allowed.

    Returns:
        ``value``.

    Raises:
        ValueError: the problem (see ``float32_problem``).
    """
    problem = float32_problem(value, max_abs)
    if problem is not None:
        raise ValueError(problem)
    return value


@dataclass(frozen=True)
class Float32:
    """``Annotated`` metadata: the field's float must survive the cast to float32 within ``max_abs``.

    Runs after the field's own parsing and constraints (``gt``, ``le``, ...), so a field keeps
    its bounds and gains finiteness in float32, the magnitude limit and the underflow check.
    NaN and infinities are refused too, whatever ``allow_inf_nan`` says.
    """

    max_abs: float = FLOAT32_MAX
    """Largest magnitude allowed."""

    def __post_init__(self) -> None:
        if not self.max_abs > 0:
            raise ValueError(f"max_abs: must be positive, got {self.max_abs!r}")

    def check(self, value: float) -> float:
        """The validator: ``check_float32(value, self.max_abs)``."""
        return check_float32(value, self.max_abs)

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        """Wrap the field's schema with ``check`` (an after validator)."""
        return core_schema.no_info_after_validator_function(self.check, handler(source))
