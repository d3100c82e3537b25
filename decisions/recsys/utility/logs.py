"""A user's request log as a CSV file: the documented schema, read and checked cell by cell."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np

from decisions.core.csv_input import CsvSource, cell_number, read_text_csv
from decisions.core.numbers import float32_problem
from decisions.errors import InputError

CONTEXT_PREFIX = "ctx_"
REQUIRED = ("action", "propensity", "success", "hides", "revenue")
"""The columns besides the context's."""


class Logs(NamedTuple):
    """Logged requests for training: contexts, actions, propensities and the vector responses."""

    context: np.ndarray
    action: np.ndarray
    propensity: np.ndarray
    reward: np.ndarray


def _in_unit(value: float) -> str | None:
    return None if 0.0 <= value <= 1.0 else "is outside [0, 1]"


def _positive_probability(value: float) -> str | None:
    return None if 0.0 < value <= 1.0 else "is outside (0, 1]"


def _non_negative(value: float) -> str | None:
    return None if value >= 0.0 else "is negative"


def _any(value: float) -> str | None:
    return None


def _numbers(cells: list[str], column: str, field: str, check: Callable[[float], str | None]) -> np.ndarray:
    """The column's cells as finite numbers passing ``check`` (the first bad one raises, naming its row)."""
    values = np.empty(len(cells), dtype=np.float64)
    for index, cell in enumerate(cells):
        row = index + 2
        value = cell_number(cell)
        if value is None or not math.isfinite(value):
            raise InputError(field, f"{column}, row {row}: {cell!r} is not a finite number")
        problem = float32_problem(value)  # the logs are computed in float32
        if problem is not None:
            raise InputError(field, f"{column}, row {row}: {problem}")
        problem = check(value)
        if problem is not None:
            raise InputError(field, f"{column}, row {row}: {cell} {problem}")
        values[index] = value
    return values


def read_logs(source: CsvSource, actions: int, *, field: str = "logs.path") -> tuple[Logs, tuple[str, ...]]:
    """Read and check a log CSV (see the module docstring).

    Args:
        source: a path or a file-like object.
        actions: the size A of the job's weight set.
        field: the input named in errors.

    Returns:
        The logs and the context columns' names (in file order).

    Raises:
        InputError: a missing column, no context column, a cell that is not a finite number, an
            action outside ``[0, A)`` or not an integer, a propensity outside ``(0, 1]``, a success
            outside [0, 1], negative hides, or fewer than 10 rows.
    """
    frame = read_text_csv(source, field)
    columns = {str(c).strip(): c for c in frame.columns}
    missing = [name for name in REQUIRED if name not in columns]
    if missing:
        raise InputError(field, f"missing column {missing[0]!r} (the log needs {', '.join(REQUIRED)} and ctx_*)")
    context_names = tuple(name for name in columns if name.startswith(CONTEXT_PREFIX))
    if not context_names:
        raise InputError(field, f"no context column: name each feature {CONTEXT_PREFIX}<name>")
    if len(frame) < 10:
        raise InputError(field, f"only {len(frame)} rows: a log needs at least 10 requests")

    def column(name: str, check: Callable[[float], str | None]) -> np.ndarray:
        return _numbers(frame[columns[name]].tolist(), name, field, check)

    def action_check(value: float) -> str | None:
        if value != int(value):
            return "is not an integer"
        return None if 0 <= value < actions else f"is outside [0, {actions}) (the weight set's indices)"

    context = np.stack([column(name, _any) for name in context_names], axis=1)
    logs = Logs(
        context=context.astype(np.float32),
        action=column("action", action_check).astype(np.int32),
        propensity=column("propensity", _positive_probability).astype(np.float32),
        reward=np.stack([column("success", _in_unit), column("hides", _non_negative), column("revenue", _any)],
                        axis=1).astype(np.float32),
    )
    return logs, context_names


def write_logs(path: str | Path, logs: Logs, context_names: tuple[str, ...]) -> Path:
    """Write logs in the schema ``read_logs`` reads (e.g. simulated logs, as an example file)."""
    import pandas as pd

    frame = pd.DataFrame(np.asarray(logs.context), columns=list(context_names))
    frame["action"] = np.asarray(logs.action)
    frame["propensity"] = np.asarray(logs.propensity)
    for index, name in enumerate(("success", "hides", "revenue")):
        frame[name] = np.asarray(logs.reward)[:, index]
    frame.to_csv(path, index=False)
    return Path(path)
