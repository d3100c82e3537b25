"""User-facing input errors: one line, naming the field and the problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class InputError(ValueError):
    """Bad user input, reported as ``field: problem`` on one line.

    Raised at the edge (scenario models, CSV/TOML readers, CLI); the CLI turns it
    into exit code 2 with the message and no traceback.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def error_line(exc: BaseException) -> str:
    """Describe an exception on one line.

    Args:
        exc: The exception.

    Returns:
        ``"ExceptionType: message"`` with whitespace collapsed, or just the
        type name when the message is empty.
    """
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def validate_input(model: type[M], data: object, *, prefix: str) -> M:
    """Validate user data into a pydantic model, raising a one-line ``InputError`` naming the field.

    Args:
        model: the pydantic model class.
        data: the mapping to validate (from TOML, JSON or a form).
        prefix: dotted path of ``data`` in the user's input (e.g. ``"scenario"``).

    Returns:
        The validated model.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, prefix=prefix, data=data) from None


def from_validation_error(exc: ValidationError, *, prefix: str = "", data: object = None) -> InputError:
    """Turn a pydantic ``ValidationError`` into an ``InputError`` for its first problem.

    Pydantic puts the member tag of a union (``float``, ``RatchetCurve``,
    ``seasonal_ou``, ...) into error locations; those parts are dropped so the
    field reads as the user wrote it (``scenario.prices.volatility``).

    Args:
        exc: the pydantic error.
        prefix: dotted path to prepend to the field location (e.g. ``"scenario"``).
        data: the mapping that was validated; lets union tags be told from the user's keys.

    Returns:
        An ``InputError`` whose field is the dotted location of the first error.
    """
    errors = sorted(exc.errors(), key=lambda err: err.get("type") in _WRONG_KIND)  # stable: keeps order otherwise
    first = errors[0]
    loc = _user_location(first.get("loc", ()), data)
    field = ".".join(([prefix] if prefix else []) + loc) or (prefix or "input")
    message = first.get("msg", "invalid value").replace("Value error, ", "")
    more = len(exc.errors()) - 1
    if more > 0:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return InputError(field, message)


_WRONG_KIND = {"float_type", "float_parsing", "int_type", "int_parsing", "model_type", "dict_type", "model_attributes_type"}
"""Error types that mostly say "another member of the union was meant": reported only if nothing better."""


def _user_location(loc: tuple, data: object) -> list[str]:
    """Keep the location parts that name keys or indexes of the user's data; drop union tags."""
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(node, Mapping):
            if part in node:
                parts.append(str(part))
                node = node[part]
            elif not (_looks_like_tag(part) or part in list(node.values())):
                parts.append(str(part))  # a missing key
                node = None
            continue  # otherwise a union tag (a type name or the discriminator's value)
        if isinstance(node, list | tuple) and isinstance(part, int):
            parts.append(str(part))
            node = node[part] if 0 <= part < len(node) else None
            continue
        if node is None and not _looks_like_tag(part):
            parts.append(str(part))
    return parts


def _looks_like_tag(part: object) -> bool:
    """Union member tags pydantic adds: type names, ``function-after[...]`` and literal tags."""
    if not isinstance(part, str):
        return False
    return part[:1].isupper() or "[" in part or "-" in part or part in {"float", "int", "str", "bool"}
