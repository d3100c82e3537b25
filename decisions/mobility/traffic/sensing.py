"""What a signal can sense: its links and lanes, vehicle queues, and pedestrians waiting at crossings."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = [
    "APPROACH_M",
    "CrossingLink",
    "SignalLayout",
    "VehicleLink",
    "approach_halting",
    "approach_lanes",
    "green_crossings",
    "green_vehicle_links",
    "lane_halting",
    "longest_vehicle_wait",
    "pedestrian_census",
    "pending_by_edge",
    "queued_vehicles",
    "sensed_queue",
    "signal_layout",
]

APPROACH_M = 150.0
"""Metres upstream of the stop line that a signal senses on each incoming lane (module docstring)."""

_WALKINGAREA = re.compile(r"^:.+_w\d+$")
_CROSSING_LANE = re.compile(r"^(:.+_c\d+)_\d+$")
_GREEN = frozenset("Gg")


@dataclass(frozen=True)
class VehicleLink:
    """A vehicle movement through the junction: link ``index`` from ``in_lane`` to ``out_lane``."""

    index: int
    in_lane: str
    out_lane: str


@dataclass(frozen=True)
class CrossingLink:
    """A pedestrian crossing signalled by link ``index``; ``edge`` is the crossing's edge id."""

    index: int
    edge: str


@dataclass(frozen=True)
class SignalLayout:
    """The links and lanes of one traffic light.

    Attributes:
        vehicle_links: vehicle movements, in link-index order.
        crossings: pedestrian crossings, in link-index order.
        in_lanes: incoming vehicle lanes (sumo-rl's ``ts.lanes`` order, walking areas removed).
        out_lanes: outgoing vehicle lanes (sorted).
        approaches: per incoming lane (same order), the lane and the lanes upstream of it within
            :data:`APPROACH_M` (module docstring).
        approach_length_m: per incoming lane, the summed length of its approach's lanes.
    """

    vehicle_links: tuple[VehicleLink, ...]
    crossings: tuple[CrossingLink, ...]
    in_lanes: tuple[str, ...]
    out_lanes: tuple[str, ...]
    approaches: tuple[tuple[str, ...], ...] = ()
    approach_length_m: tuple[float, ...] = ()

    def approach(self, lane: str) -> tuple[str, ...]:
        """The approach of incoming lane ``lane`` (the lane alone when approaches were not read)."""
        if not self.approaches:
            return (lane,)
        return self.approaches[self.in_lanes.index(lane)]

    @property
    def sensed_lanes(self) -> tuple[str, ...]:
        """Every lane of every approach, once each."""
        return tuple(dict.fromkeys(lane for lane_set in (self.approaches or (self.in_lanes,)) for lane in lane_set))


def signal_layout(sumo: Any, ts_id: str, approach_m: float = APPROACH_M) -> SignalLayout:
    """Read a traffic light's vehicle links, crossings, vehicle lanes and approaches from SUMO.

    Args:
        sumo: the traci/libsumo connection (``env.sumo``).
        ts_id: the traffic light id.
        approach_m: metres upstream of the stop line in each approach (0: the lane alone).
    """
    vehicle: list[VehicleLink] = []
    crossings: list[CrossingLink] = []
    for index, links in enumerate(sumo.trafficlight.getControlledLinks(ts_id)):
        for in_lane, out_lane, _via in links:
            match = _CROSSING_LANE.match(out_lane)
            if match and _WALKINGAREA.match(in_lane.rsplit("_", 1)[0]):
                crossings.append(CrossingLink(index, match.group(1)))
            elif not in_lane.startswith(":"):
                vehicle.append(VehicleLink(index, in_lane, out_lane))
    in_lanes = tuple(dict.fromkeys(link.in_lane for link in vehicle))
    out_lanes = tuple(sorted({link.out_lane for link in vehicle}))
    unique_crossings = tuple({c.edge: c for c in crossings}.values())
    approaches = approach_lanes(sumo, in_lanes, approach_m)
    lengths = tuple(float(sum(sumo.lane.getLength(lane) for lane in lanes)) for lanes in approaches)
    return SignalLayout(tuple(vehicle), unique_crossings, in_lanes, out_lanes, approaches, lengths)


def _upstream_map(sumo: Any) -> tuple[dict[str, list[str]], frozenset[str]]:
    """Per normal lane, the normal lanes that feed it; and every lane a traffic light controls."""
    feeders: dict[str, list[str]] = {}
    for lane in sumo.lane.getIDList():
        if lane.startswith(":"):
            continue
        for link in sumo.lane.getLinks(lane):
            feeders.setdefault(link[0], []).append(lane)
    controlled = frozenset(
        lane for tls in sumo.trafficlight.getIDList() for lane in sumo.trafficlight.getControlledLanes(tls)
    )
    return feeders, controlled


def approach_lanes(sumo: Any, in_lanes: tuple[str, ...], approach_m: float = APPROACH_M) -> tuple[tuple[str, ...], ...]:
    """Per incoming lane, the lane and the lanes upstream of it whose downstream end is within ``approach_m``.

    The search walks back through the lanes that feed each lane (any junction without a traffic
    light) and stops at lanes another traffic light controls (they are that signal's to sense).
    """
    if approach_m <= 0:
        return tuple((lane,) for lane in in_lanes)
    feeders, controlled = _upstream_map(sumo)
    out = []
    for start in in_lanes:
        found = {start: 0.0}  # lane -> distance from the stop line to its downstream end
        frontier = [start]
        while frontier:
            lane = frontier.pop()
            reach = found[lane] + sumo.lane.getLength(lane)
            if reach >= approach_m:
                continue
            for up in feeders.get(lane, []):
                if up not in found and up not in controlled:
                    found[up] = reach
                    frontier.append(up)
        out.append(tuple(found))
    return tuple(out)


