"""Episode metrics from SUMO's trip information: delays per group, fairness, throughput.

Sources: ``--tripinfo-output`` with ``--tripinfo-output.write-unfinished true`` (one
``<tripinfo>`` per inserted vehicle, ``arrival="-1"`` while still driving; one ``<personinfo>``
per departed pedestrian with a ``<walk>`` per stage), and the vehicles never inserted, whose
delays are read from SUMO before the episode closes
(:func:`decisions.mobility.traffic.env.pending_depart_delays`) and passed in as ``pending_delays``.

Definitions:

- vehicle delay = ``timeLoss + departDelay`` per inserted vehicle (unfinished trips included),
  plus ``end - scheduled depart`` per vehicle never inserted: RESCO's convention, not SUMO's
  time loss alone;
- vehicle wait = ``waitingTime`` per trip (0 for never-inserted vehicles);
- pedestrian wait = the sum of ``waitingTime`` over a person's ``<walk>`` stages, for persons who
  departed; pedestrian time loss = the sum of ``timeLoss`` over the walks of persons whose every
  walk finished (SUMO writes 0 for unfinished walks); ``unfinished_pedestrians`` counts the rest;
- percentiles are numpy's linear-interpolation percentiles;
- Jain's index ``J(x) = (sum x)^2 / (n sum x^2)``, 1 when all ``x`` are equal, NaN for no ``x``;
  ``jain_individual`` is over every vehicle delay and pedestrian wait, ``jain_groups`` over the
  two group means (NaN unless both groups are non-empty);
- ``ped_veh_ratio`` = pedestrian mean wait / vehicle mean delay;
- throughput = vehicles / persons that arrived; ``unfinished_vehicles`` = vehicles of the demand
  so far that did not arrive (still driving + never inserted), ``uninserted_vehicles`` the latter.

Empty groups give NaN, never an exception.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from decisions.errors import InputError

__all__ = [
    "METRIC_NAMES",
    "TripRecords",
    "episode_metrics",
    "jain",
    "metrics_from_records",
    "read_tripinfo",
    "summary",
]

METRIC_NAMES: tuple[str, ...] = (
    "veh_count",
    "veh_delay_mean",
    "veh_delay_p95",
    "veh_delay_max",
    "veh_wait_mean",
    "veh_wait_p95",
    "veh_wait_max",
    "ped_count",
    "ped_wait_mean",
    "ped_wait_p95",
    "ped_wait_max",
    "ped_timeloss_mean",
    "ped_veh_ratio",
    "jain_individual",
    "jain_groups",
    "veh_throughput",
    "ped_throughput",
    "unfinished_vehicles",
    "uninserted_vehicles",
    "unfinished_pedestrians",
)
"""Keys of :func:`metrics_from_records`' result, in order."""


@dataclass
class TripRecords:
    """Per-individual values read from a tripinfo file (seconds).

    Attributes:
        veh_delay: ``timeLoss + departDelay`` per inserted vehicle.
        veh_wait: ``waitingTime`` per inserted vehicle.
        veh_arrived: vehicles that reached their destination.
        veh_unfinished: inserted vehicles still driving at the end.
        ped_wait: summed walk ``waitingTime`` per departed person.
        ped_timeloss: summed walk ``timeLoss`` per person whose every walk finished.
        ped_arrived: persons whose every walk finished.
        ped_unfinished: departed persons still walking at the end.
    """

    veh_delay: list[float] = field(default_factory=list)
    veh_wait: list[float] = field(default_factory=list)
    veh_arrived: int = 0
    veh_unfinished: int = 0
    ped_wait: list[float] = field(default_factory=list)
    ped_timeloss: list[float] = field(default_factory=list)
    ped_arrived: int = 0
    ped_unfinished: int = 0


def _num(elem: ET.Element, key: str) -> float:
    value = elem.get(key)
    return float(value) if value not in (None, "") else 0.0


