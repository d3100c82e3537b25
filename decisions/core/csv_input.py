"""A user's CSV file read as text, its header checked (no unnamed or repeated column), and a column
of prices from it: every cell checked, one-line errors naming the row (the header is row 1, as a
spreadsheet shows it).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import IO

import pandas as pd

from decisions.core.numbers import PRICE_MAX, float32_problem
from decisions.errors import InputError

# A path, or a file-like object of text or bytes (e.g. an upload).
CsvSource = str | Path | IO[str] | IO[bytes]


def read_text_csv(source: CsvSource, field: str, *, skip_blank_lines: bool = True) -> pd.DataFrame:
    """A UTF-8 CSV with a header (path or file-like), every cell as text; ``field`` is named in errors.

    Raises:
        InputError: the file is missing or is not readable CSV, or its header has a column without
            a name or a name twice (case and blanks ignored).
    """
    options = {"dtype": str, "keep_default_na": False, "skip_blank_lines": skip_blank_lines}
    try:
        raw = source.read() if hasattr(source, "read") else Path(source).read_bytes()
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        problem = header_problem(text)
        if problem is not None:
            raise InputError(field, problem)
        return pd.read_csv(io.StringIO(text), **options)
    except FileNotFoundError:
        raise InputError(field, f"file not found: {source}") from None
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error, OSError) as exc:
        raise InputError(field, f"cannot read CSV: {str(exc).splitlines()[0]}") from None


def header_problem(text: str) -> str | None:
    """What is wrong with a CSV text's header (its first line that is not blank): a column without a
    name, or a name given twice (case and blanks ignored); None when it is fine or absent."""
    header = next((row for row in csv.reader(io.StringIO(text)) if any(cell.strip() for cell in row)), None)
    if header is None:
        return None
    seen: set[str] = set()
    for number, name in enumerate(header, start=1):
        key = name.strip().lower()
        if not key:
            return f"column {number} of the header has no name"
        if key in seen:
            return f"column {name.strip()!r} appears twice in the header"
        seen.add(key)
    return None


def named_column(frame: pd.DataFrame, names: Sequence[str]) -> Hashable | None:
    """The label of the column named one of the lower-case ``names`` (case and blanks ignored; the
    first present wins), or None."""
    columns = {str(c).strip().lower(): c for c in frame.columns}
    return next((columns[c] for c in names if c in columns), None)


def price_column(frame: pd.DataFrame, names: Sequence[str], field: str) -> Hashable:
    """The label of the price column: ``named_column``, or the only column.

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
    """A float from a cell: NaN for a blank cell, None for a bool or text that is not a number."""
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
    """The cells of a price column (the first is row 2) as numbers passing ``float32_problem`` within
    ``max_abs`` and ``check`` (the problem with a value, or None).

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