_T = TypeVar("_T")


def _per_step(env: Any, attribute: str, compute: Callable[[Any], _T]) -> _T:
    """``compute(env.sumo)``, cached on ``env`` (``attribute``) for the current simulation second."""
    now = env.sim_step
    cached = getattr(env, attribute, None)
    if cached is not None and cached[0] == now:
        return cached[1]
    value = compute(env.sumo)
    setattr(env, attribute, (now, value))
    return value


def _pending_by_edge(sumo: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for veh in sumo.simulation.getPendingVehicles():
        route = sumo.vehicle.getRoute(veh)
        if route:
            counts[route[0]] = counts.get(route[0], 0) + 1
    return counts


def pending_by_edge(env: Any) -> dict[str, int]:
    """Vehicles due but not yet inserted (the insertion backlog), by the first edge of their route.

    Cached per simulation second on ``env`` (attribute ``_pending_by_edge``), shared by all signals,
    their observations and their rewards.

    Args:
        env: a running sumo-rl environment (``env.sumo``, ``env.sim_step``).
    """
    return _per_step(env, "_pending_by_edge", _pending_by_edge)


def _edge(lane: str) -> str:
    return lane.rsplit("_", 1)[0]


def sensed_queue(env: Any, layout: SignalLayout, halting: dict[str, int] | None = None) -> dict[str, float]:
    """Per sensed lane, halting vehicles plus its share of the insertion backlog of its edge.

    The backlog of an edge is shared equally among its sensed lanes (vehicles waiting to enter do
    not have a lane yet).

    Args:
        env: a running sumo-rl environment.
        layout: the signal's layout.
        halting: :func:`lane_halting` of ``layout.sensed_lanes`` when the caller has read it already.
    """
    lanes = layout.sensed_lanes
    halting = lane_halting(env.sumo, lanes) if halting is None else halting
    queue: dict[str, float] = {lane: float(halting[lane]) for lane in lanes}
    backlog = pending_by_edge(env)
    if backlog:
        per_edge: dict[str, int] = {}
        for lane in lanes:
            per_edge[_edge(lane)] = per_edge.get(_edge(lane), 0) + 1
        for lane in lanes:
            queue[lane] += backlog.get(_edge(lane), 0) / per_edge[_edge(lane)]
    return queue


def approach_halting(env: Any, layout: SignalLayout) -> dict[str, float]:
    """Vehicles queued on each incoming lane's approach: halting (speed < 0.1 m/s) or waiting to be inserted."""
    queue = sensed_queue(env, layout)
    return {lane: sum(queue[x] for x in layout.approach(lane)) for lane in layout.in_lanes}


def queued_vehicles(env: Any, layout: SignalLayout) -> float:
    """Vehicles queued on all the signal's approaches (each lane counted once; backlog included)."""
    return float(sum(sensed_queue(env, layout).values()))


def green_vehicle_links(layout: SignalLayout, state: str) -> tuple[VehicleLink, ...]:
    """Vehicle links with green (``G`` or ``g``) in a signal state string."""
    return tuple(link for link in layout.vehicle_links if state[link.index] in _GREEN)


def green_crossings(layout: SignalLayout, state: str) -> tuple[CrossingLink, ...]:
    """Crossings with green in a signal state string."""
    return tuple(c for c in layout.crossings if state[c.index] in _GREEN)


def lane_halting(sumo: Any, lanes: tuple[str, ...] | list[str]) -> dict[str, int]:
    """Halting vehicles (speed < 0.1 m/s) on each lane."""
    return {lane: sumo.lane.getLastStepHaltingNumber(lane) for lane in lanes}


def longest_vehicle_wait(sumo: Any, lanes: tuple[str, ...] | list[str]) -> float:
    """The longest current waiting time (s) of a vehicle on the lanes (0 when none waits)."""
    longest = 0.0
    for lane in lanes:
        if sumo.lane.getLastStepHaltingNumber(lane) == 0:
            continue
        for veh in sumo.lane.getLastStepVehicleIDs(lane):
            longest = max(longest, sumo.vehicle.getWaitingTime(veh))
    return longest


def pedestrian_census(env: Any) -> dict[str, tuple[int, float]]:
    """Pedestrians standing before each crossing: ``{crossing edge: (count, longest wait s)}``.

    Cached per simulation second on ``env`` (attribute ``_ped_census``), shared by all signals.
    Crossings without waiting pedestrians are absent.

    Args:
        env: a running sumo-rl environment (``env.sumo``, ``env.sim_step``).
    """
    return _per_step(env, "_ped_census", _pedestrian_census)


def _pedestrian_census(sumo: Any) -> dict[str, tuple[int, float]]:
    census: dict[str, tuple[int, float]] = {}
    for person in sumo.person.getIDList():
        if not _WALKINGAREA.match(sumo.person.getRoadID(person)):
            continue
        wait = sumo.person.getWaitingTime(person)
        if wait <= 0:
            continue
        crossing = sumo.person.getNextEdge(person)
        if not crossing:
            continue
        count, longest = census.get(crossing, (0, 0.0))
        census[crossing] = (count + 1, max(longest, wait))
    return census
