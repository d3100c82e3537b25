"""Stored benchmark results, ``benchmarks/<name>.json``: the figures with commit, date, machine,
wall time and budget overrides (``--set key=value``, the value parsed as JSON)."""

from __future__ import annotations

import inspect
import json
import os
import platform
import subprocess
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from decisions.errors import InputError

BENCH_FOLDER = Path(__file__).resolve().parents[2] / "benchmarks"
"""Where ``--save`` writes, in a source checkout."""


def parse_overrides(pairs: Sequence[str], run_bench: Callable[..., Any]) -> dict[str, Any]:
    """``key=value`` pairs -> keyword arguments of ``run_bench``.

    Raises:
        InputError: on field ``set`` for a pair without ``=``, a value that is not JSON, or a key
            that is not a keyword-only parameter of ``run_bench``.
    """
    known = [name for name, p in inspect.signature(run_bench).parameters.items() if p.kind is p.KEYWORD_ONLY]
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep or not key:
            raise InputError("set", f"expected key=value, got {pair!r}")
        if key not in known:
            raise InputError("set", f"{key!r} is not a setting of this benchmark (known: {known})")
        try:
            out[key] = json.loads(text)
        except json.JSONDecodeError:
            raise InputError("set", f"{key}: the value must be JSON (true, 512, [1, 2]), got {text!r}") from None
    return out


def json_ready(figures: dict[str, Any]) -> dict[str, Any]:
    """Bench figures with string keys and numpy scalars as Python numbers (what JSON can hold)."""
    import numpy as np

    return {str(k): v.item() if isinstance(v, np.generic) else v for k, v in figures.items()}


def machine() -> dict[str, Any]:
    """Cores, CPU model, platform and the 1-minute load average of this machine (when the run ends)."""
    model = platform.processor() or ""
    try:
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    except OSError:
        pass
    try:
        load = round(os.getloadavg()[0], 1)  # other work competing for the cores (timings are slower)
    except OSError:
        load = None
    return {"cores": os.cpu_count(), "cpu": model, "platform": platform.platform(), "load_average": load}


def git_commit() -> str | None:
    """The checkout's commit, with ``-dirty`` when code outside ``benchmarks/`` has changes, or None."""
    root = BENCH_FOLDER.parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(  # the stored results themselves do not make the code dirty
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", f":!{BENCH_FOLDER.name}"],
            cwd=root, capture_output=True, text=True, check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _without(part: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    """A stored part without the names of ``figures`` (a newer part gives them)."""
    return {**part, "figures": [name for name in part.get("figures", []) if name not in figures]}


def save_result(
    name: str,
    figures: dict[str, Any],
    *,
    wall_seconds: float,
    budget: dict[str, Any],
    folder: Path = BENCH_FOLDER,
    merge: bool = False,
    commit: str | None = None,
) -> Path:
    """Write ``<folder>/<name>.json``: the figures with ``commit`` (default: ``git_commit()``), date, machine, wall time, budget.

    With ``merge`` the figures are added to the stored result, which then lists its ``parts``
    (each with its own commit, date, machine, wall time, budget and the figures it still gives);
    the top level gives the latest part's and the parts' total wall time.
    """
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    part = {
        "commit": commit if commit is not None else git_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "wall_seconds": round(wall_seconds, 1),
        "budget": budget,
    }
    record = {"name": name, **part, "figures": figures}
    if merge and path.exists():
        earlier = json.loads(path.read_text())
        parts = earlier.get("parts") or [
            {**{key: earlier.get(key) for key in part}, "figures": sorted(earlier.get("figures", {}))}
        ]
        parts = [kept for kept in (_without(p, figures) for p in parts) if kept["figures"]]
        parts = [*parts, {**part, "figures": sorted(figures)}]
        record = {
            "name": name,
            **part,
            "wall_seconds": round(sum(float(p.get("wall_seconds") or 0.0) for p in parts), 1),
            "budget": {},
            "parts": parts,
            "figures": {**earlier.get("figures", {}), **figures},
        }
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return path
