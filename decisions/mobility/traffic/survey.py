"""Survey: every baseline controller on the scenarios, one demand draw, full windows."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from decisions.errors import InputError
from decisions.mobility.traffic.controllers import CONTROLLERS
from decisions.mobility.traffic.demand import Demand
from decisions.mobility.traffic.simulate import EpisodeTask, simulate_many

__all__ = ["DEFAULT_SCENARIOS", "main", "survey"]

DEFAULT_SCENARIOS: tuple[str, ...] = ("single-intersection", "cologne1", "ingolstadt1", "grid4x4")
"""Scenarios surveyed by default (arterial4x4 is the slowest: add it explicitly)."""

_COLUMNS = (
    "veh_delay_mean",
    "veh_delay_p95",
    "ped_wait_mean",
    "ped_wait_p95",
    "jain_individual",
    "wall_seconds",
)


def survey(
    scenarios: Sequence[str],
    controllers: Sequence[str],
    demand: Demand,
    *,
    seconds: int | None = None,
    workers: int = 1,
) -> list[dict[str, object]]:
    """One row per (scenario, controller) with pedestrians: ``scenario``, ``controller`` and the metrics.

    ``seconds`` defaults to each scenario's window; episodes run on ``workers`` processes.
    """
    pairs = [(s, c) for s in scenarios for c in controllers]
    tasks = [EpisodeTask(s, c, demand, seconds=seconds) for s, c in pairs]
    results = simulate_many(tasks, workers=workers)
    return [{"scenario": s, "controller": c, **m} for (s, c), m in zip(pairs, results, strict=True)]


def _table(rows: list[dict[str, object]]) -> str:
    header = f"{'scenario':20s} {'controller':13s} " + " ".join(f"{c:>15s}" for c in _COLUMNS)
    lines = [header]
    for row in rows:
        cells = " ".join(f"{float(row[c]):15.2f}" for c in _COLUMNS)  # type: ignore[arg-type]
        lines.append(f"{row['scenario']!s:20s} {row['controller']!s:13s} {cells}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS))
    parser.add_argument("--controllers", default=",".join(CONTROLLERS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ped-rate", type=float, default=120.0, help="pedestrians per hour per flow")
    parser.add_argument("--seconds", type=int, default=None)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="also write the rows to this file")
    args = parser.parse_args(argv)
    try:
        demand = Demand(seed=args.seed, ped_rate_per_hour=args.ped_rate)
        rows = survey(
            args.scenarios.split(","),
            args.controllers.split(","),
            demand,
            seconds=args.seconds,
            workers=args.workers,
        )
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(_table(rows), flush=True)
    text = json.dumps(rows, indent=1)
    if args.json is not None:
        args.json.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
