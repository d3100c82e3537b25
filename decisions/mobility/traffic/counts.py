"""Vehicle counts per approach (a CSV) turned into SUMO flows on routes from each approach.

The file's columns, lower case, in any order (``REQUIRED`` then the optional ``PERIOD`` and ``SHARES``)::

    edge,vehicles_per_hour,begin,end,left,straight,right
    101,620,07:00,08:00,0.2,0.6,0.2

``edge``: an approach edge of the network (one where vehicles enter it at its boundary);
``vehicles_per_hour``: vehicles entering there per hour; ``begin`` / ``end``: the period the count holds
(a clock time ``07:00`` or seconds on the simulation's clock; without them a count holds for the whole
episode), one edge's periods in order and not overlapping; ``left`` / ``straight`` / ``right``: shares
of the vehicles turning each way at every junction where they have a choice (fractions, summing to 1;
default a third each).

Routes: each approach gets the fastest route (free-flow time) to every exit edge it can reach, except
its own road back. Its vehicles are split over those routes in proportion to the product, over the
junctions a route passes where more than one turn is open, of its turn's share among the open turns'
shares. Each route's vehicles arrive as a Poisson flow (SUMO ``period="exp(rate)"``), so each demand
seed is a different draw.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from decisions.core.csv_table import CsvTable
from decisions.errors import InputError
from decisions.mobility.traffic.net_layout import NetLayout

__all__ = ["MAX_VEHICLES_PER_HOUR", "Count", "counts_routes", "read_counts", "route_shares"]

REQUIRED = ("edge", "vehicles_per_hour")
PERIOD = ("begin", "end")
SHARES = ("left", "straight", "right")
MAX_VEHICLES_PER_HOUR = 10_000.0
"""Most vehicles per hour taken on one approach (a wide road's capacity); more is likely a day's count."""
_PER_DAY = "the file may count vehicles per day: give vehicles per hour"
_PER_SECOND = ("is below 1 vehicle per hour, as is every count of the file: it may be in vehicles per "
               "second (multiply by 3600)")
_FIELD = "scenarios.counts_file"


@dataclass(frozen=True)
class Count:
    """One row: vehicles per hour entering at ``edge`` from ``begin`` to ``end`` (s), and turn shares."""

    edge: str
    vehicles_per_hour: float
    begin: float
    end: float
    shares: dict[str, float]
    row: int


def read_counts(path: Path, layout: NetLayout, window: tuple[float, float], field: str = _FIELD) -> list[Count]:
    """The counts of ``path`` on ``layout``'s approaches, in the simulated ``window`` (begin, end s).

    Raises:
        InputError: on ``field``, naming the file, row and column: a missing or unknown column, an edge
            not in the network or not an approach, a negative or implausible count (unit hint), periods
            out of order or overlapping, shares outside [0, 1] or not summing to 1, no period in ``window``.
    """
    table = CsvTable.read(path, field=field, required=REQUIRED, optional=(*PERIOD, *SHARES))
    for group in (PERIOD, SHARES):
        present = [c for c in group if table.has(c)]
        if present and len(present) < len(group):
            missing = next(c for c in group if not table.has(c))
            raise table.refuse_file(f"missing column {missing!r} (give {', '.join(group)} together)")
    edges = _edges(table, layout)
    rates = table.numbers("vehicles_per_hour", low=0.0, high=MAX_VEHICLES_PER_HOUR, unit_hint=_PER_DAY)
    positive = np.flatnonzero(rates > 0)
    if len(positive) and rates[positive].max() < 1.0:
        raise table.refuse(int(positive[0]), "vehicles_per_hour", f"{rates[positive[0]]:g} {_PER_SECOND}")
    begins, ends = _periods(table, edges, window)
    shares = _shares(table)
    counts = [Count(edges[i], float(rates[i]), float(begins[i]), float(ends[i]), shares[i], int(table.rows[i]))
              for i in range(len(table))]
    if not any(c.begin < window[1] and c.end > window[0] for c in counts):
        first = min(c.begin for c in counts)
        raise table.refuse_file(f"no period overlaps the simulated {window[0]:g}-{window[1]:g} s "
                                f"(scenarios.begin and scenarios.seconds): set scenarios.begin = {first:g}?")
    return counts


def _edges(table: CsvTable, layout: NetLayout) -> np.ndarray:
    edges = table.text("edge")
    approaches = layout.approaches
    listed = ", ".join(approaches[:20]) + (", ..." if len(approaches) > 20 else "")
    for index, edge in enumerate(edges):
        if edge not in layout.edge_ids:
            raise table.refuse(index, "edge", f"unknown edge {edge!r} (not in {layout.file.name}; its approach "
                                              f"edges: {listed})")
        if edge not in approaches:
            raise table.refuse(index, "edge", f"{edge!r} is not an approach at the network's boundary, where "
                                              f"vehicles enter (approach edges: {listed})")
    return edges


def _periods(table: CsvTable, edges: np.ndarray, window: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's period: its ``begin`` and ``end`` (after the begin, one edge's in order), else ``window``."""
    if not table.has("begin"):
        seen: dict[str, int] = {}
        for index, edge in enumerate(edges):
            if edge in seen:
                raise table.refuse(index, "edge", f"{edge!r} is counted again (first in row "
                                                  f"{table.rows[seen[edge]]}): give periods with begin and end")
            seen[edge] = index
        return np.full(len(table), window[0]), np.full(len(table), window[1])
    begins, ends = table.clock_seconds("begin"), table.clock_seconds("end")
    last: dict[str, int] = {}
    for index, edge in enumerate(edges):
        if ends[index] <= begins[index]:
            raise table.refuse(index, "end", f"{table.cells['end'][index]} is not after the row's begin "
                                             f"{table.cells['begin'][index]}")
        before = last.get(edge)
        if before is not None and begins[index] < ends[before]:
            raise table.refuse(index, "begin", f"{table.cells['begin'][index]} comes before the end "
                                               f"{table.cells['end'][before]} of {edge!r}'s period in row "
                                               f"{table.rows[before]} (periods in order, not overlapping)")
        last[edge] = index
    return begins, ends


def _shares(table: CsvTable) -> list[dict[str, float]]:
    if not table.has("left"):
        return [dict.fromkeys(SHARES, 1.0 / 3.0)] * len(table)
    hint = "shares are fractions of the approach's vehicles: 0.25, not 25 (%)"
    columns = {name: table.numbers(name, low=0.0, high=1.0, unit_hint=hint) for name in SHARES}
    out = []
    for index in range(len(table)):
        row = {name: float(columns[name][index]) for name in SHARES}
        if not math.isclose(sum(row.values()), 1.0, abs_tol=0.01):
            raise table.refuse(index, "right", f"left + straight + right = {sum(row.values()):g}, not 1")
        out.append(row)
    return out


def route_shares(layout: NetLayout, edge: str, shares: dict[str, float]) -> dict[tuple[str, ...], float]:
    """``{route: share}`` of the vehicles entering at ``edge`` (module docstring), summing to 1 (empty when
    no exit can be reached or the shares close every route)."""
    start = layout.edges[edge]
    weights: dict[tuple[str, ...], float] = {}
    for exit_edge in layout.exits:
        target = layout.edges[exit_edge]
        if (target.start, target.end) == (start.end, start.start):
            continue  # the approach's own road back
        route = layout.route(edge, exit_edge)
        if route is None:
            continue
        weight = 1.0
        for here, there in zip(route, route[1:], strict=False):
            open_turns = set(layout.turns[here].values())
            if len(open_turns) > 1:
                total = sum(shares.get(turn, 0.0) for turn in open_turns)
                weight *= shares.get(layout.turns[here][there], 0.0) / total if total > 0 else 0.0
        weights[route] = weight
    total = sum(weights.values())
    return {route: w / total for route, w in weights.items() if w > 0} if total > 0 else {}


def _flows(counts: list[Count], splits: list[dict[tuple[str, ...], float]], source: str) -> ET.ElementTree:
    root = ET.Element("routes")
    root.append(ET.Comment(f" flows from the counts of {source}: one per approach, period and route "))
    route_ids: dict[tuple[str, ...], str] = {}
    flows = []
    for count, split in zip(counts, splits, strict=True):
        for route, share in split.items():
            if route not in route_ids:
                route_ids[route] = f"r{len(route_ids)}_{route[0]}_{route[-1]}"
                ET.SubElement(root, "route", id=route_ids[route], edges=" ".join(route))
            rate = count.vehicles_per_hour * share / 3600.0
            if rate > 0:
                flows.append((count.begin, len(flows), route_ids[route], rate, count))
    for begin, number, route_id, rate, count in sorted(flows):
        ET.SubElement(root, "flow", id=f"f{number}_row{count.row}", route=route_id, begin=f"{begin:g}",
                      end=f"{count.end:g}", period=f"exp({rate:.9g})", departLane="best", departSpeed="max")
    ET.indent(root)
    return ET.ElementTree(root)


def counts_routes(path: Path, layout: NetLayout, window: tuple[float, float], cache_dir: Path) -> Path:
    """The SUMO route file of the counts ``path`` on ``layout``'s network (:func:`read_counts`, then flows
    as the module docstring says), built once per counts, network and window, and written atomically."""
    path = Path(path)
    counts = read_counts(path, layout, window)
    h = hashlib.sha256(path.read_bytes() + Path(layout.file).read_bytes() + repr(window).encode())
    target = Path(cache_dir) / f"{path.stem}.{h.hexdigest()[:16]}.rou.xml"
    splits = [route_shares(layout, count.edge, count.shares) for count in counts]
    for count, split in zip(counts, splits, strict=True):
        if not split:
            raise InputError(_FIELD, f"{path.name}, row {count.row}, column 'edge': no exit of the network can be "
                                     f"reached from {count.edge!r} with the row's turn shares")
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        partial = Path(tmp) / "flows.rou.xml"
        _flows(counts, splits, path.name).write(partial, encoding="UTF-8", xml_declaration=True)
        os.replace(partial, target)
    return target
