"""Demand: seeded vehicle variations and Poisson pedestrian flows across every signalised junction."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from decisions.errors import InputError
from decisions.mobility.traffic.sumo_setup import ensure_sumo

__all__ = [
    "PEDESTRIAN_TYPE",
    "Demand",
    "PedestrianWalk",
    "pedestrian_routes",
    "pedestrian_walks",
    "sumo_args",
]

PEDESTRIAN_TYPE = "walker"
"""The vType of generated pedestrians (SUMO's default pedestrian, with a compensating ``scale``)."""
_NEAR_NODE_M = 20.0
"""Walks start and end this far from the junction (or mid-edge on shorter edges)."""


@dataclass(frozen=True)
class Demand:
    """One draw of demand: a SUMO seed, a vehicle scale, depart jitter and pedestrian rates.

    Attributes:
        seed: SUMO's random seed (``--seed``); distinct seeds are distinct demand draws.
        vehicle_scale: factor on the vehicle demand (SUMO ``--scale``: drops or clones vehicles).
        depart_jitter_s: each vehicle's depart is shifted by a uniform offset in
            ``[0, depart_jitter_s]`` seconds (SUMO ``--random-depart-offset``, pedestrians' too); 0 keeps the schedule.
        ped_rate_per_hour: mean pedestrians per hour of each pedestrian flow (0: no pedestrians).
    """

    seed: int = 0
    vehicle_scale: float = 1.0
    depart_jitter_s: float = 0.0
    ped_rate_per_hour: float = 120.0

    def __post_init__(self) -> None:
        """Validate the fields (raises ``InputError`` naming ``demand.<field>``)."""
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise InputError("demand.seed", f"must be a non-negative integer, got {self.seed!r}")
        for name in ("vehicle_scale", "depart_jitter_s", "ped_rate_per_hour"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise InputError(f"demand.{name}", f"must be a finite number, got {value!r}")
            if value < 0:
                raise InputError(f"demand.{name}", f"must be >= 0, got {value}")
        if self.vehicle_scale == 0:
            raise InputError("demand.vehicle_scale", "must be > 0 (SUMO's --scale also scales pedestrians)")

    @property
    def has_pedestrians(self) -> bool:
        """Whether this demand adds pedestrian flows."""
        return self.ped_rate_per_hour > 0


@dataclass(frozen=True)
class PedestrianWalk:
    """A pedestrian flow across one signalised junction.

    Attributes:
        tls_id: the traffic light controlling the junction.
        node_id: the junction.
        from_edge: the edge the walk starts on.
        to_edge: the edge the walk ends on.
        depart_pos: start position on ``from_edge`` (m).
        arrival_pos: end position on ``to_edge`` (m).
        crossings: the junction's crossings on sumolib's shortest walking path.
    """

    tls_id: str
    node_id: str
    from_edge: str
    to_edge: str
    depart_pos: float
    arrival_pos: float
    crossings: tuple[str, ...]


def sumo_args(demand: Demand, *, include_seed: bool = True) -> list[str]:
    """SUMO command-line arguments that realise ``demand``'s vehicle part and seed.

    Args:
        demand: the demand draw.
        include_seed: include ``--seed`` (sumo-rl passes it itself from ``sumo_seed``).

    Returns:
        ``["--seed", s, "--scale", x, "--random-depart-offset", t]`` (the last pair only when
        ``depart_jitter_s > 0``).
    """
    args = ["--seed", str(demand.seed)] if include_seed else []
    args += ["--scale", repr(float(demand.vehicle_scale))]
    if demand.depart_jitter_s > 0:
        args += ["--random-depart-offset", repr(float(demand.depart_jitter_s))]
    return args


def _walkable(edge: object) -> bool:
    return edge.getFunction() == "" and any(lane.allows("pedestrian") for lane in edge.getLanes())


def _bearing(edge: object, node: object) -> float:
    """Direction (radians) from the junction along ``edge``, away from the junction."""
    shape = edge.getShape()
    if edge.getToNode() is node:
        (x0, y0), (x1, y1) = shape[-1], shape[-2]
    else:
        (x0, y0), (x1, y1) = shape[0], shape[1]
    return math.atan2(y1 - y0, x1 - x0)


def _near_node(edge: object, node: object) -> float:
    """A position on ``edge`` close to ``node`` (m from the edge's start)."""
    length = edge.getLength()
    offset = min(_NEAR_NODE_M, length / 2)
    return round(length - offset if edge.getToNode() is node else offset, 2)


def _angle_gap(a: float, b: float) -> float:
    return abs((a - b + math.pi) % (2 * math.pi) - math.pi)


def _tls_nodes(net: object) -> dict[str, list[object]]:
    """The junctions each traffic light controls (those its vehicle connections cross)."""
    nodes: dict[str, list[object]] = {}
    for tls in net.getTrafficLights():
        found: dict[str, object] = {}
        for in_lane, _out_lane, _index in tls.getConnections():
            node = in_lane.getEdge().getToNode()
            found.setdefault(node.getID(), node)
        nodes[tls.getID()] = list(found.values())
    return nodes


def pedestrian_walks(net_file: Path, tls_ids: list[str] | None = None) -> list[PedestrianWalk]:
    """Choose one walk per approach of each signalised junction that needs one of its crossings.

    For each junction, the walkable edges touching it are grouped into approaches (by the node at
    their other end). From each approach, the walk goes to the edge of another approach whose
    direction is most nearly opposite, among those whose shortest walking path (sumolib,
    pedestrian class, internal edges) uses a crossing of this junction and no other junction's
    internal edges.

    Args:
        net_file: a network with sidewalks and crossings (:func:`scenarios.pedestrian_network`).
        tls_ids: traffic lights to serve (default: all).

    Returns:
        The walks, in traffic-light and approach order.

    Raises:
        InputError: ``demand.net_file`` when the network has no crossings at a requested light.
    """
    ensure_sumo()
    import sumolib

    net = sumolib.net.readNet(str(net_file), withPedestrianConnections=True)
    by_tls = _tls_nodes(net)
    wanted = list(by_tls) if tls_ids is None else list(tls_ids)
    walks: list[PedestrianWalk] = []
    for tls_id in wanted:
        if tls_id not in by_tls:
            raise InputError("demand.tls_ids", f"{tls_id!r} is not a traffic light of {Path(net_file).name}")
        found = []
        for node in by_tls[tls_id]:
            found += _junction_walks(net, tls_id, node)
        if not found:
            raise InputError(
                "demand.net_file", f"no walk crosses a crossing at {tls_id!r} (is it a pedestrian net?)"
            )
        walks += found
    return walks


def _junction_walks(net: object, tls_id: str, node: object) -> list[PedestrianWalk]:
    prefix = f":{node.getID()}_"
    edges = [e for e in node.getIncoming() + node.getOutgoing() if _walkable(e)]
    approaches: dict[str, list[object]] = {}
    for edge in edges:
        other = edge.getFromNode() if edge.getToNode() is node else edge.getToNode()
        approaches.setdefault(other.getID(), []).append(edge)
    walks = []
    for starts in approaches.values():
        best: tuple[float, float, PedestrianWalk] | None = None
        for start in starts:
            for dest in edges:
                if dest in starts:
                    continue
                path, cost = net.getShortestPath(
                    start, dest, vClass="pedestrian", withInternal=True, ignoreDirection=True
                )
                if not path:
                    continue
                internal = [e for e in path if e.getFunction() in ("crossing", "walkingarea", "internal")]
                crossings = tuple(e.getID() for e in internal if e.getFunction() == "crossing")
                if not crossings or any(not e.getID().startswith(prefix) for e in internal):
                    continue
                gap = _angle_gap(_bearing(start, node), _bearing(dest, node))
                walk = PedestrianWalk(
                    tls_id, node.getID(), start.getID(), dest.getID(),
                    _near_node(start, node), _near_node(dest, node), crossings,
                )  # fmt: skip
                key = (gap, -cost)
                if best is None or key > best[:2]:
                    best = (gap, -cost, walk)
        if best is not None:
            walks.append(best[2])
    return walks


def pedestrian_routes(
    net_file: Path, tls_ids: list[str] | None, demand: Demand, begin: float, end: float, out_path: Path
) -> Path:
    """Write ``out_path``: Poisson pedestrian flows crossing each signalised junction (``tls_ids``; None: all).

    Each walk of :func:`pedestrian_walks` becomes a ``<personFlow>`` from ``begin`` to ``end`` at
    ``demand.ped_rate_per_hour``; the pedestrian type's ``scale = 1 / vehicle_scale`` cancels SUMO's
    ``--scale`` on persons, so the rate holds whatever the vehicle scale. A rate of 0 writes no flows.
    """
    root = ET.Element("routes")
    if demand.has_pedestrians:
        rate = demand.ped_rate_per_hour / 3600.0
        ET.SubElement(
            root, "vType", id=PEDESTRIAN_TYPE, vClass="pedestrian", scale=repr(1.0 / demand.vehicle_scale)
        )
        for k, walk in enumerate(pedestrian_walks(net_file, tls_ids)):
            flow = ET.SubElement(
                root,
                "personFlow",
                id=f"ped{k}_{walk.tls_id}",
                type=PEDESTRIAN_TYPE,
                begin=f"{begin:g}",
                end=f"{end:g}",
                period=f"exp({rate:.10g})",
                departPos=f"{walk.depart_pos:g}",
            )
            ET.SubElement(
                flow,
                "walk",
                attrib={"from": walk.from_edge, "to": walk.to_edge, "arrivalPos": f"{walk.arrival_pos:g}"},
            )
    ET.indent(root)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out_path, encoding="utf-8", xml_declaration=True)
    return out_path
