"""A network of one's own in a CoMP job's ``[network]`` table: its cells (a CSV, one row per cell) and its
users (a count, a count per cell, or a CSV of start points), checked when the spec is read (no JAX).

The cells file's columns, lower case, in any order (``CELL_COLUMNS``; the last three optional)::

    x_m,y_m,tx_dbm,bandwidth_mhz,frequency_mhz,height_m,users
    120,80,30,9,2500,25,3

``x_m`` / ``y_m``: metres east and north of the map's south-west corner; ``tx_dbm`` the transmit power
(dBm); ``bandwidth_mhz`` (MHz); ``frequency_mhz`` the carrier (MHz, default mobile-env's 2500);
``height_m`` the antenna height (m, default 50); ``users`` the users starting about that cell. The
users file has ``x_m,y_m``, one row per user, where each one starts. ``read_cells`` / ``read_users``
refuse a file's first bad cell naming the file, row and column, with the unit the file is likely in.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import Field, field_validator, model_validator

from decisions.core.settings import Settings
from decisions.telecom.comp.sim.catalog import OwnTask
from decisions.telecom.comp.sim.constants import MAX_CELLS, MAX_USERS, SCHEDULERS
from decisions.telecom.comp.sim.settings import BS_FREQUENCY_MHZ, BS_HEIGHT_M, UE_VELOCITY

if TYPE_CHECKING:
    from decisions.core.csv_table import CsvTable

CELL_COLUMNS = ("x_m", "y_m", "tx_dbm", "bandwidth_mhz", "frequency_mhz", "height_m", "users")
"""The cells file's columns: four required, then ``frequency_mhz``, ``height_m`` and ``users`` optional."""
USER_COLUMNS = ("x_m", "y_m")
"""The users file's columns."""
MAX_COORDINATE_M = 20_000.0
"""Largest coordinate taken (20 km: the path-loss models' range)."""
AREA_MARGIN = 0.1
"""The default area: the box from (0, 0) holding every cell and user, this share larger."""

_COORDINATE_HINT = "the file may be in cm or mm, not metres"
_RANGES: dict[str, tuple[float, float, bool, float | None, str]] = {
    "x_m": (0.0, MAX_COORDINATE_M, False, None, _COORDINATE_HINT),
    "y_m": (0.0, MAX_COORDINATE_M, False, None, _COORDINATE_HINT),
    "tx_dbm": (-30.0, 60.0, False, None, "the file may be in mW or W, not dBm"),
    "bandwidth_mhz": (0.0, 1_000.0, True, None, "the file may be in Hz or kHz, not MHz"),
    "frequency_mhz": (0.0, 100_000.0, True, BS_FREQUENCY_MHZ, "the file may be in kHz or Hz, not MHz"),
    "height_m": (0.0, 1_000.0, True, BS_HEIGHT_M, "the file may be in cm, not metres"),
}
"""Each number column's plausible range (low, high, low excluded), default when optional, and the
unit hint of a value above it."""
MIN_FREQUENCY_MHZ = 100.0
"""Lowest carrier taken: a smaller value is likely in GHz."""

Point = tuple[float, float]
Coordinate = Annotated[float, Field(ge=0.0, le=MAX_COORDINATE_M)]


class OwnCell(Settings):
    """One cell of one's own network (the cells file's row)."""

    x_m: Coordinate = Field(description="Metres east of the map's south-west corner.")
    y_m: Coordinate = Field(description="Metres north of the map's south-west corner.")
    tx_dbm: float = Field(ge=-30.0, le=60.0, description="Transmit power (dBm).")
    bandwidth_mhz: float = Field(gt=0.0, le=1_000.0, description="Bandwidth (MHz).")
    frequency_mhz: float = Field(BS_FREQUENCY_MHZ, ge=MIN_FREQUENCY_MHZ, le=100_000.0, description="Carrier (MHz).")
    height_m: float = Field(BS_HEIGHT_M, gt=0.0, le=1_000.0, description="Antenna height (m).")
    users: int | None = Field(None, ge=0, le=MAX_USERS, description="Users starting about this cell.")


