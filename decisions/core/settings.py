"""``Settings``: the base of every validated table of user input, a frozen pydantic model that
rejects unknown keys; ``parse`` reports the first problem as a one-line ``InputError``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sized
from typing import Annotated, Any, ClassVar, Self

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from decisions.core.numbers import finite_floats
from decisions.core.strict_input import StrictInput
from decisions.errors import InputError, validate_input


class Settings(StrictInput):
    """A validated, immutable table of user input: an unknown key is an error, not ignored, and every
    field is read strictly (``decisions.core.strict_input``: no bool or text for a number, finite
    numbers, floats within float32 unless marked ``Float64``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # Name of the model's table in a job spec (the prefix of error fields; empty: none).
    section: ClassVar[str] = ""

    @classmethod
    def parse(cls, data: object, *, prefix: str | None = None) -> Self:
        """Validate a mapping, raising a one-line ``InputError`` naming the field under ``prefix``
        (default: the model's ``section``)."""
        return validate_input(cls, data, prefix=cls.section if prefix is None else prefix)


def refuse_unused(
    model: BaseModel,
    fields: Iterable[str] | None = None,
    *,
    prefix: str,
    problem: str,
    given: Collection[str] | None = None,
) -> None:
    """Refuse input the run would ignore: raise for the first of ``fields`` (default: all) the user
    gave explicitly (``given``, default ``model_fields_set``), so defaults never trip it.

    Raises:
        InputError: ``"<prefix>.<field>: <problem>"`` for the first such field.
    """
    given = model.model_fields_set if given is None else given
    for name in type(model).model_fields if fields is None else fields:
        if name in given:
            raise InputError(f"{prefix}.{name}" if prefix else name, problem)


def finite_numbers(value: object, where: str) -> object:
    """``value`` unchanged once every item of a list or tuple is a finite real number (not a bool or
    text); the body of a ``mode="before"`` validator. ``where`` formats an item's index (``"day {i}"``).

    Raises:
        ValueError: naming the first bad item.
    """
    if isinstance(value, list | tuple):
        if finite_floats(value):
            return value  # every item a finite float: nothing to name
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ValueError(f"{where.format(i=i)}: {v!r} is not a number")
            if not math.isfinite(v):
                raise ValueError(f"{where.format(i=i)}: {v} is not a finite number")
    return value


def finite_items(where: str) -> BeforeValidator:
    """``Annotated`` metadata of a list field: ``finite_numbers(value, where)`` before the field's own
    checks (``where`` formats an item's index, ``"day {i}"``)."""
    return BeforeValidator(lambda value: finite_numbers(value, where))


def one_per(value: Sized | None, others: Sized | None, what: str) -> None:
    """Raise ``ValueError("needs one {what} (n), got m")`` when both are given and ``value`` does not have
    one item per item of ``others`` (``what``: e.g. ``"rate per tenor"``)."""
    if value is not None and others is not None and len(value) != len(others):
        raise ValueError(f"needs one {what} ({len(others)}), got {len(value)}")


def ints_within(low: int, high: int, what: str) -> AfterValidator:
    """A validator of a tuple of integers: each in ``[low, high]``, else ``ValueError`` naming ``what``."""

    def check(values: tuple[int, ...]) -> tuple[int, ...]:
        for value in values:
            if not low <= value <= high:
                raise ValueError(f"each {what} must lie in [{low}, {high}], got {value}")
        return values

    return AfterValidator(check)


def network_widths(max_width: int = 1024) -> Any:
    """The type of a network's hidden-layer widths: 1 to 4 layers, each of 1 to ``max_width`` units."""
    return Annotated[tuple[int, ...], Field(min_length=1, max_length=4), ints_within(1, max_width, "width")]


NetworkWidths = network_widths()
"""Hidden-layer widths of an agent's network: 1 to 4 layers of 1 to 1024 units."""
