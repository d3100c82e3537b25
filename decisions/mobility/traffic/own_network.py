"""A network of one's own as the study's 'custom' scenario: a SUMO network or an OpenStreetMap extract
(converted offline by SUMO's netconvert, cached), with its demand as a SUMO route file or as counts per
approach (:mod:`.counts`), every file checked when the spec is prepared.

An OSM extract is converted with :data:`OSM_OPTIONS`: cars' roads only, signals where the extract tags
``highway=traffic_signals`` (a signal tagged on the approaches of a junction moves to the junction),
clusters of close junctions joined, no U-turns. Sidewalks, crossings and walking areas are then guessed
as for every shipped scenario (``scenarios.PEDESTRIAN_OPTIONS``) when the study runs with pedestrians.
Edge ids are OSM way ids: ``101`` along way 101's direction, ``-101`` against it (``101#1`` and on
where netconvert splits a way at a junction).
"""

from __future__ import annotations

import hashlib
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Protocol

from decisions.errors import InputError
from decisions.mobility.traffic.counts import counts_routes
from decisions.mobility.traffic.net_layout import check_routes, read_layout
from decisions.mobility.traffic.scenarios import (
    Scenario,
    build_net,
    custom_scenario,
    default_cache_dir,
    xml_root,
)
from decisions.mobility.traffic.sumo_setup import sumo_version

__all__ = ["OSM_OPTIONS", "OwnFiles", "check_osm", "osm_network", "own_scenario"]

OSM_OPTIONS: tuple[str, ...] = (
    "--keep-edges.by-vclass", "passenger",
    "--remove-edges.isolated", "true",
    "--geometry.remove", "true",
    "--roundabouts.guess", "true",
    "--ramps.guess", "true",
    "--junctions.join", "true",
    "--tls.guess-signals", "true",
    "--tls.join", "true",
    "--tls.default-type", "static",
    "--no-turnarounds", "true",
    "--output.street-names", "true",
)  # fmt: skip
"""netconvert options converting an OSM extract into the study's network (pedestrians come later)."""
_FIELD = "scenarios.osm_file"


class OwnFiles(Protocol):
    """The 'custom' scenario's settings (``spec.ScenarioSettings``): one network file, one demand file."""

    @property
    def net_file(self) -> str | None: ...

    @property
    def osm_file(self) -> str | None: ...

    @property
    def route_file(self) -> str | None: ...

    @property
    def counts_file(self) -> str | None: ...

    @property
    def begin(self) -> int: ...

    @property
    def seconds(self) -> int | None: ...


def _coordinate(node: ET.Element, name: str, limit: float, path: Path) -> None:
    cell = node.get(name)
    try:
        value = float(cell) if cell is not None else math.nan
    except ValueError:
        value = math.nan
    if not -limit <= value <= limit:
        raise InputError(_FIELD, f"{path.name}, <node id='{node.get('id', '')}'>, attribute '{name}': {cell!r} "
                                 f"is not a degree in -{limit:g}..{limit:g}")


def check_osm(path: Path) -> Path:
    """``path``, checked to be an OSM extract: XML with an ``<osm>`` root, nodes with their ``lat`` / ``lon``
    in degrees, at least one ``highway`` way, every way's nodes in the file; else ``InputError`` naming
    the file, the element and its attribute."""
    path = Path(path)
    root = xml_root(path, _FIELD, "osm", "an OpenStreetMap extract")
    nodes = set()
    for node in root.iter("node"):
        _coordinate(node, "lat", 90.0, path)
        _coordinate(node, "lon", 180.0, path)
        nodes.add(node.get("id"))
    roads = [way for way in root.iter("way") if any(tag.get("k") == "highway" for tag in way.iter("tag"))]
    if not roads:
        raise InputError(_FIELD, f"{path.name} has no road (no <way> tagged highway=...)")
    for way in roads:
        missing = [nd.get("ref") for nd in way.iter("nd") if nd.get("ref") not in nodes]
        if missing:
            raise InputError(_FIELD, f"{path.name}, <way id='{way.get('id', '')}'>, <nd ref='{missing[0]}'>: "
                                     "no such node in the file")
    return path


def osm_network(osm_file: Path, cache_dir: Path | None = None) -> Path:
    """The SUMO network of the OSM extract ``osm_file`` (:func:`check_osm`, then netconvert with
    :data:`OSM_OPTIONS`), cached by a hash of the extract, the options and the SUMO version and written
    atomically. Raises ``InputError`` (``scenarios.osm_file``) when the extract is bad or netconvert fails."""
    osm_file = check_osm(Path(osm_file))
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    h = hashlib.sha256(osm_file.read_bytes())
    for part in (sumo_version(), *OSM_OPTIONS):
        h.update(part.encode() + b"\0")
    target = cache_dir / "own" / f"{osm_file.stem}.{h.hexdigest()[:16]}.net.xml"
    return build_net(lambda _: ["--osm-files", str(osm_file), *OSM_OPTIONS], target, _FIELD, osm_file.name)


def own_scenario(scenarios: OwnFiles, cache_dir: Path | None = None) -> Scenario:
    """The 'custom' scenario of ``scenarios``: its network (``net_file``, or ``osm_file`` converted) checked
    to have a signal sumo-rl can control, and its demand (``route_file`` checked against the network, or
    ``counts_file`` turned into flows in ``cache_dir``). Raises ``InputError`` naming the bad file's field."""
    s = scenarios
    cache = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    if s.osm_file is not None:
        net = osm_network(Path(s.osm_file), cache)
        layout = read_layout(net, _FIELD, f"the network converted from {Path(s.osm_file).name}")
    else:
        net = Path(s.net_file or "")
        layout = read_layout(net)
    window = (float(s.begin), float(s.begin + (3600 if s.seconds is None else s.seconds)))
    if s.counts_file is not None:
        routes = counts_routes(Path(s.counts_file), layout, window, cache / "own")
    else:
        routes = check_routes(Path(s.route_file or ""), layout)
    return custom_scenario(net, routes, begin=s.begin, seconds=s.seconds)