class OwnNetwork(Settings):
    """The ``[network]`` table: one's own cells and users, evaluated beside the study's tasks (an empty
    table: none)."""

    section = "network"

    name: str = Field("own", min_length=1, max_length=40, description="Label of the network (its task is own-<name>-...).")
    cells_file: str | None = Field(None, description="CSV of the cells (module docstring), read into cells.")
    cells: tuple[OwnCell, ...] = Field((), max_length=MAX_CELLS, description="The cells (from cells_file).")
    users: int | None = Field(None, ge=1, le=MAX_USERS, description="Users, uniform over the area at each episode's start.")
    users_file: str | None = Field(None, description="CSV of each user's start point (x_m, y_m), read into user_positions.")
    user_positions: tuple[tuple[Coordinate, Coordinate], ...] = Field(
        (), max_length=MAX_USERS, description="Each user's start point (m; from users_file).")
    scheduler: str = Field("resource_fair", description=f"One of {', '.join(SCHEDULERS)}.")
    velocity: float = Field(UE_VELOCITY, ge=0.0, le=100.0, description="Users' speed (m per step; 0: they stay).")
    area_m: tuple[float, float] | None = Field(
        None, description="Width and height (m) of the area users roam (default: the box holding every cell "
                          f"and user, {AREA_MARGIN:.0%} larger).")

    @field_validator("name")
    @classmethod
    def _label(cls, name: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_]+", name):
            raise ValueError(f"letters, digits and _ only, got {name!r}")
        return name

    @field_validator("scheduler")
    @classmethod
    def _scheduler(cls, scheduler: str) -> str:
        if scheduler not in SCHEDULERS:
            raise ValueError(f"unknown scheduler {scheduler!r}; choose one of {', '.join(SCHEDULERS)}")
        return scheduler

    @model_validator(mode="after")
    def _complete(self) -> OwnNetwork:
        if not self.cells:
            if any(getattr(self, key) != info.default for key, info in type(self).model_fields.items()):
                raise ValueError("cells_file: give the cells file (one row per cell)")
            return self  # no network of one's own
        per_cell = [c.users for c in self.cells]
        sources = [self.users is not None, any(u is not None for u in per_cell), bool(self.user_positions)]
        if sum(sources) != 1:
            raise ValueError("users: give the users one way: users = <count>, a users column in the cells file, "
                             "or a users_file of start points")
        if sources[1] and not 1 <= sum(u or 0 for u in per_cell) <= MAX_USERS:
            raise ValueError(f"cells_file: the users column must add up to 1..{MAX_USERS}")
        width, height = self.area
        if not (math.isfinite(width) and math.isfinite(height) and width > 0 and height > 0):
            raise ValueError(f"area_m: width and height must be positive, got {self.area_m}")
        outside = [p for p in self._points() if p[0] > width or p[1] > height]
        if outside:
            raise ValueError(f"area_m: {outside[0]} lies outside the area {width:g} x {height:g} m")
        return self

    def _points(self) -> list[Point]:
        return [(c.x_m, c.y_m) for c in self.cells] + [tuple(p) for p in self.user_positions]

    @property
    def area(self) -> Point:
        """Width and height (m) of the area users roam."""
        if self.area_m is not None:
            return self.area_m
        width, height = np.ceil(np.asarray(self._points(), np.float64).max(axis=0) * (1 + AREA_MARGIN))
        return max(float(width), 1.0), max(float(height), 1.0)

    def task(self) -> OwnTask:
        """The network as a ``sim.catalog.OwnTask`` (the simulator loads only when its params are built)."""
        cells = tuple((c.x_m, c.y_m, c.tx_dbm, c.bandwidth_mhz * 1e6, c.frequency_mhz, c.height_m) for c in self.cells)
        home, spread = _starts(self)
        return OwnTask(n_cells=len(cells), n_users=len(home) or int(self.users or 0), scheduler=self.scheduler,
                       label=self.name, cells=cells, size=self.area, user_home=home, user_spread=spread,
                       velocity=self.velocity)


