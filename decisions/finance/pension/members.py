"""The fund's own members from a CSV: one row per member (or per group of identical members with a
``count``), checked cell by cell and turned into the scenario's cohorts, so every method runs unchanged.

Columns (case ignored): ``age`` (years), ``salary`` (annual, in the fund's currency; actives),
``service`` (past service years; actives), ``pension`` (annual pension in payment; pensioners),
optionally ``count`` (members the row stands for, default 1), ``sex`` (``F`` or ``M``: checked and
kept for the fund's records; the scheme's mortality law is one table for all members) and ``member``
(a label). Whether a member is active or retired follows from ``age`` and the scenario's
``retirement_age``. Every refusal names the file, the row and the column.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from decisions.core.csv_table import CsvTable
from decisions.core.numbers import COUNT_MAX

FIELD = "scenario.population.members_csv"
"""The spec field that names the members' file (errors name it)."""
COLUMNS = ("age", "salary", "service", "pension")
OPTIONAL = ("count", "sex", "member")
SEXES = ("f", "m", "female", "male")
MAX_ROWS = 2000
"""Rows a file may have (the scenario's cohort limit): group identical members with ``count``."""
AMOUNT_MAX = 1e8
"""Largest annual salary or pension of one member (more looks like cents, not currency units)."""
SALARY_MIN = 1000.0
"""Smallest annual salary of an active member (less looks like thousands)."""
PENSION_MIN = 100.0
"""Smallest annual pension in payment (less looks like thousands)."""
WORK_START = 15.0
"""The youngest age at which service can start."""
_IN_THOUSANDS = "the file may be in thousands: give annual amounts in the fund's currency, e.g. 42000 not 42"


def read_members(path: str | Path, retirement_age: float | None) -> list[dict[str, Any]]:
    """The scenario's cohorts (``age, count, salary, service, pension``) from the members' CSV at ``path``.

    Args:
        retirement_age: the scenario's normal retirement age; None (not a valid number) skips the
            checks that need it (the scenario's validation then refuses the age itself).

    Raises:
        InputError: on ``scenario.population.members_csv``, naming the file, row and column.
    """
    table = CsvTable.read(path, field=FIELD, required=COLUMNS, optional=OPTIONAL)
    if len(table) > MAX_ROWS:
        raise table.refuse_file(f"it has {len(table)} members rows, at most {MAX_ROWS}: group identical "
                                "members into one row with a count column")
    age = table.numbers("age", low=16, high=110, unit_hint="ages are in years: is it a year of birth or months?")
    money_hint = "the file may be in cents: give annual amounts in the fund's currency"
    salary = table.numbers("salary", low=0, high=AMOUNT_MAX, blank=0.0, unit_hint=money_hint)
    service = table.numbers("service", low=0, high=70, blank=0.0, unit_hint="service is in years: is it in months?")
    pension = table.numbers("pension", low=0, high=AMOUNT_MAX, blank=0.0, unit_hint=money_hint)
    count = table.numbers("count", low=0, above=True, high=COUNT_MAX) if table.has("count") else np.ones(len(table))
    if table.has("sex"):
        table.choices("sex", SEXES)
    if table.has("member"):
        table.text("member", empty=True)
    if retirement_age is not None:
        _check_status(table, retirement_age, age, salary, service, pension)
    return [{"age": float(a), "count": float(n), "salary": float(s), "service": float(y), "pension": float(p)}
            for a, n, s, y, p in zip(age, count, salary, service, pension, strict=True)]


def _check_status(table: CsvTable, retirement: float, age: np.ndarray, salary: np.ndarray, service: np.ndarray,
                  pension: np.ndarray) -> None:
    """Actives need a salary and no pension; pensioners need a pension and neither salary nor service."""
    for i in range(len(table)):
        if age[i] < retirement:
            status = f"an active member (age {age[i]:g} < retirement_age {retirement:g})"
            if pension[i] > 0:
                raise table.refuse(i, "pension", f"{status} has a pension in payment; give 0 or leave it empty")
            _require_amount(table, i, "salary", salary[i], SALARY_MIN, f"{status} needs a salary above 0")
            if service[i] > age[i] - WORK_START:
                raise table.refuse(i, "service", f"{service[i]:g} years of service at age {age[i]:g} would start "
                                                 f"before age {WORK_START:g} (is it in months?)")
            continue
        status = f"a pensioner (age {age[i]:g} >= retirement_age {retirement:g})"
        if salary[i] > 0:
            raise table.refuse(i, "salary", f"{status} has a salary; give 0 or leave it empty")
        if service[i] > 0:
            raise table.refuse(i, "service", f"is used only for active members; {status}: give 0 or leave it empty")
        _require_amount(table, i, "pension", pension[i], PENSION_MIN, f"{status} needs a pension in payment above 0")


def _require_amount(table: CsvTable, i: int, column: str, amount: float, minimum: float, missing: str) -> None:
    """Refuse row ``i`` when its annual ``column`` amount is not above 0 (saying ``missing``) or is below
    ``minimum``."""
    if amount <= 0:
        raise table.refuse(i, column, missing)
    if amount < minimum:
        raise table.refuse(i, column, f"{amount:g} is below {minimum:g} for an annual {column} ({_IN_THOUSANDS})")
