"""Read a daily forward curve from CSV, validating every cell (one-line errors naming the file, the row
as the file counts it and the column)."""

from __future__ import annotations

from datetime import date

import pandas as pd

from decisions.core.csv_input import CsvSource, named_column, price_column, read_text_csv, row_prices
from decisions.core.csv_table import source_label
from decisions.errors import InputError

PRICE_COLUMNS = ("forward", "price", "forward_price")
DATE_COLUMNS = ("date", "delivery_date", "day")
PLAUSIBLE_MAX = 2000.0
"""A price above this per unit of gas (e.g. EUR/MWh) is taken for a file in another unit."""


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
        InputError: unreadable file, missing column, non-numeric/NaN/non-positive cell, a price too
            large for the unit, wrong length, dates not ISO or not consecutive days; naming the file
            and, for a cell, its row and column.
    """
    label = source_label(source, "the forward curve")
    frame = read_text_csv(source, field)
    try:
        column = price_column(frame, PRICE_COLUMNS, field)
    except InputError as missing:
        raise InputError(field, f"{label}: {missing.problem}") from None
    try:
        prices = row_prices(frame[column].tolist(), _price_problem)
    except ValueError as exc:
        raise InputError(field, f"{label}, column {str(column).strip()!r}, {exc}") from None
    if len(prices) < 2:
        raise InputError(field, f"{label}: needs at least 2 daily prices, got {len(prices)}")
    if expected_length is not None and len(prices) != expected_length:
        raise InputError(field, f"{label}: has {len(prices)} rows, expected {expected_length}")
    date_col = named_column(frame, DATE_COLUMNS)
    return prices, (_first_date(frame[date_col], field, label) if date_col is not None else None)


def _price_problem(value: float) -> str | None:
    if value <= 0:
        return "must be positive"
    if value > PLAUSIBLE_MAX:
        return f"is above {PLAUSIBLE_MAX:g} (is the file in another unit, e.g. per GWh or in cents?)"
    return None


def _first_date(column: pd.Series, field: str, label: str) -> date:
    name = str(column.name).strip()
    cells = column.astype(str).str.strip()
    dates = pd.to_datetime(cells, format="ISO8601", errors="coerce")
    if dates.isna().any():
        bad = int(dates.index[dates.isna().to_numpy()][0])
        raise InputError(field, f"{label}, row {bad + 2}, column {name!r}: {cells.iloc[bad]!r} is not an ISO date "
                                "like 2026-04-01 (write day-first or month-first dates as YYYY-MM-DD)")
    steps = dates.diff().dropna().dt.days
    if not (steps == 1).all():
        bad = int(steps.index[(steps != 1).to_numpy()][0])
        raise InputError(field, f"{label}, row {bad + 2}, column {name!r}: {cells.iloc[bad]} is not the day after "
                                f"{cells.iloc[bad - 1]} (dates must be consecutive days: a gap, a repeat or out of order)")
    return dates.iloc[0].date()
