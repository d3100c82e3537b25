"""Read a daily forward curve from CSV, validating every cell (one-line errors naming the row)."""

from __future__ import annotations

import io
import math
from datetime import date
from pathlib import Path
from typing import IO

import pandas as pd

from decisions.errors import InputError

PRICE_COLUMNS = ("forward", "price", "forward_price")
DATE_COLUMNS = ("date", "delivery_date", "day")


def load_forward_curve_csv(
    source: str | Path | IO[str] | IO[bytes],
    *,
    field: str = "forward_curve",
    expected_length: int | None = None,
) -> tuple[list[float], date | None]:
    """Parse a forward curve CSV.

    The file needs a price column named ``forward`` or ``price`` (or be a single
    column); an optional ``date`` column gives the first delivery date and must
    then be consecutive days.

    Args:
        source: path or file-like object (text or bytes, e.g. a Streamlit upload).
        field: field name used in error messages.
        expected_length: when given, the number of rows required.

    Returns:
        ``(prices, first_date or None)``.

    Raises:
        InputError: unreadable file, missing column, non-numeric/NaN/non-positive cell,
            wrong length or non-consecutive dates.
    """
    frame = _read(source, field)
    columns = {c.strip().lower(): c for c in frame.columns}
    price_col = next((columns[c] for c in PRICE_COLUMNS if c in columns), None)
    if price_col is None:
        if len(frame.columns) != 1:
            raise InputError(field, f"no price column: expected one of {', '.join(PRICE_COLUMNS)}")
        price_col = frame.columns[0]
    prices: list[float] = []
    for row, cell in enumerate(frame[price_col].tolist(), start=2):  # row 1 is the header
        value = _number(cell)
        if value is None:
            raise InputError(field, f"row {row}: {cell!r} is not a number")
        if not math.isfinite(value):
            raise InputError(field, f"row {row}: {cell!r} is not a finite number")
        if value <= 0:
            raise InputError(field, f"row {row}: price {value} must be positive")
        prices.append(value)
    if len(prices) < 2:
        raise InputError(field, f"needs at least 2 daily prices, got {len(prices)}")
    if expected_length is not None and len(prices) != expected_length:
        raise InputError(field, f"has {len(prices)} rows, expected {expected_length}")
    date_col = next((columns[c] for c in DATE_COLUMNS if c in columns), None)
    return prices, (_first_date(frame[date_col], field) if date_col is not None else None)


def _read(source: str | Path | IO[str] | IO[bytes], field: str) -> pd.DataFrame:
    try:
        if hasattr(source, "read"):
            raw = source.read()
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
            return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
        return pd.read_csv(Path(source), dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError(field, f"file not found: {source}") from None
    except (UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError, OSError) as exc:
        raise InputError(field, f"cannot read CSV: {str(exc).splitlines()[0]}") from None


def _number(cell: object) -> float | None:
    text = str(cell).strip()
    if not text:
        return float("nan")
    try:
        return float(text)
    except ValueError:
        return None


def _first_date(column: pd.Series, field: str) -> date:
    try:
        dates = pd.to_datetime(column, format="ISO8601")
    except (ValueError, TypeError):
        raise InputError(field, "date column: dates must be ISO dates like 2026-04-01") from None
    steps = dates.diff().dropna().dt.days
    if not (steps == 1).all():
        bad = int(steps.index[(steps != 1).to_numpy()][0]) + 2
        raise InputError(field, f"row {bad}: dates must be consecutive days")
    return dates.iloc[0].date()
