"""Import price series: the data's time-of-use tariff, a carbon-driven dynamic price, or a user CSV."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from decisions.energy.building.dataset import NUM_HOURS, District
from decisions.errors import InputError

if TYPE_CHECKING:
    from decisions.core.csv_input import CsvSource

# ``decisions.core.csv_input`` (pandas) is imported where prices are read, so a job spec
# with a named tariff validates without pandas.

PRICE_COLUMNS = ("price", "price_usd_per_kwh", "import_price")
"""Accepted names of the price column of a price CSV (case-insensitive)."""


def dynamic_price(district: District) -> np.ndarray:
    """The carbon-driven dynamic import price (see the module docstring).

    Args:
        district: the data set (supplies the ToU tariff and the carbon intensity).

    Returns:
        ``(T,)`` prices in $/kWh, float64.
    """
    tou, carbon = district.price, district.carbon_intensity
    scale = (tou.max() - tou.min()) / (carbon.max() - carbon.min())
    return tou.mean() + (carbon - carbon.mean()) * scale


def check_prices(values: list[object]) -> np.ndarray:
    """Validate an hourly price list: ``NUM_HOURS`` finite numbers >= 0.

    Args:
        values: the cells, in order (numbers or strings).

    Raises:
        ValueError: naming the first bad row (``row 2`` is the first data row of a CSV with a header).
    """
    from decisions.core.csv_input import row_prices

    prices = row_prices(values, lambda value: "must be >= 0" if value < 0 else None)
    if len(prices) != NUM_HOURS:
        raise ValueError(f"has {len(prices)} hourly prices, expected {NUM_HOURS} (one year)")
    return np.asarray(prices, dtype=np.float64)


def read_price_csv(source: CsvSource, *, field: str = "tariff.path") -> np.ndarray:
    """Read a user CSV of hourly import prices ($/kWh), one row per hour of the data year.

    Args:
        source: path or file-like object (text or bytes, e.g. an upload).

    Raises:
        InputError: unreadable file, no price column, a non-numeric / NaN / negative cell, or
            not 8760 rows.
    """
    from decisions.core.csv_input import price_column, read_text_csv

    frame = read_text_csv(source, field, skip_blank_lines=False)
    cells = frame[price_column(frame, PRICE_COLUMNS, field)].tolist()
    while cells and not str(cells[-1]).strip():  # trailing blank lines are not hours
        cells.pop()
    try:
        return check_prices(cells)
    except ValueError as exc:
        raise InputError(field, str(exc)) from None

