"""Many clients' problems from one CSV, checked cell by cell, for one run that plans them all.

One row per goal option of a client (a goal with a partial and a full option takes two rows).
Columns (case ignored): ``client`` (a name), ``initial_wealth`` (wealth today), ``horizon`` (years),
optionally ``contribution`` (paid in at the start of each year, negative to withdraw; default 0)
and ``contribution_years`` (how many years from year 0 it is paid; default the horizon), then
``goal`` (a name), ``year`` (when it is due, 0 = this year, at most the horizon), ``cost`` and
``utility`` of the option. A client's rows are together and in year order; its client columns may
be left empty after its first row. Money is in one currency unit throughout. Every refusal names
the file, the row and the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from decisions.core.csv_table import CsvTable
from decisions.core.numbers import MONEY_MAX, UTILITY_MAX
from decisions.errors import InputError
from decisions.finance.wealth.families import MAX_HORIZON
from decisions.finance.wealth.planner_limits import planner_option_sets
from decisions.finance.wealth.problem import WealthProblem

FIELD = "clients.csv"
"""The spec field that names the clients' file (errors name it)."""
COLUMNS = ("client", "initial_wealth", "horizon", "goal", "year", "cost", "utility")
OPTIONAL = ("contribution", "contribution_years")
CLIENT_COLUMNS = ("initial_wealth", "horizon", "contribution", "contribution_years")
"""The columns that describe the client, not the goal: the same on each of its rows (or empty)."""
MAX_CLIENTS = 1000
"""Clients one file may hold."""
COST_RATIO_MAX = 100.0
"""Largest goal cost as a multiple of the client's wealth and contributions (more looks like another unit)."""


def read_clients(path: str | Path) -> tuple[list[str], list[dict[str, Any]]]:
    """The clients' names and problems (``WealthProblem`` data) of the CSV at ``path``, in file order.

    Raises:
        InputError: on ``clients.csv``, naming the file, row and column.
    """
    table = CsvTable.read(path, field=FIELD, required=COLUMNS, optional=OPTIONAL)
    names = table.text("client")
    goals = table.text("goal")
    money_hint = "the file may be in cents: give amounts in one currency unit"
    columns = {
        "initial_wealth": table.numbers("initial_wealth", low=0, above=True, high=MONEY_MAX, blank=np.nan,
                                        unit_hint=money_hint),
        "horizon": _whole(table, "horizon", 1, MAX_HORIZON, f"horizons are in years, at most {MAX_HORIZON} for the "
                                                          "planner: is it in months?", blank=True),
        "contribution": _optional(table, "contribution", low=-MONEY_MAX, high=MONEY_MAX, unit_hint=money_hint),
        "contribution_years": _optional(table, "contribution_years", low=0, high=MAX_HORIZON),
    }
    year = _whole(table, "year", 0, MAX_HORIZON, "years count from 0 (this year), not calendar years")
    cost = table.numbers("cost", low=0, high=MONEY_MAX, unit_hint=money_hint)
    utility = table.numbers("utility", low=0, high=UTILITY_MAX)
    blocks = _client_blocks(table, names)
    if len(blocks) > MAX_CLIENTS:
        raise table.refuse_file(f"it has {len(blocks)} clients, at most {MAX_CLIENTS}")
    problems = [_problem(table, rows, columns, goals, year, cost, utility) for rows in blocks]
    return [str(names[rows[0]]) for rows in blocks], problems


def _whole(table: CsvTable, name: str, low: int, high: int, unit_hint: str, *, blank: bool = False) -> np.ndarray:
    """A column of whole numbers in ``low..high`` (a value above ``high`` names ``unit_hint``); empty
    cells read as NaN when ``blank``."""
    values = table.numbers(name, low=low, high=high, unit_hint=unit_hint, blank=np.nan if blank else None)
    for index in np.flatnonzero(np.isfinite(values) & (values != np.floor(values))):
        raise table.refuse(int(index), name, f"{table.cells[name][index]!r} is not a whole number")
    return values


def _optional(table: CsvTable, name: str, **limits: Any) -> np.ndarray:
    """An optional client column: NaN where empty or absent."""
    return table.numbers(name, blank=np.nan, **limits) if table.has(name) else np.full(len(table), np.nan)


def _client_blocks(table: CsvTable, names: np.ndarray) -> list[np.ndarray]:
    """The row indices of each client, in file order; a client's rows must be together."""
    starts = [0, *(i for i in range(1, len(names)) if names[i] != names[i - 1])]
    seen: dict[str, int] = {}
    for start in starts:
        if names[start] in seen:
            raise table.refuse(start, "client", f"{names[start]!r} already had rows before row "
                                                f"{table.rows[seen[names[start]]]}: keep a client's rows together")
        seen[names[start]] = start
    return [np.arange(a, b) for a, b in zip(starts, [*starts[1:], len(names)], strict=True)]


