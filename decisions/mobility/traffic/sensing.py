"""What a signal can sense: its links and lanes, vehicle queues, and pedestrians waiting at crossings.

A traffic light's links (``trafficlight.getControlledLinks``) are of two kinds on a pedestrian
net: *vehicle* links (lane -> lane through the junction) and *crossing* links (walking area
``:<junction>_w<k>_0`` -> crossing ``:<junction>_c<k>_0``). sumo-rl's ``ts.lanes`` mixes the
walking-area lanes into the incoming lanes and ``ts.out_lanes`` the crossing lanes into the
outgoing ones; :func:`signal_layout` separates them.

Pedestrians waiting at a crossing (:func:`pedestrian_census`): persons standing
(``person.getWaitingTime > 0``) on a walking area (road id ``:<junction>_w<k>``) whose next edge is
the crossing. ``getWaitingTime`` resets when the person moves, so it is the current stand's
length. The census makes one pass over all persons per simulation second and is cached on the
environment (attribute ``_ped_census``), so all signals of a step share it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CrossingLink",
    "SignalLayout",
    "VehicleLink",
    "green_crossings",
    "green_vehicle_links",
    "lane_halting",
    "longest_vehicle_wait",
    "pedestrian_census",
    "signal_layout",
]

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
    """

    vehicle_links: tuple[VehicleLink, ...]
    crossings: tuple[CrossingLink, ...]
    in_lanes: tuple[str, ...]
    out_lanes: tuple[str, ...]


def signal_layout(sumo: Any, ts_id: str) -> SignalLayout:
    """Read a traffic light's vehicle links, crossings and vehicle lanes from SUMO.

    Args:
        sumo: the traci/libsumo connection (``env.sumo``).
        ts_id: the traffic light id.

    Returns:
        The layout.
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
    return SignalLayout(tuple(vehicle), unique_crossings, in_lanes, out_lanes)


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
    now = env.sim_step
    cached = getattr(env, "_ped_census", None)
    if cached is not None and cached[0] == now:
        return cached[1]
    sumo = env.sumo
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
    env._ped_census = (now, census)
    return census
