"""SUMO from the installed ``eclipse-sumo`` wheel: ``SUMO_HOME``, libsumo and binaries.

:func:`ensure_sumo` must run before ``sumo_rl``, ``traci`` or ``sumolib`` is imported (sumo-rl
reads the environment on import); the functions of this package that start SUMO call it first.
"""

from __future__ import annotations

import importlib
import importlib.util
import multiprocessing
import os
import sys
from functools import cache
from pathlib import Path

from decisions.errors import InputError

__all__ = ["binary", "ensure_sumo", "sumo_version", "uses_libsumo"]

_BINARIES = ("sumo", "netconvert", "duarouter")


@cache
def ensure_sumo() -> Path:
    """Point ``SUMO_HOME`` at the installed SUMO wheel, select libsumo when it imports (without its notices
    in a child process); the SUMO home.

    Idempotent (cached). Raises ``InputError`` (``sumo``) when ``eclipse-sumo`` is not installed.
    """
    try:
        sumo = importlib.import_module("sumo")
    except ImportError:
        raise InputError(
            "sumo", "the eclipse-sumo package is not installed (pip install eclipse-sumo)"
        ) from None
    home = Path(sumo.SUMO_HOME)
    os.environ["SUMO_HOME"] = str(home)
    tools = str(home / "tools")
    if tools not in sys.path:
        sys.path.append(tools)
    if "LIBSUMO_AS_TRACI" not in os.environ and "sumo_rl" not in sys.modules:
        if importlib.util.find_spec("libsumo") is not None:  # else sumo-rl uses TraCI over a socket
            os.environ["LIBSUMO_AS_TRACI"] = "1"
    if os.environ.get("LIBSUMO_AS_TRACI") == "1" and multiprocessing.parent_process() is not None:
        os.environ["LIBSUMO_AS_TRACI"] = "quiet"  # libsumo's notices are printed once, by the main process
    return home


def uses_libsumo() -> bool:
    """Whether sumo-rl drives SUMO through libsumo (one simulation per process)."""
    ensure_sumo()
    env_module = sys.modules.get("sumo_rl.environment.env")
    if env_module is not None:  # what sumo-rl decided when it was imported
        return bool(env_module.LIBSUMO)
    return "LIBSUMO_AS_TRACI" in os.environ


def binary(name: str) -> Path:
    """Path of a SUMO command-line tool shipped in the wheel.

    Args:
        name: ``"sumo"``, ``"netconvert"`` or ``"duarouter"``.

    Raises:
        InputError: ``binary`` for another name or a missing executable.
    """
    if name not in _BINARIES:
        raise InputError("binary", f"unknown SUMO tool {name!r}; expected one of {', '.join(_BINARIES)}")
    path = ensure_sumo() / "bin" / name
    if not path.is_file():
        raise InputError("binary", f"{path} is missing from the eclipse-sumo package")
    return path


@cache
def sumo_version() -> str:
    """The installed SUMO version (``"1.28.0"``), from the wheel's metadata."""
    from importlib.metadata import PackageNotFoundError, version

    ensure_sumo()
    try:
        return version("eclipse-sumo")
    except PackageNotFoundError:  # pragma: no cover - a source install of SUMO
        return "unknown"