def read_tripinfo(path: Path) -> TripRecords:
    """Read vehicle and pedestrian records from a SUMO tripinfo file.

    Vehicles with ``depart="-1"`` (written by ``write-undeparted``) are skipped: their delay
    must come from :func:`episode_metrics`' ``pending_delays``. Persons with ``depart="-1"``
    never started and are skipped too.

    Args:
        path: the ``--tripinfo-output`` file.

    Raises:
        InputError: ``tripinfo`` when the file is missing or does not parse.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError("tripinfo", f"{path} does not exist (did the simulation close?)")
    records = TripRecords()
    try:
        for _, elem in ET.iterparse(path, events=("end",)):
            if elem.tag == "tripinfo":
                if _num(elem, "depart") >= 0:
                    records.veh_delay.append(_num(elem, "timeLoss") + _num(elem, "departDelay"))
                    records.veh_wait.append(_num(elem, "waitingTime"))
                    if _num(elem, "arrival") >= 0:
                        records.veh_arrived += 1
                    else:
                        records.veh_unfinished += 1
                elem.clear()
            elif elem.tag == "personinfo":
                if _num(elem, "depart") >= 0:
                    walks = elem.findall("walk")
                    records.ped_wait.append(sum(_num(w, "waitingTime") for w in walks))
                    finished = bool(walks) and all(_num(w, "arrival") >= 0 for w in walks)
                    if finished:
                        records.ped_timeloss.append(sum(_num(w, "timeLoss") for w in walks))
                        records.ped_arrived += 1
                    else:
                        records.ped_unfinished += 1
                elem.clear()
    except ET.ParseError as exc:
        raise InputError("tripinfo", f"{path} does not parse ({exc})") from None
    return records


def jain(values: Iterable[float]) -> float:
    """Jain's fairness index ``(sum x)^2 / (n sum x^2)`` of non-negative values.

    Returns:
        A value in ``[1/n, 1]``; 1 when all values are equal (including all zero); NaN when empty.
    """
    x = np.asarray(list(values), dtype=float)
    if x.size == 0:
        return math.nan
    squares = float(np.sum(x * x))
    if squares == 0.0:
        return 1.0
    return float(np.sum(x) ** 2 / (x.size * squares))


def summary(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean, 95th percentile (linear interpolation) and max; NaNs when empty."""
    if len(values) == 0:
        return math.nan, math.nan, math.nan
    x = np.asarray(values, dtype=float)
    return float(x.mean()), float(np.percentile(x, 95)), float(x.max())


def metrics_from_records(records: TripRecords, pending_delays: Sequence[float] = ()) -> dict[str, float]:
    """Flat metrics (:data:`METRIC_NAMES`; NaN for statistics of empty groups) from trip records
    (:func:`read_tripinfo`) and the ``end - scheduled depart`` delays of vehicles never inserted.
    """
    veh_delay = [*records.veh_delay, *(float(d) for d in pending_delays)]
    veh_wait = [*records.veh_wait, *(0.0 for _ in pending_delays)]
    delay_mean, delay_p95, delay_max = summary(veh_delay)
    wait_mean, wait_p95, wait_max = summary(veh_wait)
    ped_mean, ped_p95, ped_max = summary(records.ped_wait)
    ped_loss = summary(records.ped_timeloss)[0]
    ratio = ped_mean / delay_mean if veh_delay and records.ped_wait and delay_mean > 0 else math.nan
    groups = jain([delay_mean, ped_mean]) if veh_delay and records.ped_wait else math.nan
    out = {
        "veh_count": float(len(veh_delay)),
        "veh_delay_mean": delay_mean,
        "veh_delay_p95": delay_p95,
        "veh_delay_max": delay_max,
        "veh_wait_mean": wait_mean,
        "veh_wait_p95": wait_p95,
        "veh_wait_max": wait_max,
        "ped_count": float(len(records.ped_wait)),
        "ped_wait_mean": ped_mean,
        "ped_wait_p95": ped_p95,
        "ped_wait_max": ped_max,
        "ped_timeloss_mean": ped_loss,
        "ped_veh_ratio": ratio,
        "jain_individual": jain([*veh_delay, *records.ped_wait]),
        "jain_groups": groups,
        "veh_throughput": float(records.veh_arrived),
        "ped_throughput": float(records.ped_arrived),
        "unfinished_vehicles": float(records.veh_unfinished + len(pending_delays)),
        "uninserted_vehicles": float(len(pending_delays)),
        "unfinished_pedestrians": float(records.ped_unfinished),
    }
    return {name: out[name] for name in METRIC_NAMES}


def episode_metrics(tripinfo: Path, pending_delays: Sequence[float] = ()) -> dict[str, float]:
    """One episode's metrics (:data:`METRIC_NAMES`): :func:`read_tripinfo` of its ``write-unfinished``
    tripinfo file, then :func:`metrics_from_records` with the never-inserted vehicles' delays.
    """
    return metrics_from_records(read_tripinfo(tripinfo), pending_delays)
