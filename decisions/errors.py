"""User-facing input errors: one line, naming the field and the problem."""

from __future__ import annotations

from pydantic import ValidationError


class InputError(ValueError):
    """Bad user input, reported as ``field: problem`` on one line.

    Raised at the edge (scenario models, CSV/TOML readers, CLI); the CLI turns it
    into exit code 2 with the message and no traceback.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


def from_validation_error(exc: ValidationError, *, prefix: str = "") -> InputError:
    """Turn a pydantic ``ValidationError`` into an ``InputError`` for its first problem.

    Args:
        exc: the pydantic error.
        prefix: dotted path to prepend to the field location (e.g. ``"scenario"``).

    Returns:
        An ``InputError`` whose field is the dotted location of the first error.
    """
    first = exc.errors()[0]
    loc = [str(part) for part in first.get("loc", ()) if not _is_union_tag(part)]
    field = ".".join(([prefix] if prefix else []) + loc) or (prefix or "input")
    message = first.get("msg", "invalid value").replace("Value error, ", "")
    more = len(exc.errors()) - 1
    if more > 0:
        message += f" (and {more} more problem{'s' if more > 1 else ''})"
    return InputError(field, message)


def _is_union_tag(part: object) -> bool:
    """Pydantic puts union member tags (e.g. ``'seasonal_ou'``, ``'float'``) in locations; drop the noise."""
    return isinstance(part, str) and part in {"float", "RatchetCurve", "function-after[_check(), RatchetCurve]"}
