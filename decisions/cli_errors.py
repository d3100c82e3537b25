"""How the CLI's commands end on an error: one ``error:`` line on stderr and an exit code.

Shared by ``decisions.cli`` and its sub-apps (``decisions.cli_db``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import typer
from rich.markup import escape

from decisions.cli_console import CliConsole
from decisions.errors import InputError

err_console = CliConsole(stderr=True)
"""The CLI's stderr."""

F = TypeVar("F", bound=Callable[..., Any])


def clean_errors(func: F) -> F:
    """Turn input errors into one line + exit 2, and run failures into one line + exit 1."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            code = _exit_code(exc)
            if code is None:
                raise
            err_console.print(f"[red]error:[/red] {escape(str(exc))}", highlight=False, soft_wrap=True)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


def _exit_code(exc: Exception) -> int | None:
    """2 for bad input (a spec, a field, an unknown run), 1 for a failed run, None for anything else.

    The run store is only looked up, not imported: a ``RunNotFoundError`` needs it loaded.
    """
    from decisions.kit.spec import SpecError

    repository = sys.modules.get("decisions.store.repository")
    if isinstance(exc, InputError | SpecError) or (
        repository is not None and isinstance(exc, repository.RunNotFoundError)
    ):
        return 2
    return 1 if isinstance(exc, RunFailed) else None


class RunFailed(RuntimeError):
    """A recorded run failed; the message names the run and its error."""
