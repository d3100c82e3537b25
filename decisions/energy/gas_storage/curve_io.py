"""Read a daily forward curve from CSV, validating every cell (one-line errors naming the row)."""

from __future__ import annotations

from datetime import date

import pandas as pd

from decisions.core.csv_input import CsvSource, named_column, price_column, read_text_csv, row_prices
from decisions.errors import InputError

PRICE_COLUMNS = ("forward", "price", "forward_price")
DATE_COLUMNS = ("date", "delivery_date", "day")


def load_forward_curve_csv(
    source: CsvSource,
    *,
    field: str = "forward_curve",
    expected_length: int | None = None,
) -> tuple[list[float], date | None]:
    """Parse a forward curve CSV.

    Args:
        source: path or file-like object (text or bytes, e.g. a Streamlit upload).
        field: field name used in error messages.
        expected_length: when given, the number of rows required.

    Raises:
        InputError: unreadable file, missing column, non-numeric/NaN/non-positive cell,
            wrong length or non-consecutive dates.
    """
    frame = read_text_csv(source, field)
    cells = frame[price_column(frame, PRICE_COLUMNS, field)].tolist()
    try:
        prices = row_prices(cells, lambda value: "must be positive" if value <= 0 else None)
    except ValueError as exc:
        raise InputError(field, str(exc)) from None
    if len(prices) < 2:
        raise InputError(field, f"needs at least 2 daily prices, got {len(prices)}")
    if expected_length is not None and len(prices) != expected_length:
        raise InputError(field, f"has {len(prices)} rows, expected {expected_length}")
    date_col = named_column(frame, DATE_COLUMNS)
    return prices, (_first_date(frame[date_col], field) if date_col is not None else None)


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