def _starts(network: OwnNetwork) -> tuple[tuple[Point, ...], tuple[float, ...]]:
    """Each user's start point and half-side: given points exactly, a cell's users in the square of half
    the distance to the nearest other cell (half the area's smaller side for a lone cell); none for a count."""
    if network.user_positions:
        return tuple((float(x), float(y)) for x, y in network.user_positions), (0.0,) * len(network.user_positions)
    if network.users is not None:
        return (), ()
    xy = np.array([(c.x_m, c.y_m) for c in network.cells], np.float64)
    gaps = np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1)) + np.diag(np.full(len(xy), np.inf))
    reach = gaps.min(axis=1) / 2 if len(xy) > 1 else np.array([min(network.area) / 2])
    home: list[Point] = []
    spread: list[float] = []
    for cell, r in zip(network.cells, reach, strict=True):
        home += [(cell.x_m, cell.y_m)] * (cell.users or 0)
        spread += [float(r)] * (cell.users or 0)
    return tuple(home), tuple(spread)


def read_cells(source: str | Path, field: str = "network.cells_file") -> list[dict[str, Any]]:
    """The cells of a cells file as ``OwnCell`` fields, in file order.

    Raises:
        InputError: on ``field``: an unreadable file, a missing or unknown column, a bad or implausible
            value, two cells at one place (naming the file, row and column), more than ``MAX_CELLS`` rows.
    """
    from decisions.core.csv_table import CsvTable  # pandas: only for a file

    table = CsvTable.read(source, field=field, required=CELL_COLUMNS[:4], optional=CELL_COLUMNS[4:])
    if len(table) > MAX_CELLS:
        raise table.refuse_file(f"it has {len(table)} cells; the simulator holds at most {MAX_CELLS}")
    columns = {name: _numbers(table, name) for name in _RANGES if table.has(name)}
    frequency = columns.get("frequency_mhz")
    low = np.flatnonzero(frequency < MIN_FREQUENCY_MHZ) if frequency is not None else []
    if len(low):
        raise table.refuse(int(low[0]), "frequency_mhz", f"{frequency[low[0]]:g} is below {MIN_FREQUENCY_MHZ:g} "
                                                         "(the file may be in GHz, not MHz)")
    _refuse_repeated_places(table, columns["x_m"], columns["y_m"])
    if table.has("users"):
        columns["users"] = table.integers("users", 0, MAX_USERS)
    return [{name: (int(values[i]) if name == "users" else float(values[i])) for name, values in columns.items()}
            for i in range(len(table))]


def read_users(source: str | Path, field: str = "network.users_file") -> list[list[float]]:
    """Each user's start point ``[x_m, y_m]`` of a users file, in file order.

    Raises:
        InputError: on ``field``: an unreadable file, a missing or unknown column, a bad or implausible
            value (naming the file, row and column), more than ``MAX_USERS`` rows.
    """
    from decisions.core.csv_table import CsvTable  # pandas: only for a file

    table = CsvTable.read(source, field=field, required=USER_COLUMNS)
    if len(table) > MAX_USERS:
        raise table.refuse_file(f"it has {len(table)} users; the simulator holds at most {MAX_USERS}")
    x, y = (_numbers(table, name) for name in USER_COLUMNS)
    return [[float(a), float(b)] for a, b in zip(x, y, strict=True)]


def _numbers(table: CsvTable, name: str) -> np.ndarray:
    low, high, above, blank, hint = _RANGES[name]
    return table.numbers(name, low=low, high=high, above=above, blank=blank, unit_hint=hint)


def _refuse_repeated_places(table: CsvTable, x: np.ndarray, y: np.ndarray) -> None:
    """Refuse the first cell whose ``(x, y)`` an earlier cell has."""
    seen: dict[Point, int] = {}
    for index, place in enumerate(zip(x.tolist(), y.tolist(), strict=True)):
        if place in seen:
            raise table.refuse(index, "x_m", f"({place[0]:g}, {place[1]:g}) is also the place of the cell "
                                             f"of row {table.rows[seen[place]]}")
        seen[place] = index


def read_files(data: dict[str, Any]) -> None:
    """Read a spec's ``network`` table's ``cells_file`` and ``users_file`` (when given as text) into its
    ``cells`` and ``user_positions``, in place.

    Raises:
        InputError: the file's first bad cell; ``cells`` or ``user_positions`` given beside its file.
    """
    from decisions.errors import InputError

    network = data.get("network")
    if not isinstance(network, dict):
        return
    for file_key, key, read in (("cells_file", "cells", read_cells), ("users_file", "user_positions", read_users)):
        if isinstance(network.get(file_key), str):
            if key in network:
                raise InputError(f"network.{key}", f"give the {key} or a {file_key}, not both")
            network[key] = read(network[file_key])
