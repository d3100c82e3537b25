"""What a run saves so a junction can be decided later without SUMO: each signal's layout as its
agents observe it (green phases, approaches and their capacities, crossings, which approaches and
crossings each phase serves, the programme's green durations, yellow and minimum green), read once
per network from a short simulation (``LayoutProbe``), with the reward the agents learnt beside it.
"""

from __future__ import annotations

import json
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from decisions.errors import InputError
from decisions.mobility.traffic.control import BaseController
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.scenarios import Scenario
from decisions.mobility.traffic.sensing import green_crossings, green_vehicle_links

JUNCTIONS_STEM = "junctions"
JUNCTIONS_FILE = f"{JUNCTIONS_STEM}.msgpack"
"""The run's junctions and reward, as its agents learnt them."""


def _programme_durations(net_file: Path, ts_id: str) -> dict[str, float]:
    """Each phase state of the signal's first programme in the net and its duration (s), first kept."""
    for logic in ET.parse(net_file).getroot().iter("tlLogic"):
        if logic.get("id") == ts_id:
            durations: dict[str, float] = {}
            for phase in logic.iter("phase"):
                durations.setdefault(str(phase.get("state")), float(phase.get("duration", "0")))
            return durations
    return {}


def junction(ts: Any, net_file: Path) -> dict[str, Any]:
    """A sumo-rl signal's layout as plain JSON (module docstring)."""
    from decisions.mobility.traffic.env import lane_capacities
    from decisions.mobility.traffic.rewards import layout_of

    layout = layout_of(ts)
    capacity = lane_capacities(ts)
    states = [p.state for p in ts.green_phases]
    durations = _programme_durations(net_file, ts.id)
    lanes = list(layout.in_lanes)
    return {
        "phases": states,
        "durations_s": [durations.get(s, 0.0) for s in states],
        "approaches": lanes,
        "capacity": [capacity[lane] for lane in lanes],
        "crossings": [c.edge for c in layout.crossings],
        "phase_approaches": [sorted({lanes.index(link.in_lane) for link in green_vehicle_links(layout, s)})
                             for s in states],
        "phase_crossings": [[k for k, c in enumerate(layout.crossings) if c in green_crossings(layout, s)]
                            for s in states],
        "green_links": [sum(ch in "Gg" for ch in s) for s in states],
        "yellow_s": float(ts.yellow_time), "min_green_s": float(ts.min_green), "delta_s": float(ts.delta_time),
    }


class LayoutProbe(BaseController):
    """A controller that writes every signal's ``junction`` to ``path`` when the episode starts, then
    keeps the phases."""

    name = "layout_probe"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def reset(self, env: Any) -> None:
        """Write the layouts."""
        net_file = Path(env.episode_spec.net_file)
        layouts = {ts_id: junction(ts, net_file) for ts_id, ts in env.traffic_signals.items()}
        self.path.write_text(json.dumps(layouts))


def network_junctions(scenario: Scenario, pedestrians: bool, demand: Demand, cache_dir: Path | None) -> dict[str, Any]:
    """Every signal's layout on a scenario's net (with pedestrians or without), by signal id, from a
    two-decision simulation."""
    from decisions.mobility.traffic.simulate import simulate

    with tempfile.TemporaryDirectory(prefix="traffic-junctions-") as folder:
        path = Path(folder) / "junctions.json"
        simulate(scenario, LayoutProbe(path), demand, pedestrians=pedestrians, seconds=2 * scenario.delta_time,
                 cache_dir=cache_dir)
        return json.loads(path.read_text())


def save_junctions(path: Path, junctions: dict[str, Any]) -> None:
    """Write the run's junctions (``{"networks": ..., "gamma": ..., "reward_scale": ...}``) as msgpack."""
    from flax import serialization

    path.write_bytes(serialization.msgpack_serialize(junctions))


@dataclass(frozen=True)
class Junction:
    """One signal's saved layout as arrays (``junction``'s fields)."""

    phases: tuple[str, ...]
    durations_s: np.ndarray
    approaches: tuple[str, ...]
    capacity: np.ndarray
    crossings: tuple[str, ...]
    serves: np.ndarray
    """``(P, L)`` float: 1 where the phase gives an approach green."""
    serves_crossing: np.ndarray
    """``(P, K)`` float: 1 where the phase gives a crossing green."""
    green_links: np.ndarray
    yellow_s: float
    min_green_s: float

    @classmethod
    def of(cls, d: dict[str, Any]) -> Junction:
        """From its saved description (``junction``'s)."""
        phases, lanes, crossings = len(d["phases"]), len(d["approaches"]), len(d["crossings"])
        serves, serves_crossing = np.zeros((phases, lanes)), np.zeros((phases, crossings))
        for p, (approaches, crossed) in enumerate(zip(d["phase_approaches"], d["phase_crossings"], strict=True)):
            serves[p, approaches] = 1.0
            serves_crossing[p, crossed] = 1.0
        return cls(tuple(d["phases"]), np.asarray(d["durations_s"], float), tuple(d["approaches"]),
                   np.asarray(d["capacity"], float), tuple(d["crossings"]), serves, serves_crossing,
                   np.asarray(d["green_links"], float), float(d["yellow_s"]), float(d["min_green_s"]))


def read_junctions(run_folder: Path) -> dict[str, Any]:
    """The saved junctions file.

    Raises:
        InputError: (``run``) the run saved none (recorded before decisions could be taken).
    """
    path = run_folder / JUNCTIONS_FILE
    if not path.is_file():
        raise InputError("run", "it saved no junction layouts (recorded before decisions could be taken)")
    from flax import serialization

    return serialization.msgpack_restore(path.read_bytes())
