"""Train/evaluation splits by calendar month, episode start hours, and evaluation windows.

A split is a set of calendar months. An episode of ``L`` hours may start at the first hour of any
day (``hour == 1``) such that all its ``L`` hours lie in the split's months and one more row
exists for the observation after the last step (no wrap-around the end of the data year). With
the default split (train months 1-8, evaluation months 9-12) and a 168 h episode, training
episodes start in August 2016 or January-July 2017 and evaluation episodes in
September-December 2016.
"""

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
    """Rows at which an episode of ``episode_hours`` can start inside a split.

    Args:
        district: the data set (supplies the month and hour of each row).
        months: calendar months of the split.
        episode_hours: episode length in hours.

    Returns:
        Sorted row indices (int64), possibly empty.
    """
    months = set(months)
    in_split = np.isin(district.month, list(months))
    total = len(in_split)
    # outside[t]: rows t..t+L-1 contain a row outside the split (prefix sums of the complement).
    outside = np.concatenate([[0], np.cumsum(~in_split)])
    starts = np.arange(total - episode_hours)  # leaves row start + L for the last observation
    clean = outside[starts + episode_hours] - outside[starts] == 0
    first_hour = district.hour[starts] == 1
    return starts[clean & first_hour]


def padded_starts(starts: np.ndarray) -> tuple[np.ndarray, int]:
    """Pad a start table to ``MAX_STARTS`` entries (repeating the first) for a fixed params shape.

    Args:
        starts: non-empty start rows.

    Returns:
        ``(table, count)``: ``(MAX_STARTS,)`` int32 table whose first ``count`` entries are ``starts``.
    """
    table = np.full(MAX_STARTS, starts[0], dtype=np.int32)
    table[: len(starts)] = starts
    return table, len(starts)


def month_blocks(district: District, months: Iterable[int]) -> list[Window]:
    """Maximal runs of consecutive rows whose month is in ``months``, in time order.

    Args:
        district: the data set.
        months: calendar months.

    Returns:
        One ``Window`` per contiguous run.
    """
    inside = np.isin(district.month, list(set(months))).astype(np.int8)
    edges = np.diff(np.concatenate([[0], inside, [0]]))
    begins, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    return [Window(int(b), int(e - b)) for b, e in zip(begins, ends, strict=True)]
