"""User-facing input errors: one line, naming the field and the problem."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

M = TypeVar("M", bound=BaseModel)


class InputError(ValueError):
    """Bad user input, reported as ``field: problem`` on one line (the CLI exits with code 2)."""

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def error_line(exc: BaseException) -> str:
    """``"ExceptionType: message"`` with whitespace collapsed, or the type name for an empty message."""
    message = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def validate_input(model: type[M], data: object, *, prefix: str) -> M:
    """Validate ``data`` (found at dotted path ``prefix`` of the user's input) into ``model``.

    Raises:
        InputError: naming the first bad field.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise from_validation_error(exc, prefix=prefix, data=data) from None


def from_validation_error(exc: ValidationError, *, prefix: str = "", data: object = None) -> InputError:
    """An ``InputError`` for the first problem of ``exc``, its field the dotted location as the user wrote it.

    ``prefix`` is prepended to the field; ``data`` (the validated mapping) tells union tags,
    which are dropped, from the user's keys.
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
"""Error types that mostly say another member of the union was meant: reported last."""


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
