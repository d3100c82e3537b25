"""``Settings``: the base of every validated table of user input (scenarios, method settings).

User input is validated once, at the edge (TOML, CLI, app form, API), into frozen pydantic
models that reject unknown keys; everything below trusts it. A model subclasses ``Settings``
for that configuration and for ``parse``, which reports the first problem as a one-line
``InputError`` naming the field under the model's ``section`` of a job spec.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable
from typing import ClassVar, Self

from pydantic import BaseModel, ConfigDict

from decisions.errors import InputError, validate_input


class Settings(BaseModel):
    """A validated, immutable table of user input: an unknown key is an error, not ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    section: ClassVar[str] = ""
    """Name of the model's table in a job spec (the prefix of error fields; empty: none)."""

    @classmethod
    def parse(cls, data: object, *, prefix: str | None = None) -> Self:
        """Validate a mapping (TOML table, JSON, form), raising a one-line ``InputError`` naming the field.

        Args:
            data: the user's mapping.
            prefix: dotted path of ``data`` in the user's input (default: the model's ``section``).

        Returns:
            The validated model.
        """
        return validate_input(cls, data, prefix=cls.section if prefix is None else prefix)


def refuse_unused(
    model: BaseModel,
    fields: Iterable[str] | None = None,
    *,
    prefix: str,
    problem: str,
    given: Collection[str] | None = None,
) -> None:
    """Refuse input the run would ignore: raise for the first of ``fields`` the user gave.

    A job's ``prepare`` calls it for the settings of a stage that does not run (or a field that
    another one overrides), so a setting is never accepted and then silently ignored. Only
    fields given explicitly count, so defaults never trip it.

    Args:
        model: the validated table.
        fields: the fields the run does not use, in the order to report them (default: all of
            the model's).
        prefix: the table's dotted path in the spec (``"planner"``, ``"scenario.facility"``).
        problem: the error's message, saying when the field is used
            (``"is used only with planner.train_problems > 0"``).
        given: the fields the user gave (default: the model's ``model_fields_set``); for a
            table that ``prepare`` filled in itself, the keys of the user's table.

    Raises:
        InputError: ``"<prefix>.<field>: <problem>"`` for the first such field.
    """
    given = model.model_fields_set if given is None else given
    for name in type(model).model_fields if fields is None else fields:
        if name in given:
            raise InputError(f"{prefix}.{name}" if prefix else name, problem)


def finite_numbers(value: object, where: str) -> object:
    """Check a list of numbers before pydantic coerces it (a ``mode="before"`` field validator's body).

    Every item must be a real number (not a bool, not text) and finite.

    Args:
        value: the raw input; anything but a list or tuple is left to the field's own validation.
        where: how an error names an item: a format string of its index ``i``
            (``"day {i}"``, ``"tenor[{i}]"``).

    Returns:
        ``value``, unchanged.

    Raises:
        ValueError: naming the first bad item.
    """
    if isinstance(value, list | tuple):
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, int | float):
                raise ValueError(f"{where.format(i=i)}: {v!r} is not a number")
            if not math.isfinite(v):
                raise ValueError(f"{where.format(i=i)}: {v} is not a finite number")
    return value
