"""Stateless rewards for sumo-rl signals that count pedestrians as well as vehicles.

sumo-rl's built-in rewards iterate ``lane.getLastStepVehicleIDs``, so they ignore pedestrians,
and its default ``diff-waiting-time`` keeps state between calls. :class:`FairReward` is a pure
function of the current simulation state (a frozen, picklable object, so it can be sent to a
worker process), passed to sumo-rl as ``reward_fn``:

``r = -(veh_weight * Q_veh + ped_weight * Q_ped + fairness_weight * W_max / wait_scale_s)``

- ``Q_veh``: halting vehicles on the signal's approaches (its incoming vehicle lanes and the
  lanes upstream within ``sensing.APPROACH_M``; sumo-rl's ``queue`` counts the incoming lanes only);
- ``Q_ped``: pedestrians standing before the signal's crossings;
- ``W_max``: the longest current wait of any single vehicle on those approaches or pedestrian at
  those crossings (s), which penalises starving a movement or a crossing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from decisions.errors import InputError
from decisions.mobility.traffic.sensing import (
    SignalLayout,
    longest_vehicle_wait,
    pedestrian_census,
    queued_vehicles,
    signal_layout,
)

__all__ = ["FairReward", "fair_reward", "layout_of", "vehicle_only_reward"]


def layout_of(ts: Any) -> SignalLayout:
    """The :class:`SignalLayout` of a sumo-rl ``TrafficSignal``, read once and kept on it."""
    layout = getattr(ts, "_layout", None)
    if layout is None:
        layout = signal_layout(ts.sumo, ts.id)
        ts._layout = layout
    return layout


@dataclass(frozen=True)
class FairReward:
    """Minus weighted vehicle queue, pedestrians waiting and the longest single wait.

    Attributes:
        veh_weight: weight of halting vehicles.
        ped_weight: weight of waiting pedestrians.
        fairness_weight: weight of the longest single wait (in units of ``wait_scale_s``).
        wait_scale_s: seconds that make one unit of the longest wait.
    """

    veh_weight: float = 1.0
    ped_weight: float = 1.0
    fairness_weight: float = 1.0
    wait_scale_s: float = 60.0

    def terms(self, ts: Any) -> tuple[float, float, float]:
        """The unweighted terms ``(Q_veh, Q_ped, W_max)`` of signal ``ts`` now."""
        layout = layout_of(ts)
        queue = queued_vehicles(ts.env, layout)
        census = pedestrian_census(ts.env) if layout.crossings else {}
        peds = [census[c.edge] for c in layout.crossings if c.edge in census]
        waiting = float(sum(count for count, _ in peds))
        longest = max([longest for _, longest in peds], default=0.0)
        if self.fairness_weight > 0:
            longest = max(longest, longest_vehicle_wait(ts.sumo, layout.sensed_lanes))
        return queue, waiting, longest

    def __call__(self, ts: Any) -> float:
        """The reward of sumo-rl ``TrafficSignal`` ``ts`` now."""
        queue, waiting, longest = self.terms(ts)
        return -(
            self.veh_weight * queue
            + self.ped_weight * waiting
            + self.fairness_weight * longest / self.wait_scale_s
        )


def fair_reward(
    veh_weight: float = 1.0, ped_weight: float = 1.0, fairness_weight: float = 1.0, wait_scale_s: float = 60.0
) -> FairReward:
    """A validated :class:`FairReward` (sumo-rl ``reward_fn``): weights of halting vehicles, waiting
    pedestrians and the longest single wait per ``wait_scale_s``.

    Raises ``InputError``: ``reward.<name>`` for a negative or non-finite weight, ``reward.weights``
    when all weights are zero, ``reward.wait_scale_s`` when not positive.
    """
    weights = {"veh_weight": veh_weight, "ped_weight": ped_weight, "fairness_weight": fairness_weight}
    for name, value in weights.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise InputError(f"reward.{name}", f"must be a finite number, got {value!r}")
        if value < 0:
            raise InputError(f"reward.{name}", f"must be >= 0, got {value}")
    if all(value == 0 for value in weights.values()):
        raise InputError("reward.weights", "veh_weight, ped_weight and fairness_weight are all zero")
    if not (isinstance(wait_scale_s, int | float) and math.isfinite(wait_scale_s) and wait_scale_s > 0):
        raise InputError("reward.wait_scale_s", f"must be > 0, got {wait_scale_s!r}")
    return FairReward(float(veh_weight), float(ped_weight), float(fairness_weight), float(wait_scale_s))


def vehicle_only_reward() -> FairReward:
    """Minus the halting vehicles on the signal's approaches (sumo-rl's ``queue`` over approaches), pedestrians ignored."""
    return FairReward(veh_weight=1.0, ped_weight=0.0, fairness_weight=0.0)
