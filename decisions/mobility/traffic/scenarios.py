"""Scenario registry: sumo-rl's networks and demand, and their pedestrian variants."""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import platformdirs

from decisions.errors import InputError
from decisions.mobility.traffic.sumo_setup import binary, ensure_sumo, sumo_version

__all__ = [
    "PEDESTRIAN_OPTIONS",
    "SCENARIOS",
    "Scenario",
    "check_net",
    "custom_scenario",
    "default_cache_dir",
    "get_scenario",
    "build_net",
    "net_root",
    "network",
    "pedestrian_network",
    "scenario_names",
    "xml_root",
]

PEDESTRIAN_OPTIONS: tuple[str, ...] = (
    "--sidewalks.guess",
    "true",
    "--crossings.guess",
    "true",
    "--walkingareas",
    "true",
)
"""netconvert options that add sidewalks, crossings and walking areas (and regenerate tl programmes)."""


@dataclass(frozen=True)
class Scenario:
    """A signalised network with its vehicle demand and control timing.

    Attributes:
        name: registry name.
        net_file: the original SUMO network (``.net.xml``).
        route_file: the vehicle demand (``.rou.xml``: trips, vehicles or flows).
        begin: first simulated second (RESCO's window start).
        end: last simulated second (an episode is ``end - begin`` seconds).
        delta_time: seconds between decisions of a controller.
        yellow_time: seconds of yellow inserted by sumo-rl between two green phases.
        min_green: seconds a green phase is held before sumo-rl accepts a change (after yellow).
        node_file: node file to build the pedestrian net from (when the net ships as node/edge files).
        edge_file: edge file paired with ``node_file``.
        signalised_nodes: nodes of ``node_file`` made ``traffic_light`` in the pedestrian net.
    """

    name: str
    net_file: Path
    route_file: Path
    begin: int
    end: int
    delta_time: int = 5
    yellow_time: int = 2
    min_green: int = 5
    node_file: Path | None = None
    edge_file: Path | None = None
    signalised_nodes: tuple[str, ...] = ()

    @property
    def seconds(self) -> int:
        """Length of an episode in simulated seconds."""
        return self.end - self.begin


def _nets_dir() -> Path:
    """sumo-rl's bundled networks (located without importing ``sumo_rl``, which needs SUMO_HOME)."""
    from importlib.util import find_spec

    spec = find_spec("sumo_rl")
    if spec is None or spec.origin is None:
        raise InputError("sumo_rl", "the sumo-rl package is not installed (pip install sumo-rl==1.4.5)")
    return Path(spec.origin).parent / "nets"


def _resco(name: str, route: str, begin: int, end: int) -> Scenario:
    folder = _nets_dir() / "RESCO" / name
    return Scenario(name, folder / f"{name}.net.xml", folder / route, begin, end)


@cache
def _registry() -> dict[str, Scenario]:
    single = _nets_dir() / "single-intersection"
    return {
        "single-intersection": Scenario(
            "single-intersection",
            single / "single-intersection.net.xml",
            single / "single-intersection.rou.xml",
            0,
            3600,
            node_file=single / "single-intersection.nod.xml",
            edge_file=single / "single-intersection.edg.xml",
            signalised_nodes=("t",),
        ),
        "cologne1": _resco("cologne1", "cologne1.rou.xml", 25200, 28800),
        "ingolstadt1": _resco("ingolstadt1", "ingolstadt1.rou.xml", 57600, 61200),
        "grid4x4": _resco("grid4x4", "grid4x4_1.rou.xml", 0, 3600),
        "arterial4x4": _resco("arterial4x4", "arterial4x4_1.rou.xml", 0, 3600),
    }


SCENARIOS: tuple[str, ...] = ("single-intersection", "cologne1", "ingolstadt1", "grid4x4", "arterial4x4")
"""Registered scenario names."""


def scenario_names() -> tuple[str, ...]:
    """Names of the registered scenarios."""
    return SCENARIOS


def get_scenario(name: str | Scenario) -> Scenario:
    """Look a scenario up by name (a :class:`Scenario` is returned as is).

    Raises:
        InputError: ``scenario`` for an unknown name.
    """
    if isinstance(name, Scenario):
        return name
    registry = _registry()
    if name not in registry:
        raise InputError("scenario", f"unknown scenario {name!r}; expected one of {', '.join(SCENARIOS)}")
    return registry[name]


def custom_scenario(
    net_file: Path, route_file: Path, *, begin: int = 0, seconds: int | None = None, name: str = "custom"
) -> Scenario:
    """A user's own network and vehicle demand as a :class:`Scenario` (default timing, 5/2/5 s).

    ``seconds`` defaults to 3600; ``name`` names files (no whitespace). Raises ``InputError``:
    ``scenario.net_file`` when the network does not parse, ``scenario.route_file`` when the demand
    file is missing, ``scenario.seconds`` when not positive.
    """
    seconds = 3600 if seconds is None else seconds
    if isinstance(seconds, bool) or not isinstance(seconds, int) or seconds <= 0:
        raise InputError("scenario.seconds", f"must be a positive integer, got {seconds!r}")
    if not Path(route_file).is_file():
        raise InputError("scenario.route_file", f"{route_file} does not exist")
    net = check_net(Path(net_file).resolve())
    return Scenario(name, net, Path(route_file).resolve(), int(begin), int(begin) + seconds)


