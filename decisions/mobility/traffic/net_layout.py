"""What a study needs of a user's SUMO network, read from its ``.net.xml`` without SUMO: its signals
(checked to give sumo-rl something to control), the edges where vehicles enter and leave it, the turns
between edges and the fastest route between two edges; and a route file checked against it."""

from __future__ import annotations

import heapq
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from decisions.errors import InputError
from decisions.mobility.traffic.scenarios import net_root, xml_root

__all__ = ["Edge", "NetLayout", "check_routes", "read_layout"]

TURNS = {"s": "straight", "l": "left", "L": "left", "r": "right", "R": "right", "t": "turnaround"}
"""SUMO's connection directions (``dir``) by the turn they make (partial left/right count as left/right)."""
_CAR = "passenger"
_ROUTE_ATTRIBUTES = {"route": ("edges",), "vehicle": ("from", "to", "via"), "trip": ("from", "to", "via"),
                     "flow": ("from", "to", "via")}


@dataclass(frozen=True)
class Edge:
    """A normal edge cars may use: its end nodes and its free-flow travel time (s)."""

    id: str
    start: str
    end: str
    seconds: float


@dataclass(frozen=True)
class NetLayout:
    """A network's car edges, turns (``{from_edge: {to_edge: turn}}``), signals and all its edge ids."""

    file: Path
    edges: dict[str, Edge]
    turns: dict[str, dict[str, str]]
    signals: tuple[str, ...]
    edge_ids: frozenset[str]

    def _boundary(self, entering: bool) -> tuple[str, ...]:
        """Edges at the boundary: entering, no other car edge (but the reverse) ends where one starts;
        leaving, none starts where one ends."""
        touching: dict[str, list[Edge]] = {}
        for edge in self.edges.values():
            touching.setdefault(edge.end if entering else edge.start, []).append(edge)
        out = []
        for edge in self.edges.values():
            node, far = (edge.start, edge.end) if entering else (edge.end, edge.start)
            if all(other.id == edge.id or (other.start if entering else other.end) == far
                   for other in touching.get(node, ())):
                out.append(edge.id)
        return tuple(out)

    @property
    def approaches(self) -> tuple[str, ...]:
        """Edges where vehicles enter: no other car edge (but the reverse) ends where they start."""
        return self._boundary(entering=True)

    @property
    def exits(self) -> tuple[str, ...]:
        """Edges where vehicles leave: no other car edge (but the reverse) starts where they end."""
        return self._boundary(entering=False)

    def route(self, source: str, target: str) -> tuple[str, ...] | None:
        """The fastest route (by free-flow time) from edge ``source`` to edge ``target``, None if none."""
        best = {source: 0.0}
        before: dict[str, str] = {}
        queue = [(0.0, source)]
        while queue:
            time, edge = heapq.heappop(queue)
            if edge == target:
                path = [edge]
                while path[-1] != source:
                    path.append(before[path[-1]])
                return tuple(reversed(path))
            if time > best[edge]:
                continue
            for nxt in self.turns.get(edge, {}):
                arrive = time + self.edges[nxt].seconds
                if arrive < best.get(nxt, float("inf")):
                    best[nxt], before[nxt] = arrive, edge
                    heapq.heappush(queue, (arrive, nxt))
        return None


def _allows_cars(lane: ET.Element) -> bool:
    allow, disallow = lane.get("allow"), lane.get("disallow", "").split()
    if allow is not None:
        return _CAR in allow.split() or "all" in allow.split()
    return _CAR not in disallow and "all" not in disallow


def _number(lane: ET.Element, name: str, path: Path, field: str) -> float:
    """A lane's ``length`` or ``speed``, refused naming the lane when it is not a number."""
    try:
        value = float(lane.get(name, ""))
    except ValueError:
        value = float("nan")
    if not value >= 0:
        raise InputError(field, f"{path.name}, <lane id='{lane.get('id', '')}'>, attribute '{name}': "
                                f"{lane.get(name)!r} is not a non-negative number")
    return value


def _signals(root: ET.Element, label: str, field: str) -> tuple[str, ...]:
    """The traffic lights, each checked to have a green phase in its first programme (sumo-rl's actions)."""
    first: dict[str, ET.Element] = {}
    for logic in root.iter("tlLogic"):
        first.setdefault(logic.get("id", ""), logic)
    if not first:
        raise InputError(field, f"{label} has no traffic light (no <tlLogic>): sumo-rl has nothing to control "
                                "(mark junctions traffic_light, or convert with netconvert --tls.guess)")
    for tls, logic in first.items():
        states = [phase.get("state", "") for phase in logic.iter("phase")]
        if not any("y" not in s and s.count("r") + s.count("s") != len(s) for s in states):
            raise InputError(field, f"{label}, <tlLogic id='{tls}'>: no green phase for sumo-rl to choose")
    return tuple(first)


def read_layout(path: Path, field: str = "scenarios.net_file", label: str | None = None) -> NetLayout:
    """The layout of the SUMO network ``path``; ``InputError`` naming ``field`` and the network (``label``,
    default its file name) when it does not parse or has no traffic light with a green phase."""
    path = Path(path)
    root = net_root(path, field)
    edges: dict[str, Edge] = {}
    edge_ids = set()
    for elem in root.iter("edge"):
        if elem.get("function", "normal") != "normal":
            continue
        edge_ids.add(elem.get("id", ""))
        lanes = [lane for lane in elem.iter("lane") if _allows_cars(lane)]
        if lanes:
            seconds = max(_number(lane, "length", path, field) / max(_number(lane, "speed", path, field), 0.1)
                          for lane in lanes)
            edges[elem.get("id", "")] = Edge(elem.get("id", ""), elem.get("from", ""), elem.get("to", ""), seconds)
    turns: dict[str, dict[str, str]] = {}
    for conn in root.iter("connection"):
        src, dst = conn.get("from", ""), conn.get("to", "")
        if src in edges and dst in edges:
            turns.setdefault(src, {}).setdefault(dst, TURNS.get(conn.get("dir", ""), "straight"))
    return NetLayout(path, edges, turns, _signals(root, label or path.name, field), frozenset(edge_ids))


def check_routes(route_file: Path, layout: NetLayout, field: str = "scenarios.route_file") -> Path:
    """``route_file``, checked to be a SUMO route file whose routes, trips and flows name only edges of
    ``layout``'s network; ``InputError`` naming ``field``, the element and its attribute otherwise."""
    route_file = Path(route_file)
    root = xml_root(route_file, field, "routes", "a SUMO route file")
    for elem in root.iter():
        for attribute in _ROUTE_ATTRIBUTES.get(elem.tag, ()):
            unknown = [e for e in elem.get(attribute, "").split() if e not in layout.edge_ids]
            if unknown:
                raise InputError(field, f"{route_file.name}, <{elem.tag} id='{elem.get('id', '')}'>, attribute "
                                        f"'{attribute}': unknown edge '{unknown[0]}' (not in {layout.file.name})")
    return route_file
