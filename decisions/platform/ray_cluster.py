"""Reaching Ray from this process: check an address, start a local Ray or join a cluster.

Ray is optional (``pip install -e ".[ray]"``) and imported only here, when a runner runs.
Both ways in keep this process's SIGTERM handler (``ray.init`` would replace it with one that exits).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import signal
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from decisions.errors import InputError, error_line

log = logging.getLogger(__name__)

RAY_MISSING = 'Ray is not installed (pip install -e ".[ray]")'
"""The problem reported on field ``backend`` when Ray is asked for but not installed."""

LOOPBACK = "127.0.0.1"
LOCAL_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's multi-node switch: 0 makes a Ray started here listen on 127.0.0.1 only."""

CONNECT_TIMEOUT_S = 5.0
"""How long joining a cluster waits for its address to accept a connection."""

_HTTP2_OPENING = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""HTTP/2's client preface and an empty SETTINGS frame: a gRPC server answers with its own SETTINGS frame."""
_SETTINGS_FRAME = 0x04

_ADDRESS = re.compile(r"^(ray://)?[A-Za-z0-9.\-\[\]:]+:(\d{1,5})$")


def ray_available() -> bool:
    """Whether Ray can be imported here (without importing it)."""
    return importlib.util.find_spec("ray") is not None


def check_address(address: str | None) -> str | None:
    """The address stripped: None, ``"auto"``, ``"host:port"`` or ``"ray://host:port"``.

    Raises:
        InputError: on field ``address`` when it is none of those.
    """
    if address is None:
        return None
    text = address.strip()
    if text == "auto":
        return text
    match = _ADDRESS.match(text)
    if match is None or not 0 < int(match.group(2)) < 65536:
        raise InputError("address", f"expected 'auto', 'host:port' or 'ray://host:port', got {address!r}")
    return text


def import_ray() -> ModuleType:
    """The ``ray`` module; raises ``InputError`` on field ``backend`` when Ray is not installed."""
    if not ray_available():
        raise InputError("backend", RAY_MISSING)
    import ray

    return ray


@contextmanager
def _keep_sigterm_handler() -> Iterator[None]:
    """Restore this process's SIGTERM handler after the block."""
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and handler is not None:
            signal.signal(signal.SIGTERM, handler)


@contextmanager
def _local_only() -> Iterator[None]:
    """Make the Ray started in the block listen on 127.0.0.1 only (``LOCAL_ONLY_ENV``, here and in Ray's copy)."""
    before = os.environ.get(LOCAL_ONLY_ENV)
    os.environ[LOCAL_ONLY_ENV] = "0"
    constants = _ray_constants()
    enabled = getattr(constants, "ENABLE_RAY_CLUSTER", None)
    if enabled:
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[union-attr]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(LOCAL_ONLY_ENV, None)
        else:
            os.environ[LOCAL_ONLY_ENV] = before
        if enabled:
            constants.ENABLE_RAY_CLUSTER = enabled  # type: ignore[union-attr]


def _ray_constants() -> ModuleType | None:
    """Ray's private ``ray_constants`` module, or None where it has moved."""
    try:
        from ray._private import ray_constants
    except ImportError:
        return None
    return ray_constants


def start_local_cluster(num_cpus: int | None = None, *, temp_dir: str | None = None) -> str:
    """Start a Ray for this process on ``num_cpus`` CPUs (None: all), 127.0.0.1 only, no dashboard.

    ``temp_dir`` is Ray's session folder root (None: Ray's default). Returns the node's IP address.

    Raises:
        InputError: on field ``backend`` when Ray is not installed or cannot start.
    """
    ray = import_ray()
    options: dict[str, Any] = {
        "num_cpus": num_cpus or os.cpu_count() or 1,
        "include_dashboard": False,
        "_node_ip_address": LOOPBACK,
        "log_to_driver": False,
        "logging_level": logging.WARNING,
    }
    if temp_dir is not None:
        options["_temp_dir"] = temp_dir
    try:
        with _keep_sigterm_handler(), _local_only():
            ray.init(**options)
    except (RuntimeError, OSError, ValueError) as exc:
        raise InputError("backend", f"Ray could not start here: {error_line(exc)}") from exc
    node_ip = str(ray.util.get_node_ip_address())
    if node_ip != LOOPBACK:
        log.warning("the local Ray node is %s, not %s: it may listen on every interface", node_ip, LOOPBACK)
    return node_ip


def join_cluster(address: str) -> None:
    """Connect this process to the Ray cluster at ``address`` (``"auto"``, ``"host:port"``, ``"ray://host:port"``).

    Raises:
        InputError: on field ``address`` when the cluster cannot be reached.
    """
    ray = import_ray()
    probe_address(address)
    try:
        with _keep_sigterm_handler():
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, OSError, ValueError) as exc:
        raise InputError("address", f"cannot join the Ray cluster at {address!r}: {error_line(exc)}") from exc


def _bootstrap_address(address: str) -> str | None:
    """The ``host:port`` that ``address`` names (``auto`` resolved as Ray does), or None when Ray finds none."""
    if address != "auto":
        return address.removeprefix("ray://")
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die
    except ImportError:  # Ray moved it: ray.init resolves "auto" itself
        return None
    try:
        return str(canonicalize_bootstrap_address_or_die(address))
    except (ConnectionError, RuntimeError, ValueError):  # no cluster found: ray.init says so at once
        return None


def probe_address(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Check within ``timeout_s`` that a gRPC server (a Ray GCS or Ray Client server) answers at ``address``:
    it must accept a connection and answer HTTP/2's opening with a SETTINGS frame (``ray.init`` retries for minutes).

    Raises:
        InputError: on field ``address`` when nothing answers so in time.
    """
    target = _bootstrap_address(address)
    if target is None:
        return
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as sock:
            sock.settimeout(timeout_s)
            sock.sendall(_HTTP2_OPENING)
            answer = _receive(sock, 9)
    except (OSError, ValueError) as exc:
        raise InputError(
            "address", f"no Ray cluster answers at {address!r} within {timeout_s:g} s ({error_line(exc)}); check --address"
        ) from None
    if len(answer) < 9 or answer[3] != _SETTINGS_FRAME:
        raise InputError("address", f"what listens at {address!r} is not a Ray cluster (no gRPC answer); check --address")


def _receive(sock: socket.socket, size: int) -> bytes:
    """Up to ``size`` bytes from ``sock``, fewer when it closes first."""
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data
