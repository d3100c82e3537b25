"""A user's CSV table checked cell by cell: its columns known, each refusal one line naming the file,
the row as the file counts it (the header is row 1) and the column.

``CsvTable.read`` reads the text (``csv_input.read_text_csv``), refuses an unknown or missing column
and an empty table, and keeps the rows that are not blank. Its readers turn one column into an array,
refusing its first bad cell in file order: ``text``, ``numbers`` (a range, with a hint for a value
that looks like another unit), ``integers``, ``choices``, ``booleans``, ``clock_seconds`` (a time of day
or seconds) and ``dates`` (ISO dates or times, optionally strictly increasing by a fixed step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

import numpy as np
import pandas as pd

from decisions.core.csv_input import CsvSource, cell_number, read_text_csv
from decisions.errors import InputError

TRUE = ("true", "yes", "1")
FALSE = ("false", "no", "0")


def source_label(source: CsvSource, default: str = "the file") -> str:
    """How errors name a CSV: its file name, or an upload's name, else ``default``."""
    if isinstance(source, str | Path):
        return Path(source).name
    name = getattr(source, "name", None)
    return Path(str(name)).name if name else default


class CsvTable:
    """The non-blank rows of a CSV as stripped text, by lower-case column name, with their row numbers."""

    def __init__(self, frame: pd.DataFrame, label: str, field: str, required: Sequence[str],
                 optional: Sequence[str] = ()) -> None:
        self.label, self.field = label, field
        known = f"{', '.join(required)}" + (f" and optionally {', '.join(optional)}" if optional else "")
        if not isinstance(frame.index, pd.RangeIndex):
            raise self.refuse_file("its rows have more cells than the header has columns")
        names = {str(c).strip().lower(): c for c in frame.columns}
        unknown = [str(c).strip() for key, c in names.items() if key not in (*required, *optional)]
        if unknown:
            raise self.refuse_file(f"unknown column {unknown[0]!r} (expected {known})")
        missing = [name for name in required if name not in names]
        if missing:
            raise self.refuse_file(f"missing column {missing[0]!r} (expected {known})")
        cells = frame.apply(lambda column: column.str.strip()) if len(frame.columns) else frame
        filled = (cells != "").any(axis=1).to_numpy() if len(frame.columns) else np.zeros(len(frame), bool)
        self.rows = np.flatnonzero(filled) + 2
        if not len(self.rows):
            raise self.refuse_file("it has no row after the header")
        self.cells = {name: cells[names[name]].to_numpy(dtype=object)[filled] for name in names}

    @classmethod
    def read(cls, source: CsvSource, *, field: str, required: Sequence[str], optional: Sequence[str] = ()) -> CsvTable:
        """The table of ``source`` (path or file-like) with ``required`` and ``optional`` lower-case columns.

        Raises:
            InputError: on ``field``: unreadable CSV, an unknown or missing column, no row.
        """
        return cls(read_text_csv(source, field, skip_blank_lines=False), source_label(source), field, required,
                   optional)

    def __len__(self) -> int:
        return len(self.rows)

    def has(self, name: str) -> bool:
        """Whether the file has column ``name``."""
        return name in self.cells

    def refuse_file(self, problem: str) -> InputError:
        """The error for the file as a whole."""
        return InputError(self.field, f"{self.label}: {problem}")

    def refuse(self, index: int, column: str, problem: str) -> InputError:
        """The error for the cell of ``column`` in the ``index``-th kept row."""
        return InputError(self.field, f"{self.label}, row {self.rows[index]}, column {column!r}: {problem}")

    def text(self, name: str, *, empty: bool = False) -> np.ndarray:
        """Column ``name`` as text (Python strings); an empty cell is refused unless ``empty``."""
        cells = self.cells[name]
        if not empty:
            blank = np.flatnonzero(cells == "")
            if len(blank):
                raise self.refuse(int(blank[0]), name, "is empty")
        return cells

    def numbers(self, name: str, *, low: float | None = None, high: float | None = None, above: bool = False,
                blank: float | None = None, unit_hint: str = "") -> np.ndarray:
        """Column ``name`` as finite floats in ``[low, high]`` (``(low, high]`` when ``above``); an empty
        cell reads as ``blank``, refused when None. A value above ``high`` names ``unit_hint`` (e.g. "the
        file may be in Wh, not kWh")."""
        numbers = pd.to_numeric(pd.Series(self.cells[name], dtype=object), errors="coerce")
        values = numbers.to_numpy(np.float64, copy=True)  # writable: bad cells are replaced below
        good = np.isfinite(values)
        if low is not None:
            good &= values > low if above else values >= low
        if high is not None:
            good &= values <= high
        for index in np.flatnonzero(~good):
            values[index] = self._number(int(index), name, low, high, above, blank, unit_hint)
        return values

    def _number(self, index: int, name: str, low: float | None, high: float | None, above: bool,
                blank: float | None, unit_hint: str) -> float:
        cell = self.cells[name][index]
        if cell == "":
            if blank is None:
                raise self.refuse(index, name, "is empty")
            return blank
        number = cell_number(cell)
        if number is None or not math.isfinite(number):
            raise self.refuse(index, name, f"{cell!r} is not a finite number")
        if low is not None and (number <= low if above else number < low):
            raise self.refuse(index, name, f"{cell} is {'not above' if above else 'below'} {low:g}")
        if high is not None and number > high:
            hint = f" ({unit_hint})" if unit_hint else ""
            raise self.refuse(index, name, f"{cell} is above {high:g}{hint}")
        return number

    def integers(self, name: str, low: int, high: int, *, blank: int | None = None) -> np.ndarray:
        """Column ``name`` as whole numbers in ``low..high``; an empty cell reads as ``blank``, refused when None."""
        values = self.numbers(name, blank=math.nan if blank is not None else None)
        for index, value in enumerate(values):
            if math.isnan(value):
                values[index] = blank
            elif value != math.floor(value):
                raise self.refuse(index, name, f"{self.cells[name][index]!r} is not a whole number")
            elif not low <= value <= high:
                raise self.refuse(index, name, f"{self.cells[name][index]} is outside {low}-{high}")
        return values.astype(np.int64)

    def choices(self, name: str, options: Sequence[str]) -> np.ndarray:
        """Column ``name`` as indices into the lower-case ``options`` (case ignored)."""
        lookup = {option: i for i, option in enumerate(options)}
        values = np.empty(len(self), np.int64)
        for index, cell in enumerate(self.text(name)):
            found = lookup.get(cell.lower())
            if found is None:
                raise self.refuse(index, name, f"{cell!r} is not one of {', '.join(options)}")
            values[index] = found
        return values

    def booleans(self, name: str) -> np.ndarray:
        """Column ``name`` as booleans: true/yes/1 or false/no/0 (case ignored)."""
        return self.choices(name, (*FALSE, *TRUE)) >= len(FALSE)

    def clock_seconds(self, name: str, *, high: float = 7 * 86_400.0) -> np.ndarray:
        """Column ``name`` as seconds: a clock time ``07:30`` or ``07:30:15`` (seconds after midnight; hours
        past 23 run into the next day) or a number of seconds, in ``[0, high]``."""
        values = np.empty(len(self), np.float64)
        for index, cell in enumerate(self.text(name)):
            parts = cell.split(":")
            number = cell_number(cell) if len(parts) == 1 else _clock(parts)
            if number is None or not math.isfinite(number):
                raise self.refuse(index, name, f"{cell!r} is neither a clock time like 07:30 nor seconds")
            if not 0 <= number <= high:
                raise self.refuse(index, name, f"{cell} is outside 0-{high:g} s")
            values[index] = number
        return values

    def dates(self, name: str, *, step: timedelta | None = None, increasing: bool = True) -> pd.DatetimeIndex:
        """Column ``name`` as ISO dates or date-times (``2026-04-01``, ``2026-04-01 13:00``), strictly
        increasing when ``increasing``, each ``step`` after the one before when ``step`` is given."""
        cells = self.text(name)
        try:
            parsed = pd.to_datetime(pd.Series(cells), format="ISO8601", errors="coerce")
        except ValueError:  # times with different UTC offsets (e.g. across a daylight-saving change)
            raise self._mixed_offsets(name, cells) from None
        bad = np.flatnonzero(parsed.isna().to_numpy())
        if len(bad):
            raise self.refuse(int(bad[0]), name, f"{cells[bad[0]]!r} is not an ISO date like 2026-04-01 "
                                                  "(or 2026-04-01 13:00)")
        times = pd.DatetimeIndex(parsed).as_unit("ns")
        gaps = np.diff(times.asi8)
        if increasing:
            back = np.flatnonzero(gaps <= 0)
            if len(back):
                raise self.refuse(int(back[0]) + 1, name, f"{cells[back[0] + 1]} does not come after "
                                                          f"{cells[back[0]]} of the row before")
        if step is not None:
            off = np.flatnonzero(gaps != pd.Timedelta(step).value)
            if len(off):
                raise self.refuse(int(off[0]) + 1, name, f"{cells[off[0] + 1]} is not {_words(step)} after "
                                                         f"{cells[off[0]]} of the row before (a gap or a repeat)")
        return times

    def _mixed_offsets(self, name: str, cells: np.ndarray) -> InputError:
        """The error for the first time whose UTC offset differs from the first row's."""
        offsets = [pd.to_datetime(cell, format="ISO8601", errors="coerce") for cell in cells]
        first = offsets[0].utcoffset() if not pd.isna(offsets[0]) else None
        index = next((i for i, t in enumerate(offsets) if not pd.isna(t) and t.utcoffset() != first), 0)
        return self.refuse(index, name, f"{cells[index]} has another UTC offset than {cells[0]} of the first row: "
                                        "give every time in one offset (no daylight-saving change), or none")


def _clock(parts: list[str]) -> float | None:
    """Seconds of ``HH:MM`` or ``HH:MM:SS`` split at the colons (minutes and seconds below 60), else None."""
    if len(parts) > 3 or not all(p.isdigit() for p in parts) or any(int(p) >= 60 for p in parts[1:]):
        return None
    return sum(int(p) * 60.0 ** (2 - i) for i, p in enumerate((*parts, "0")[:3]))


def _words(step: timedelta) -> str:
    hours = step.total_seconds() / 3600
    if hours == 24:
        return "one day"
    return "one hour" if hours == 1 else f"{hours:g} hours"
