"""Train/evaluation splits (by calendar month, or any set of rows), episode start hours, and evaluation windows."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from decisions.energy.building.dataset import District

MAX_STARTS = 366
"""Length of the padded start-hour table in params (at most one start per day)."""


@dataclass(frozen=True)
class Window:
    """A stretch of consecutive hours of the data year: rows ``start_hour .. start_hour + num_hours - 1``."""

    start_hour: int
    """Row index of the first hour (0-based)."""
    num_hours: int
    """Number of hourly steps."""

    @property
    def stop(self) -> int:
        """Row index one past the last hour."""
        return self.start_hour + self.num_hours

    @property
    def rows(self) -> np.ndarray:
        """Row indices of the window: ``(num_hours,)`` int."""
        return np.arange(self.start_hour, self.stop)


def episode_starts(district: District, months: Iterable[int], episode_hours: int) -> np.ndarray:
    """Sorted rows (int64, possibly empty) at which an episode of ``episode_hours`` can start inside the ``months``."""
    return starts_inside(district, np.isin(district.month, list(set(months))), episode_hours)


def starts_inside(district: District, in_split: np.ndarray, episode_hours: int) -> np.ndarray:
    """Sorted rows (int64, possibly empty) at which an episode of ``episode_hours`` can start at a day's first
    hour with every row of it inside ``in_split`` (``(T,)`` bool) and one row after it for the last observation."""
    total = len(in_split)
    # outside[t]: rows t..t+L-1 contain a row outside the split (prefix sums of the complement).
    outside = np.concatenate([[0], np.cumsum(~in_split)])
    starts = np.arange(total - episode_hours)  # leaves row start + L for the last observation
    clean = outside[starts + episode_hours] - outside[starts] == 0
    first_hour = district.hour[starts] == 1
    return starts[clean & first_hour]


def padded_starts(starts: np.ndarray) -> tuple[np.ndarray, int]:
    """Pad a start table to ``MAX_STARTS`` entries (repeating the first) for a fixed params shape.

    Returns:
        ``(table, count)``: ``(MAX_STARTS,)`` int32 table whose first ``count`` entries are ``starts``.
    """
    table = np.full(MAX_STARTS, starts[0], dtype=np.int32)
    table[: len(starts)] = starts
    return table, len(starts)


def month_blocks(district: District, months: Iterable[int]) -> list[Window]:
    """Maximal runs of consecutive rows whose month is in ``months``, in time order.

    Returns:
        One ``Window`` per contiguous run.
    """
    return blocks(np.isin(district.month, list(set(months))))


def blocks(inside: np.ndarray) -> list[Window]:
    """Maximal runs of consecutive ``True`` rows of ``inside`` (``(T,)`` bool), in time order.

    Returns:
        One ``Window`` per contiguous run.
    """
    inside = np.asarray(inside).astype(np.int8)
    edges = np.diff(np.concatenate([[0], inside, [0]]))
    begins, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [Window(int(b), int(e - b)) for b, e in zip(begins, ends, strict=True)]
