"""Baseline signal controllers, all acting through the same sumo-rl environment and demand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from decisions.errors import InputError
from decisions.mobility.traffic.control import BaseController, Controller, choose_phase
from decisions.mobility.traffic.env import EpisodeSpec
from decisions.mobility.traffic.programs import actuated_programs
from decisions.mobility.traffic.rewards import layout_of
from decisions.mobility.traffic.sensing import (
    approach_halting,
    green_crossings,
    green_vehicle_links,
    lane_halting,
    pedestrian_census,
)
from decisions.mobility.traffic.webster import Webster, WebsterPlan, webster_timing

__all__ = [
    "CONTROLLERS",
    "Actuated",
    "BaseController",
    "Controller",
    "FixedTime",
    "MaxPressure",
    "PedAwareGreedy",
    "QueueGreedy",
    "Webster",
    "WebsterPlan",
    "make_controller",
    "webster_timing",
]


class FixedTime(BaseController):
    """The net's own fixed-time programme (sumo-rl ``fixed_ts=True``): netconvert's regeneration on pedestrian nets."""

    name = "fixed"
    fixed_ts = True


class Actuated(BaseController):
    """SUMO's actuated control of the net's phases (an additional ``type="actuated"`` programme).

    Args:
        min_dur: minimum green of the main phases (s).
        max_dur: maximum green of the main phases (s).
    """

    name = "actuated"
    fixed_ts = True

    def __init__(self, min_dur: int = 10, max_dur: int = 50) -> None:
        if min_dur <= 0 or max_dur < min_dur:
            raise InputError("controller.max_dur", f"need 0 < min_dur <= max_dur, got {min_dur}, {max_dur}")
        self.min_dur = min_dur
        self.max_dur = max_dur

    def additional_files(self, spec: EpisodeSpec) -> tuple[Path, ...]:
        """The actuated programmes of ``spec.net_file``."""
        out = spec.tripinfo.parent / "actuated.add.xml"
        return (actuated_programs(spec.net_file, out, min_dur=self.min_dur, max_dur=self.max_dur),)


class MaxPressure(BaseController):
    """Max-pressure: per green phase, sum over its green vehicle links of in-queue minus out-queue."""

    name = "max_pressure"

    def act(self, env: Any) -> dict[str, int]:
        """The max-pressure phase of every signal."""
        actions = {}
        for ts_id, ts in env.traffic_signals.items():
            layout = layout_of(ts)
            halting = lane_halting(ts.sumo, [*layout.in_lanes, *layout.out_lanes])
            scores = [
                sum(
                    halting[link.in_lane] - halting[link.out_lane]
                    for link in green_vehicle_links(layout, p.state)
                )
                for p in ts.green_phases
            ]
            actions[ts_id] = choose_phase(ts, scores)
        return actions


class QueueGreedy(BaseController):
    """The phase serving the most vehicles queued on its green incoming lanes' approaches."""

    name = "queue_greedy"

    def act(self, env: Any) -> dict[str, int]:
        """The greedy phase of every signal."""
        return {ts_id: choose_phase(ts, self.scores(env, ts)) for ts_id, ts in env.traffic_signals.items()}

    def scores(self, env: Any, ts: Any) -> list[float]:
        """Halting vehicles served by each green phase of ``ts``."""
        layout = layout_of(ts)
        halting = approach_halting(env, layout)
        return [
            float(
                sum(halting[lane] for lane in {link.in_lane for link in green_vehicle_links(layout, p.state)})
            )
            for p in ts.green_phases
        ]


class PedAwareGreedy(QueueGreedy):
    """QueueGreedy plus ``ped_weight`` per pedestrian waiting at a crossing the phase gives green.

    Args:
        ped_weight: value of one waiting pedestrian relative to one halting vehicle (>= 0).
    """

    name = "ped_greedy"

    def __init__(self, ped_weight: float = 1.0) -> None:
        if not ped_weight >= 0:
            raise InputError("controller.ped_weight", f"must be >= 0, got {ped_weight}")
        self.ped_weight = float(ped_weight)

    def scores(self, env: Any, ts: Any) -> list[float]:
        """Halting vehicles plus weighted waiting pedestrians served by each green phase."""
        base = super().scores(env, ts)
        layout = layout_of(ts)
        census = pedestrian_census(env) if layout.crossings else {}
        return [
            score
            + self.ped_weight * sum(census.get(c.edge, (0, 0.0))[0] for c in green_crossings(layout, p.state))
            for score, p in zip(base, ts.green_phases, strict=True)
        ]


CONTROLLERS: dict[str, type[BaseController]] = {
    "fixed": FixedTime,
    "actuated": Actuated,
    "webster": Webster,
    "max_pressure": MaxPressure,
    "queue_greedy": QueueGreedy,
    "ped_greedy": PedAwareGreedy,
}
"""Controller names (for CLIs and surveys) and their classes (constructed with defaults)."""


def make_controller(name: str | Controller) -> Controller:
    """A fresh controller by name (a :class:`Controller` is returned as is).

    Raises:
        InputError: ``controller`` for an unknown name.
    """
    if not isinstance(name, str):
        return name
    if name not in CONTROLLERS:
        raise InputError(
            "controller", f"unknown controller {name!r}; expected one of {', '.join(CONTROLLERS)}"
        )
    return CONTROLLERS[name]()
