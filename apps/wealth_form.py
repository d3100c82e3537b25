"""The wealth-planning page's client form: its prefill from the example spec and the job spec it builds.

Pure functions (no Streamlit calls), testable without running the page or JAX.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import app_common
import pandas as pd

from decisions.errors import InputError
from decisions.finance.wealth import DOMAIN

GOAL_COLUMNS: tuple[str, ...] = ("year", "cost", "utility", "partial_cost", "partial_utility")
"""Columns of the page's goals editor (the partial ones blank: no partial option)."""

EXAMPLE_SPEC = Path(__file__).resolve().parents[1] / "examples" / "wealth.toml"

_FALLBACK_CLIENT: dict[str, Any] = {
    "horizon": 20,
    "initial_wealth": 250_000.0,
    "savings": 20_000.0,
    "savings_first": 0,
    "savings_last": 9,
    "goals": pd.DataFrame(
        {"year": [3, 8, 9, 12, 20], "cost": [45_000.0, 60_000.0, 60_000.0, 150_000.0, 400_000.0],
         "utility": [30.0, 60.0, 60.0, 40.0, 100.0], "partial_cost": [25_000.0, None, None, 80_000.0, None],
         "partial_utility": [20.0, None, None, 25.0, None]}
    ),
}


def example_client(path: Path = EXAMPLE_SPEC) -> dict[str, Any]:
    """The form's prefill from ``examples/wealth.toml``: horizon, wealth, savings and the goals table.

    The savings are the first non-zero cash flow and the years it is paid in a row; each goal's
    dearest option is its full funding, its cheapest other option (if any) the partial one.
    Falls back to the same client written out when the file is missing or unreadable.
    """
    try:
        problem = tomllib.loads(path.read_text())["problem"]
        flows = [float(c) for c in problem.get("cash_flows") or []]
        nonzero = [t for t, c in enumerate(flows) if c != 0.0]
        first = nonzero[0] if nonzero else 0
        last = first
        while last + 1 < len(flows) and flows[last + 1] == flows[first]:
            last += 1
        rows = []
        for goal in problem.get("goals", []):
            options = sorted(goal["options"], key=lambda o: (o["cost"], o["utility"]))
            full, partial = options[-1], (options[0] if len(options) > 1 else None)
            rows.append({
                "year": int(goal["year"]),
                "cost": float(full["cost"]),
                "utility": float(full["utility"]),
                "partial_cost": float(partial["cost"]) if partial else None,
                "partial_utility": float(partial["utility"]) if partial else None,
            })
        return {
            "horizon": int(problem["horizon"]),
            "initial_wealth": float(problem["initial_wealth"]),
            "savings": flows[first] if nonzero else 0.0,
            "savings_first": first,
            "savings_last": last if nonzero else 0,
            "goals": pd.DataFrame(rows, columns=list(GOAL_COLUMNS)).astype(float).astype({"year": int}),
        }
    except (OSError, KeyError, TypeError, ValueError, IndexError, tomllib.TOMLDecodeError):
        return {**_FALLBACK_CLIENT, "goals": _FALLBACK_CLIENT["goals"].copy()}


def cash_flows(horizon: int, amount: float, first: int, last: int) -> list[float]:
    """One cash flow per year ``0 .. horizon - 1``: ``amount`` in years ``first .. last``, else 0.

    Raises:
        InputError: ``savings.first_year`` / ``savings.last_year`` outside the horizon or reversed.
    """
    if amount == 0.0:
        return [0.0] * horizon
    if not 0 <= first <= horizon - 1:
        raise InputError("savings.first_year", f"{first} is not a year 0 .. {horizon - 1} of the horizon")
    if not first <= last <= horizon - 1:
        raise InputError("savings.last_year", f"{last} must be in {first} .. {horizon - 1} (first year .. horizon - 1)")
    return [float(amount) if first <= t <= last else 0.0 for t in range(horizon)]


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA or value == ""


def _number(value: Any, name: str) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InputError(name, f"must be a number, got {value!r}") from None
    if not math.isfinite(out):
        raise InputError(name, f"must be a finite number, got {value!r}")
    return out


def goals_from_table(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The ``problem.goals`` of the goals editor: ``[{year, options: [partial?, full]}]``.

    Fully blank rows (a row added and left empty) are skipped; a partial option needs both its
    cost and utility.

    Raises:
        InputError: naming the cell, e.g. ``problem.goals[1].cost: missing``.
    """
    goals: list[dict[str, Any]] = []
    for row in table.reindex(columns=list(GOAL_COLUMNS)).to_dict("records"):
        if all(_blank(row[c]) for c in GOAL_COLUMNS):
            continue
        where = f"problem.goals[{len(goals)}]"
        for name in ("year", "cost", "utility"):
            if _blank(row[name]):
                raise InputError(f"{where}.{name}", "missing")
        year = _number(row["year"], f"{where}.year")
        if year != int(year):
            raise InputError(f"{where}.year", f"must be a whole year, got {year:g}")
        options = []
        partial = [_blank(row["partial_cost"]), _blank(row["partial_utility"])]
        if partial == [False, False]:
            options.append({"cost": _number(row["partial_cost"], f"{where}.partial_cost"),
                            "utility": _number(row["partial_utility"], f"{where}.partial_utility")})
        elif partial != [True, True]:
            missing = "partial_cost" if partial[0] else "partial_utility"
            raise InputError(f"{where}.{missing}", "missing (give both partial cost and utility, or neither)")
        options.append({"cost": _number(row["cost"], f"{where}.cost"),
                        "utility": _number(row["utility"], f"{where}.utility")})
        goals.append({"year": int(year), "options": options})
    return goals


def job_spec(form: Mapping[str, Any], output_dir: str | None = None) -> dict[str, Any]:
    """The job spec (``[job]``, ``[problem]``, ``[evaluation]``) of the page's form.

    Args:
        form: ``name, seed, horizon, initial_wealth, savings, savings_first, savings_last,
            goals`` (the editor's table), ``paths, dp``.
        output_dir: where the run's files go (None: next to the store).

    Returns:
        The spec for ``DOMAIN.prepare``.

    Raises:
        InputError: a savings year or a goals cell that cannot be read (the rest is checked
            by ``prepare``).
    """
    horizon = int(form["horizon"])
    return {
        "job": app_common.job_table(DOMAIN, form, output_dir),
        "problem": {
            "horizon": horizon,
            "initial_wealth": float(form["initial_wealth"]),
            "cash_flows": cash_flows(horizon, float(form["savings"]), int(form["savings_first"]),
                                     int(form["savings_last"])),
            "goals": goals_from_table(form["goals"]),
        },
        "evaluation": {"paths": int(form["paths"]), "dp": bool(form["dp"])},
    }