def default_cache_dir() -> Path:
    """Where built networks are cached: ``$DECISIONS_TRAFFIC_CACHE`` or the user cache directory."""
    override = os.environ.get("DECISIONS_TRAFFIC_CACHE")
    return Path(override) if override else Path(platformdirs.user_cache_dir("decisions")) / "traffic"


def check_net(path: Path, field: str = "scenario.net_file") -> Path:
    """``path``, checked to be a readable SUMO network (``<net>`` root); else ``InputError`` naming ``field``."""
    net_root(path, field)
    return Path(path)


def net_root(path: Path, field: str = "scenario.net_file") -> ET.Element:
    """The ``<net>`` element of the SUMO network ``path``; ``InputError`` naming ``field`` when it is not one."""
    return xml_root(path, field, "net", "a SUMO network")


def xml_root(path: Path, field: str, tag: str, what: str) -> ET.Element:
    """The root element of the XML file ``path``, checked to be ``<tag>`` (``what`` the file should be);
    ``InputError`` naming ``field`` when the file is missing, does not parse or has another root."""
    path = Path(path)
    if not path.is_file():
        raise InputError(field, f"{path} does not exist")
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise InputError(field, f"{path} does not parse as XML ({exc})") from None
    if root.tag != tag:
        raise InputError(field, f"{path} is not {what} (root <{root.tag}>, expected <{tag}>)")
    return root


def _digest(scenario: Scenario) -> str:
    """Hash of everything the pedestrian net depends on: input files, options, SUMO version."""
    h = hashlib.sha256()
    for part in (sumo_version(), *PEDESTRIAN_OPTIONS, *scenario.signalised_nodes):
        h.update(part.encode() + b"\0")
    files = (scenario.node_file, scenario.edge_file) if scenario.node_file else (scenario.net_file,)
    for file in files:
        h.update(Path(file).read_bytes())
    return h.hexdigest()[:16]


def _signalised_node_file(scenario: Scenario, out: Path) -> Path:
    """A copy of the scenario's node file with ``signalised_nodes`` turned into traffic lights."""
    tree = ET.parse(scenario.node_file)
    for node in tree.getroot().iter("node"):
        if node.get("id") in scenario.signalised_nodes:
            node.set("type", "traffic_light")
    tree.write(out)
    return out


def pedestrian_network(scenario: str | Scenario, cache_dir: Path | None = None) -> Path:
    """Path of the scenario's network with sidewalks, crossings and walking areas, built once and cached.

    The file is named by a hash of the inputs, the netconvert options and the SUMO version and written
    atomically, so concurrent or interrupted builds never leave a partial net. Raises ``InputError``:
    ``scenario`` for an unknown name, ``scenario.net_file`` when netconvert fails.
    """
    scenario = get_scenario(scenario)
    source_field = "scenario.node_file" if scenario.node_file else "scenario.net_file"
    sources = (scenario.node_file, scenario.edge_file) if scenario.node_file else (scenario.net_file,)
    for file in sources:
        if file is None or not Path(file).is_file():
            raise InputError(source_field, f"{file} does not exist")
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / f"{scenario.name}.ped.{_digest(scenario)}.net.xml"

    def inputs(tmp: Path) -> list[str]:
        if scenario.node_file:
            nodes = _signalised_node_file(scenario, tmp / "nodes.nod.xml")
            return ["--node-files", str(nodes), "--edge-files", str(scenario.edge_file), *PEDESTRIAN_OPTIONS]
        return ["--sumo-net-file", str(scenario.net_file), *PEDESTRIAN_OPTIONS]

    return build_net(inputs, target, source_field, str(sources[0]))


def build_net(arguments: Callable[[Path], Sequence[str]], target: Path, field: str, source: str) -> Path:
    """``target``, unless it exists written by netconvert with ``arguments(tmp)`` (inputs and options; ``tmp``
    a folder for input files it writes) in a temporary folder beside it and moved in place, so concurrent
    or interrupted builds never leave a partial net. Raises ``InputError`` naming ``field`` and ``source``
    when netconvert fails."""
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        partial = Path(tmp) / "built.net.xml"
        cmd = [str(binary("netconvert")), *arguments(Path(tmp)), "--no-warnings", "-o", str(partial)]
        home = ensure_sumo()
        env = {**os.environ, "SUMO_HOME": str(home), "PROJ_DATA": str(home / "data" / "proj")}
        result = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if result.returncode != 0 or not partial.is_file():
            problem = " ".join((result.stderr or result.stdout).split())[-300:]
            raise InputError(field, f"netconvert could not read {source}: {problem}")
        os.replace(partial, target)
    return target


def network(scenario: str | Scenario, pedestrians: bool, cache_dir: Path | None = None) -> Path:
    """The network to simulate: the pedestrian variant, or the original net checked to parse.

    Args:
        scenario: a registered name or a :class:`Scenario`.
        pedestrians: build/return the net with sidewalks and crossings.
        cache_dir: the cache directory for pedestrian nets.

    Returns:
        Path of the ``.net.xml`` to simulate.
    """
    scenario = get_scenario(scenario)
    if pedestrians:
        return pedestrian_network(scenario, cache_dir)
    return check_net(scenario.net_file)
