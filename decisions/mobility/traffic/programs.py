"""Signal programmes as SUMO additional files: the net's plan turned into SUMO's actuated control."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from decisions.errors import InputError

__all__ = ["ACTUATED_PROGRAM", "actuated_programs", "crossing_link_indices"]

ACTUATED_PROGRAM = "actuated"
"""``programID`` of the actuated programmes."""


def crossing_link_indices(net: ET.Element) -> dict[str, set[int]]:
    """Link indices of pedestrian crossings per traffic light (from walking-area connections)."""
    indices: dict[str, set[int]] = {}
    for conn in net.iter("connection"):
        tl = conn.get("tl")
        if tl is not None and conn.get("from", "").startswith(":") and "linkIndex" in conn.attrib:
            indices.setdefault(tl, set()).add(int(conn.get("linkIndex", "0")))
    return indices


def _is_clearance(state: str, previous: str, crossings: set[int]) -> bool:
    """A pedestrian clearance phase: ``previous`` with some crossing greens turned red, nothing else."""
    if len(state) != len(previous) or state == previous:
        return False
    changed = [i for i, (a, b) in enumerate(zip(previous, state, strict=True)) if a != b]
    return all(i in crossings and previous[i] in "Gg" and state[i] == "r" for i in changed)


def _vehicle_phase(state: str, previous: str, crossings: set[int]) -> bool:
    """A green phase with some vehicle green that is not a yellow or a pedestrian clearance."""
    vehicle_green = any(ch in "Gg" for i, ch in enumerate(state) if i not in crossings)
    return "y" not in state and vehicle_green and not _is_clearance(state, previous, crossings)


def actuated_programs(net_file: Path, out_path: Path, *, min_dur: int = 10, max_dur: int = 50) -> Path:
    """Write ``out_path``: an additional file with an actuated version of every signal programme of a net.

    Main phases get ``min_dur`` to ``max_dur`` seconds of green. Raises ``InputError``
    (``scenario.net_file``) when the net does not parse or has no signals.
    """
    try:
        net = ET.parse(net_file).getroot()
    except ET.ParseError as exc:
        raise InputError("scenario.net_file", f"{net_file} does not parse ({exc})") from None
    crossings = crossing_link_indices(net)
    root = ET.Element("additional")
    seen: set[str] = set()
    for logic in net.iter("tlLogic"):
        tl_id = logic.get("id", "")
        if tl_id in seen:
            continue
        seen.add(tl_id)
        out = ET.SubElement(
            root,
            "tlLogic",
            id=tl_id,
            type="actuated",
            programID=ACTUATED_PROGRAM,
            offset=logic.get("offset", "0"),
        )
        phases = [(p.get("state", ""), float(p.get("duration", "0"))) for p in logic.iter("phase")]
        links = crossings.get(tl_id, set())
        main = [_vehicle_phase(state, phases[k - 1][0], links) for k, (state, _) in enumerate(phases)]
        longest = max((duration for (_, duration), ok in zip(phases, main, strict=True) if ok), default=0.0)
        for (state, duration), ok in zip(phases, main, strict=True):
            attrs = {"duration": f"{duration:g}", "state": state}
            if ok and duration >= longest / 2:
                attrs["duration"] = f"{max(duration, min_dur):g}"
                attrs["minDur"] = f"{min_dur:g}"
                attrs["maxDur"] = f"{max(max_dur, duration, min_dur):g}"
            ET.SubElement(out, "phase", attrib=attrs)
    if not seen:
        raise InputError("scenario.net_file", f"{net_file} has no traffic lights")
    ET.indent(root)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(out_path, encoding="utf-8", xml_declaration=True)
    return out_path
