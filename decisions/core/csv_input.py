"""A column of prices from a user's CSV file: every cell checked, one-line errors naming the row.

Row numbers count the header as row 1, so ``row 2`` is the first data row, as a spreadsheet
shows it. The readers of forward curves and price series share these steps: read the file as
text, find the column by one of its accepted names, and turn each cell into a checked number.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import IO

import pandas as pd

from decisions.core.numbers import PRICE_MAX, float32_problem
from decisions.errors import InputError

CsvSource = str | Path | IO[str] | IO[bytes]
"""A path, or a file-like object of text or bytes (e.g. an upload)."""


def read_text_csv(source: CsvSource, field: str, *, skip_blank_lines: bool = True) -> pd.DataFrame:
    """Read a CSV with a header, every cell as text (nothing turned into NaN).

    Args:
        source: path or file-like object (text or bytes, UTF-8).
        field: field named in errors.
        skip_blank_lines: drop blank lines (False keeps them as rows of empty cells).

    Returns:
        The table, all cells ``str``.

    Raises:
        InputError: the file is missing or is not readable CSV.
    """
    options = {"dtype": str, "keep_default_na": False, "skip_blank_lines": skip_blank_lines}
    try:
        if hasattr(source, "read"):
            raw = source.read()
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            return pd.read_csv(io.StringIO(text), **options)
        return pd.read_csv(Path(source), **options)
    except FileNotFoundError:
        raise InputError(field, f"file not found: {source}") from None
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, OSError) as exc:
        raise InputError(field, f"cannot read CSV: {str(exc).splitlines()[0]}") from None


def named_column(frame: pd.DataFrame, names: Sequence[str]) -> Hashable | None:
    """The column named one of ``names`` (case and surrounding blanks ignored; the first present wins).

    Args:
        frame: the table.
        names: accepted names, lower case.

    Returns:
        The column's label in ``frame``, or None when there is none.
    """
    columns = {str(c).strip().lower(): c for c in frame.columns}
    return next((columns[c] for c in names if c in columns), None)


def price_column(frame: pd.DataFrame, names: Sequence[str], field: str) -> Hashable:
    """The price column: the one named one of ``names`` (see ``named_column``), or the only column.

    Args:
        frame: the table.
        names: accepted names, lower case.
        field: field named in errors.

    Returns:
        The column's label in ``frame``.

    Raises:
        InputError: no such column among several.
    """
    column = named_column(frame, names)
    if column is None:
        if len(frame.columns) != 1:
            raise InputError(field, f"no price column: expected one of {', '.join(names)}")
        column = frame.columns[0]
    return column


def cell_number(cell: object) -> float | None:
    """A float from a cell; NaN for an empty cell; None when not a number.

    Args:
        cell: a number or a text cell.

    Returns:
        The number (NaN for a blank cell), or None for a bool or text that is not a number.
    """
    if isinstance(cell, bool):
        return None
    if isinstance(cell, int | float):
        return float(cell)
    text = str(cell).strip()
    if not text:
        return float("nan")
    try:
        return float(text)
    except ValueError:
        return None


def row_prices(
    cells: Iterable[object], check: Callable[[float], str | None], *, max_abs: float = PRICE_MAX
) -> list[float]:
    """The cells of a price column as finite numbers, each passing ``check``.

    Every value must also survive the simulators' cast to float32 within ``max_abs``
    (``decisions.core.numbers.float32_problem``): ``1e20`` or ``1e308`` is refused like NaN.

    Args:
        cells: the column's cells in order (the first is row 2).
        check: the problem with a finite value (e.g. ``"must be positive"``), or None when it is fine.
        max_abs: largest magnitude allowed (default ``PRICE_MAX``, 1e6).

    Returns:
        The values.

    Raises:
        ValueError: naming the first bad row: not a number, not finite, out of range, or
            ``row r: price v <problem>``.
    """
    values = []
    for row, cell in enumerate(cells, start=2):
        value = cell_number(cell)
        if value is None:
            raise ValueError(f"row {row}: {cell!r} is not a number")
        if not math.isfinite(value):
            raise ValueError(f"row {row}: {cell!r} is not a finite number")
        problem = float32_problem(value, max_abs)
        if problem is not None:
            raise ValueError(f"row {row}: price {problem}")
        problem = check(value)
        if problem is not None:
            raise ValueError(f"row {row}: price {value} {problem}")
        values.append(value)
    return values
