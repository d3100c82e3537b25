"""Vehicle flows per route and per signal lane, estimated from SUMO route files."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from decisions.errors import InputError

__all__ = ["SATURATION_FLOW", "lane_flows", "route_counts"]

SATURATION_FLOW = 1800.0
"""Saturation flow, vehicles per hour per lane (Webster's planning value)."""

_EXP = re.compile(r"^exp\((.+)\)$")


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _flow_rate(elem: ET.Element) -> float | None:
    """Vehicles per second of a ``<flow>`` (None when it cannot be told)."""
    if (vph := _float(elem.get("vehsPerHour"))) is not None:
        return vph / 3600.0
    if (prob := _float(elem.get("probability"))) is not None:
        return prob
    period = elem.get("period")
    if period is not None:
        match = _EXP.match(period)
        if match:
            return _float(match.group(1))
        value = _float(period)
        return 1.0 / value if value else None
    begin, end, number = _float(elem.get("begin")) or 0.0, _float(elem.get("end")), _float(elem.get("number"))
    if number is not None and end is not None and end > begin:
        return number / (end - begin)
    return None


def route_counts(
    route_files: Iterable[Path], begin: float, end: float, route_of: Callable[[str, str], tuple[str, ...]]
) -> dict[tuple[str, ...], float]:
    """``{edges: expected count}``: vehicles per route departing in ``[begin, end)`` of SUMO route files.

    ``route_of(from_edge, to_edge)`` routes ``<trip>`` and from/to flows; persons are ignored. Raises
    ``InputError`` (``scenario.route_file``) when a file does not parse.
    """
    named: dict[str, tuple[str, ...]] = {}
    counts: dict[tuple[str, ...], float] = defaultdict(float)
    routed: dict[tuple[str, str], tuple[str, ...]] = {}

    def edges_of(elem: ET.Element) -> tuple[str, ...]:
        nested = elem.find("route")
        if nested is not None and nested.get("edges"):
            return tuple(nested.get("edges", "").split())
        if elem.get("route") in named:
            return named[elem.get("route", "")]
        src, dst = elem.get("from"), elem.get("to")
        if src and dst:
            if (src, dst) not in routed:
                routed[(src, dst)] = tuple(route_of(src, dst))
            return routed[(src, dst)]
        return ()

    for file in route_files:
        try:
            for _, elem in ET.iterparse(file, events=("end",)):
                tag = elem.tag
                if tag == "route" and elem.get("id") and elem.get("edges"):
                    named[elem.get("id", "")] = tuple(elem.get("edges", "").split())
                elif tag in ("vehicle", "trip"):
                    depart = _float(elem.get("depart"))
                    if depart is not None and begin <= depart < end and (edges := edges_of(elem)):
                        counts[edges] += 1.0
                    elem.clear()
                elif tag == "flow":
                    rate = _flow_rate(elem)
                    lo = max(begin, _float(elem.get("begin")) or 0.0)
                    hi = min(end, _float(elem.get("end")) if elem.get("end") else math.inf)
                    if rate and hi > lo and (edges := edges_of(elem)):
                        counts[edges] += rate * (hi - lo)
                    elem.clear()
                elif tag in ("person", "personFlow"):
                    elem.clear()
        except ET.ParseError as exc:
            raise InputError("scenario.route_file", f"{file} does not parse ({exc})") from None
    return dict(counts)


def lane_flows(
    links: Iterable[tuple[str, str, str, str]], counts: dict[tuple[str, ...], float], seconds: float
) -> dict[str, float]:
    """``{in_lane: vehicles per hour}`` on each incoming lane of a signal's ``links``.

    ``links`` are ``(in_lane, in_edge, out_lane, out_edge)``; a route passing edge ``E`` then ``F``
    splits its ``counts`` (:func:`route_counts`, over ``seconds``) evenly over the links from ``E`` to ``F``.
    """
    links = list(links)
    by_move: dict[tuple[str, str], list[str]] = defaultdict(list)
    for in_lane, in_edge, _out_lane, out_edge in links:
        by_move[(in_edge, out_edge)].append(in_lane)
    move_counts: dict[tuple[str, str], float] = defaultdict(float)
    for edges, count in counts.items():
        for pair in zip(edges, edges[1:], strict=False):
            if pair in by_move:
                move_counts[pair] += count
    flows = {in_lane: 0.0 for in_lane, *_ in links}
    for move, lanes in by_move.items():
        share = move_counts.get(move, 0.0) / len(lanes)
        for lane in lanes:
            flows[lane] += share * 3600.0 / seconds
    return flows