def _client_value(table: CsvTable, rows: np.ndarray, name: str, values: np.ndarray) -> float:
    """The client's value of column ``name``: given in its first row (or nowhere), later rows empty or equal."""
    first = values[rows[0]]
    for index in rows[1:]:
        if np.isfinite(values[index]) and values[index] != first:
            given = "is empty" if not np.isfinite(first) else f"has {table.cells[name][rows[0]]}"
            raise table.refuse(int(index), name, f"{table.cells[name][index]} differs from the client's first row "
                                                 f"(row {table.rows[rows[0]]}, which {given}): a client has one value")
    if name in ("initial_wealth", "horizon") and not np.isfinite(first):
        raise table.refuse(int(rows[0]), name, "is empty (give it in the client's first row)")
    return float(first)


def _problem(table: CsvTable, rows: np.ndarray, columns: dict[str, np.ndarray], goals: np.ndarray,
             year: np.ndarray, cost: np.ndarray, utility: np.ndarray) -> dict[str, Any]:
    """One client's problem data, its goals checked against its horizon, in year order, option by option."""
    client = {name: _client_value(table, rows, name, values) for name, values in columns.items()}
    horizon = int(client["horizon"])
    years = horizon if np.isnan(client["contribution_years"]) else int(client["contribution_years"])
    if years > horizon:
        raise table.refuse(int(rows[0]), "contribution_years", f"{years} is beyond the horizon ({horizon} years)")
    amount = 0.0 if np.isnan(client["contribution"]) else client["contribution"]
    if amount == 0 and not np.isnan(client["contribution_years"]) and years > 0:
        raise table.refuse(int(rows[0]), "contribution_years", "is used only with a contribution other than 0")
    flows = [amount] * years + [0.0] * (horizon - years)
    means = client["initial_wealth"] + sum(f for f in flows if f > 0)
    options: dict[str, list[int]] = {}
    for before, index in zip([None, *rows[:-1]], rows, strict=True):
        if year[index] > horizon:
            raise table.refuse(int(index), "year", f"{year[index]:g} is after the client's horizon ({horizon} years)")
        if before is not None and year[index] < year[before]:
            raise table.refuse(int(index), "year", f"{year[index]:g} comes after year {year[before]:g} of the row "
                                                   "before: list a client's goals in year order")
        if cost[index] > COST_RATIO_MAX * means:
            raise table.refuse(int(index), "cost", f"{table.cells['cost'][index]} is over {COST_RATIO_MAX:g} times "
                                                   f"the client's wealth and contributions ({means:g}): are the costs "
                                                   "and the wealth in the same unit (e.g. both in thousands)?")
        _same_goal(table, options.setdefault(goals[index], []), index, year, before)
    goal_list = [{"year": int(year[ids[0]]), "options": _options(table, ids, cost, utility)} for ids in options.values()]
    data = {"horizon": horizon, "initial_wealth": client["initial_wealth"], "cash_flows": flows, "goals": goal_list}
    try:
        planner_option_sets(WealthProblem.model_validate(data))
    except (ValidationError, InputError) as error:
        problem = error.problem if isinstance(error, InputError) else error.errors()[0]["msg"]
        raise table.refuse(int(rows[0]), "goal", f"client {table.cells['client'][rows[0]]!r}: {problem}") from None
    return data


def _same_goal(table: CsvTable, ids: list[int], index: int, year: np.ndarray, before: int | None) -> None:
    """Add row ``index`` to its goal's options: the goal's rows are together and share the year."""
    if ids and ids[-1] != before:
        raise table.refuse(index, "goal", f"{table.cells['goal'][index]!r} already had options up to row "
                                          f"{table.rows[ids[-1]]}: keep a goal's options together")
    if ids and year[index] != year[ids[0]]:
        raise table.refuse(index, "year", f"{year[index]:g} differs from year {year[ids[0]]:g} of this goal's "
                                          f"option in row {table.rows[ids[0]]}")
    ids.append(index)


def _options(table: CsvTable, ids: Sequence[int], cost: np.ndarray, utility: np.ndarray) -> list[dict[str, float]]:
    """A goal's options; a dearer option may not be worth less to the client."""
    ranked = sorted(ids, key=lambda i: (cost[i], utility[i]))
    for low, high in zip(ranked, ranked[1:], strict=False):
        if cost[high] > cost[low] and utility[high] < utility[low]:
            raise table.refuse(high, "utility", f"{utility[high]:g} at cost {cost[high]:g} is below "
                                                f"{utility[low]:g} at the cheaper cost {cost[low]:g} (row "
                                                f"{table.rows[low]}) of the same goal")
    return [{"cost": float(cost[i]), "utility": float(utility[i])} for i in ids]
