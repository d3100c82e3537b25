"""Webster's fixed-time plans from route-file flows, played by a clock through sumo-rl's actions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from decisions.errors import InputError
from decisions.mobility.traffic.control import BaseController
from decisions.mobility.traffic.env import EpisodeSpec
from decisions.mobility.traffic.flows import SATURATION_FLOW, lane_flows, route_counts
from decisions.mobility.traffic.rewards import layout_of
from decisions.mobility.traffic.sensing import green_crossings, green_vehicle_links

__all__ = ["Webster", "WebsterPlan", "webster_timing"]


@dataclass(frozen=True)
class WebsterPlan:
    """A signal's clocked plan: green-phase indices and their slot lengths (s) in cycle order.

    Attributes:
        phases: sumo-rl green-phase index of each stage.
        slots: seconds each stage is selected (green + its yellow/lost time), multiples of delta.
        ratios: critical flow ratio ``y`` of each stage.
        webster_cycle: Webster's optimal cycle ``C0`` before clipping and rounding (s).
    """

    phases: tuple[int, ...]
    slots: tuple[int, ...]
    ratios: tuple[float, ...]
    webster_cycle: float

    @property
    def cycle(self) -> int:
        """Cycle length played (s)."""
        return sum(self.slots)

    def phase_at(self, elapsed: float) -> int:
        """The stage's green phase ``elapsed`` seconds after the episode began."""
        tau = elapsed % self.cycle
        edges = np.cumsum(self.slots)
        return self.phases[int(np.searchsorted(edges, tau, side="right"))]


def webster_timing(
    ratios: Sequence[float],
    lost_time_per_stage: float,
    *,
    delta_time: int,
    min_slot: int,
    max_cycle: float = 120.0,
    max_load: float = 0.9,
) -> tuple[float, tuple[int, ...]]:
    """Webster's optimal cycle and the stages' slots, rounded to decisions: ``(C0, slots)``.

    ``C0 = (1.5 L + 5) / (1 - Y)`` with ``L = n * lost_time_per_stage`` and ``Y = sum(ratios)``
    (``max_cycle`` when ``Y >= max_load``), clipped to ``[n * min_slot, max_cycle]``; effective
    green ``C - L`` is split in proportion to the ratios (evenly when ``Y = 0``), each slot is its
    green plus the lost time, rounded to a multiple of ``delta_time`` and at least ``min_slot``.
    """
    n = len(ratios)
    total_lost = n * lost_time_per_stage
    load = float(sum(ratios))
    c0 = max_cycle if load >= max_load else (1.5 * total_lost + 5.0) / (1.0 - load)
    cycle = float(np.clip(c0, n * min_slot, max_cycle))
    green = max(cycle - total_lost, 0.0)
    shares = [r / load for r in ratios] if load > 0 else [1.0 / n] * n
    slots = []
    for share in shares:
        raw = green * share + lost_time_per_stage
        slots.append(max(min_slot, int(round(raw / delta_time)) * delta_time))
    return c0, tuple(slots)


class Webster(BaseController):
    """Fixed-time plans by Webster's method, played by a clock in sumo-rl's action space.

    Stages are sumo-rl's green phases grouped by the vehicle links they give green, each played by
    its member with the most green crossings; crossings no stage serves get pedestrian stages with
    the shortest slot. Flows are the route file's expected vehicles per hour per incoming lane in the
    episode window times ``vehicle_scale``; a stage's critical ratio is ``max over its green lanes of
    q / (saturation_flow * k)`` (``k``: stages serving the lane); lost time per stage is
    ``yellow_time + startup_lost_s``; cycles are at most ``max_cycle`` s (docs/notes/traffic.md lists
    the approximations).
    """

    name = "webster"

    def __init__(
        self, saturation_flow: float = SATURATION_FLOW, startup_lost_s: float = 2.0, max_cycle: float = 120.0
    ):
        if saturation_flow <= 0:
            raise InputError("controller.saturation_flow", f"must be > 0, got {saturation_flow}")
        self.saturation_flow = saturation_flow
        self.startup_lost_s = startup_lost_s
        self.max_cycle = max_cycle
        self.plans: dict[str, WebsterPlan] = {}
        self._begin = 0.0

    def reset(self, env: Any) -> None:
        """Estimate the flows from the episode's route files and compute every signal's plan."""
        spec: EpisodeSpec = env.episode_spec
        sumo = env.sumo

        def route_of(src: str, dst: str) -> tuple[str, ...]:
            try:
                return tuple(sumo.simulation.findRoute(src, dst).edges)
            except Exception:  # noqa: BLE001 - libsumo/traci raise their own error types for unknown edges
                return ()

        counts = route_counts(spec.route_files, spec.begin, spec.end, route_of)
        self._begin = float(spec.begin)
        self.plans = {
            ts_id: self._plan(ts, counts, spec.seconds, spec.demand.vehicle_scale)
            for ts_id, ts in env.traffic_signals.items()
        }

    def _plan(
        self, ts: Any, counts: dict[tuple[str, ...], float], seconds: float, scale: float
    ) -> WebsterPlan:
        layout = layout_of(ts)
        sumo = ts.sumo
        links = [
            (
                link.in_lane,
                sumo.lane.getEdgeID(link.in_lane),
                link.out_lane,
                sumo.lane.getEdgeID(link.out_lane),
            )
            for link in layout.vehicle_links
        ]
        flows = lane_flows(links, counts, seconds)
        groups: dict[frozenset[int], list[int]] = {}
        for i, phase in enumerate(ts.green_phases):
            signature = frozenset(link.index for link in green_vehicle_links(layout, phase.state))
            if signature:
                groups.setdefault(signature, []).append(i)
        stages = [
            max(members, key=lambda i: (len(green_crossings(layout, ts.green_phases[i].state)), -i))
            for members in groups.values()
        ]
        stages += _pedestrian_stages(ts, layout, stages)
        served = [
            {link.in_lane for link in green_vehicle_links(layout, ts.green_phases[i].state)} for i in stages
        ]
        k = {lane: sum(lane in s for s in served) for lane in flows}
        ratios = [
            max((scale * flows[lane] / (self.saturation_flow * k[lane]) for lane in lanes), default=0.0)
            for lanes in served
        ]
        lost = ts.yellow_time + self.startup_lost_s
        c0, slots = webster_timing(
            ratios, lost, delta_time=ts.delta_time, min_slot=2 * ts.delta_time, max_cycle=self.max_cycle
        )
        return WebsterPlan(tuple(stages), slots, tuple(ratios), c0)

    def act(self, env: Any) -> dict[str, int]:
        """Each signal's stage at the current time of its cycle."""
        elapsed = env.sim_step - self._begin
        return {ts_id: self.plans[ts_id].phase_at(elapsed) for ts_id in env.traffic_signals}


def _pedestrian_stages(ts: Any, layout: Any, stages: list[int]) -> list[int]:
    """Phases to add so that every crossing of ``ts`` gets green at least once per cycle."""
    served = {c.edge for i in stages for c in green_crossings(layout, ts.green_phases[i].state)}
    missing = {c.edge for c in layout.crossings} - served
    extra: list[int] = []
    while missing:
        gains = [len(missing & {c.edge for c in green_crossings(layout, p.state)}) for p in ts.green_phases]
        best = int(np.argmax(gains))
        if gains[best] == 0:
            break
        extra.append(best)
        missing -= {c.edge for c in green_crossings(layout, ts.green_phases[best].state)}
    return extra
