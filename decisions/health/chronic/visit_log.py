"""A user's own visit log read from a CSV file and checked cell by cell (no JAX).

The format: a header (row 1), then one row per visit; column names ignore case and blanks.

- ``patient``: the patient's identifier (text);
- ``clinician``: the clinician's identifier (text), the same on every row of a patient;
- ``visit``: 0, 1, 2, ... per patient, consecutive and in file order (rows of different patients
  may interleave); at most the horizon;
- the state at that visit: ``band`` (0-3, 0 in target), ``step`` (0-3), ``adherent`` (0/1),
  ``side_effect`` (0/1), ``months_since`` (0-2, the months since the last intensification);
- ``controlled`` (optional; 0 when empty or absent): 1 once control is confirmed (band 0 at two
  visits in a row: the visit after a band-0 visit is controlled or off band 0). It is absorbing:
  every later visit of the patient is controlled; its state columns may be empty;
- ``action``: the action taken at that visit, one of ``settings.ACTIONS``; empty on a patient's
  last row (the state observed after the last action), and only there;
- ``kappa`` (optional): the clinician's capability in [0, 1], the same on every row of a
  clinician; without the column it is estimated from the log (``capability``).

The disease is the spec's (``[data] log_disease``), not a column. Blank lines are skipped. An error
is one ``InputError`` naming ``data.log``, the file, the row (as the file counts it, header = row 1)
and the column. In the ``Logs`` a patient's transitions after their last visit are unobserved,
padded with state 0 and action hold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from decisions.core.csv_input import CsvSource, cell_number, read_text_csv
from decisions.errors import InputError
from decisions.health.chronic.capability import estimate_kappas
from decisions.health.chronic.logs import CONTROLLED, STATE_SHAPE, Logs
from decisions.health.chronic.settings import ACTIONS

FIELD = "data.log"
STATE_COLUMNS = ("band", "step", "adherent", "side_effect", "months_since")
REQUIRED = ("patient", "clinician", "visit", *STATE_COLUMNS, "action")
OPTIONAL = ("controlled", "kappa")
HOLD = ACTIONS.index("hold")
PAD_STATE, PAD_ACTION = 0, HOLD
"""What a ragged log's unobserved slots hold (``Logs.observed`` is False there)."""


class VisitLog(NamedTuple):
    """A user's visit log: the ``logs`` (``observed`` set), the patients' and clinicians' identifiers
    (``logs.clinician`` indexes ``clinicians``), in order of first appearance, and whether the kappas
    came from the file (``kappa_given``) or were estimated."""

    logs: Logs
    patients: tuple[str, ...]
    clinicians: tuple[str, ...]
    kappa_given: bool


class _Table:
    """The log's non-blank rows as text, each with its row number in the file, and refusals that name them."""

    def __init__(self, frame: pd.DataFrame, label: str, field: str) -> None:
        self.label, self.field = label, field
        if not isinstance(frame.index, pd.RangeIndex):
            raise InputError(field, f"{label}: its rows have more cells than the header has columns")
        names = {str(c).strip().lower(): c for c in frame.columns}
        unknown = [str(c).strip() for key, c in names.items() if key not in (*REQUIRED, *OPTIONAL)]
        if unknown:
            raise InputError(field, f"{label}: unknown column {unknown[0]!r} (a visit log has "
                                    f"{', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)})")
        missing = [name for name in REQUIRED if name not in names]
        if missing:
            raise InputError(field, f"{label}: missing column {missing[0]!r} (a visit log has "
                                    f"{', '.join(REQUIRED)} and optionally {', '.join(OPTIONAL)})")
        cells = frame.apply(lambda column: column.str.strip())
        filled = (cells != "").any(axis=1).to_numpy()
        self.rows = np.flatnonzero(filled) + 2
        if not len(self.rows):
            raise InputError(field, f"{label}: the log is empty (no visit after the header)")
        self.cells = {name: cells[names[name]].to_numpy()[filled] for name in names}

    def has(self, name: str) -> bool:
        return name in self.cells

    def refuse(self, index: int, column: str, problem: str) -> InputError:
        """The error for the cell of ``column`` in the ``index``-th visit row."""
        return InputError(self.field, f"{self.label}, row {self.rows[index]}, column {column!r}: {problem}")

    def identifiers(self, name: str) -> np.ndarray:
        """A text column, none of its cells empty."""
        cells = self.cells[name]
        empty = np.flatnonzero(cells == "")
        if len(empty):
            raise self.refuse(int(empty[0]), name, "is empty")
        return cells

    def integers(self, name: str, high: int, blank: np.ndarray | int | None = None, note: str = "") -> np.ndarray:
        """An integer column in ``0..high`` (``note`` follows the range in errors); an empty cell is
        refused unless ``blank`` allows it (an int: every empty cell reads as it; a mask: where True,
        empty cells read as -1). The first bad cell in file order is refused."""
        numbers = pd.to_numeric(pd.Series(self.cells[name], dtype=object), errors="coerce").to_numpy(np.float64)
        plain = (numbers >= 0) & (numbers <= high) & (numbers == np.floor(numbers))  # NaN (empty, text): False
        values = np.where(plain, numbers, -1).astype(np.int64)
        for index in np.flatnonzero(~plain):
            values[index] = self._integer(int(index), name, high, blank, note)
        return values

    def _integer(self, index: int, name: str, high: int, blank: np.ndarray | int | None, note: str) -> int:
        """One cell of ``integers``."""
        cell = self.cells[name][index]
        if cell == "":
            if blank is None or not (isinstance(blank, int) or bool(blank[index])):
                raise self.refuse(index, name, "is empty")
            return blank if isinstance(blank, int) else -1
        number = cell_number(cell)
        if number is None or not math.isfinite(number) or number != int(number):
            raise self.refuse(index, name, f"{cell!r} is not an integer")
        if not 0 <= number <= high:
            raise self.refuse(index, name, f"{cell} is outside 0-{high}{note}")
        return int(number)

    def actions(self) -> np.ndarray:
        """The action column as indices into ``ACTIONS`` (-1 where empty)."""
        values = np.full(len(self.rows), -1, np.int64)
        for index, cell in enumerate(self.cells["action"]):
            if cell:
                if cell.lower() not in ACTIONS:
                    raise self.refuse(index, "action", f"{cell!r} is not an action ({', '.join(ACTIONS)})")
                values[index] = ACTIONS.index(cell.lower())
        return values

    def kappas(self) -> np.ndarray:
        """The kappa column: numbers in [0, 1]."""
        values = np.empty(len(self.rows), np.float64)
        for index, cell in enumerate(self.cells["kappa"]):
            number = cell_number(cell)
            if number is None or not math.isfinite(number):
                raise self.refuse(index, "kappa", "is empty" if cell == "" else f"{cell!r} is not a number")
            if not 0.0 <= number <= 1.0:
                raise self.refuse(index, "kappa", f"{cell} is outside [0, 1]")
            values[index] = number
        return values


def _source_label(source: CsvSource) -> str:
    """How errors name the file: its name, or the upload's."""
    if isinstance(source, str | Path):
        return Path(source).name
    return Path(str(getattr(source, "name", "the visit log"))).name


def _first_rows(keys: np.ndarray) -> dict[tuple[int, int], int]:
    """The first row index of each ``(patient, visit)`` key."""
    first: dict[tuple[int, int], int] = {}
    for index, key in enumerate(map(tuple, keys.tolist())):
        first.setdefault(key, index)
    return first


def _visit_order(table: _Table, patient: np.ndarray, visit: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """Check each patient's visits run 0, 1, 2, ... in file order; the number of visits per patient."""
    first = _first_rows(np.stack([patient, visit], axis=1))
    seen = np.zeros(len(names), np.int64)
    for index, (p, v) in enumerate(zip(patient.tolist(), visit.tolist(), strict=True)):
        expected = int(seen[p])
        if v < expected:
            earlier = table.rows[first[(p, v)]]
            raise table.refuse(index, "visit", f"visit {v} of patient {names[p]!r} repeats row {earlier}")
        if v > expected:
            later = first.get((p, expected))
            if later is not None:
                raise table.refuse(index, "visit", f"visit {v} of patient {names[p]!r} comes before their visit "
                                                   f"{expected} (row {table.rows[later]}): visits must be in order")
            raise table.refuse(index, "visit", f"patient {names[p]!r} has no visit {expected} before visit {v}")
        seen[p] += 1
    return seen


def _one_per(table: _Table, column: str, group: np.ndarray, values: list, owner: str,
             names: Sequence[str]) -> list:
    """Check ``values`` are the same on every row of a group (a patient's clinician, a clinician's
    kappa); each group's value, in group order."""
    first: dict[int, int] = {}
    for index, g in enumerate(group.tolist()):
        if g not in first:
            first[g] = index
        elif values[index] != values[first[g]]:
            raise table.refuse(index, column, f"{values[index]!r} differs from {values[first[g]]!r} on row "
                                              f"{table.rows[first[g]]}: one {column} per {owner} ({names[g]!r})")
    return [values[first[g]] for g in range(len(first))]


def _states(table: _Table) -> np.ndarray:
    """Each row's state index: ``CONTROLLED`` where ``controlled`` is 1, else its components'."""
    controlled = (table.integers("controlled", 1, blank=0) if table.has("controlled")
                  else np.zeros(len(table.rows), np.int64))
    highs = [n - 1 for n in STATE_SHAPE]
    parts = [table.integers(name, high, blank=controlled == 1) for name, high in zip(STATE_COLUMNS, highs, strict=True)]
    transient = np.ravel_multi_index(tuple(np.maximum(p, 0) for p in parts), STATE_SHAPE)
    return np.where(controlled == 1, CONTROLLED, transient)


def _check_course(table: _Table, patient: np.ndarray, state: np.ndarray, action: np.ndarray,
                  last: np.ndarray) -> None:
    """Each visit's action given exactly when a later visit shows its outcome; control confirmed only
    after a visit in band 0, then absorbing; band 0 twice in a row is control confirmed."""
    band_zero = state < int(np.prod(STATE_SHAPE[1:]))  # band is the slowest component
    previous: dict[int, int] = {}
    for index, p in enumerate(patient.tolist()):
        if last[index] and action[index] >= 0:
            raise table.refuse(index, "action", "is given on the patient's last visit: leave it empty "
                                                "(no later visit shows its outcome)")
        if not last[index] and action[index] < 0:
            raise table.refuse(index, "action", "is empty: every visit but a patient's last needs an action")
        before = previous.get(p)
        previous[p] = index
        if before is None:
            if state[index] == CONTROLLED:
                raise table.refuse(index, "controlled", "is 1 on the patient's first visit: control is confirmed "
                                                        "by band 0 at two visits in a row")
            continue
        here = f"row {table.rows[before]}"
        if state[before] == CONTROLLED and state[index] != CONTROLLED:
            raise table.refuse(index, "controlled", f"is not 1 after control was confirmed ({here}): it is absorbing")
        if state[index] == CONTROLLED and state[before] != CONTROLLED and not band_zero[before]:
            raise table.refuse(index, "controlled", f"is 1 but the visit before ({here}) is not in band 0")
        if band_zero[index] and band_zero[before]:
            raise table.refuse(index, "controlled", f"must be 1: band 0 here and at the visit before ({here}) "
                                                    "is control confirmed")


def _arrays(patient: np.ndarray, visit: np.ndarray, state: np.ndarray, action: np.ndarray, visits: np.ndarray,
            horizon: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``states[n, H + 1]``, ``actions[n, H]`` and ``observed[n, H]``, padded where unobserved."""
    states = np.full((len(visits), horizon + 1), PAD_STATE, np.int32)
    actions = np.full((len(visits), horizon), PAD_ACTION, np.int32)
    states[patient, visit] = state
    acted = action >= 0
    actions[patient[acted], visit[acted]] = action[acted]
    observed = np.arange(horizon)[None, :] < (visits - 1)[:, None]
    return states, actions, observed


def read_visit_log(source: CsvSource, horizon: int, *, habit: int = HOLD, field: str = FIELD) -> VisitLog:
    """Read and check a visit log (the module docstring's format) over ``horizon`` visits.

    Without a ``kappa`` column each clinician's kappa is estimated from the log, ``habit`` (an index
    into ``ACTIONS``) being what clinicians do otherwise (``capability.estimate_kappas``).

    Raises:
        InputError: naming ``field``, the file, the row and the column: an empty log, a missing or
            unknown column, an empty, non-integer or out-of-range cell, an unknown action, a visit
            beyond the horizon, out of order, repeated or after a gap, a patient with two
            clinicians, a kappa outside [0, 1] or differing within a clinician, an action missing
            (or given on a patient's last visit), or a course control cannot take.
    """
    table = _Table(read_text_csv(source, field, skip_blank_lines=False), _source_label(source), field)
    patient, patients = pd.factorize(table.identifiers("patient"))
    clinician, clinicians = pd.factorize(table.identifiers("clinician"))
    patient_names, clinician_names = [str(p) for p in patients], [str(c) for c in clinicians]
    visit = table.integers("visit", horizon, note=" (visits 0 to the horizon)")
    visits = _visit_order(table, patient, visit, patient_names)
    row_clinicians = [clinician_names[c] for c in clinician.tolist()]
    index_of = {name: i for i, name in enumerate(clinician_names)}
    clinician_of = np.array([index_of[name] for name in
                             _one_per(table, "clinician", patient, row_clinicians, "patient", patient_names)], np.int32)
    state, action = _states(table), table.actions()
    _check_course(table, patient, state, action, visit == visits[patient] - 1)
    states, actions, observed = _arrays(patient, visit, state, action, visits, horizon)
    logs = Logs(states, actions, np.zeros(len(visits), np.float32), clinician_of, observed)
    kappa_given = table.has("kappa")
    if kappa_given:
        per_clinician = _one_per(table, "kappa", clinician, table.kappas().tolist(), "clinician", clinician_names)
        kappa = np.asarray(per_clinician, np.float32)[clinician_of]
    else:
        kappa = estimate_kappas(logs, habit, clinicians=len(clinician_names))
    return VisitLog(logs._replace(kappa=kappa), tuple(patient_names), tuple(clinician_names), kappa_given)


def write_visit_log(path: str | Path, logs: Logs, *, patients: Sequence[str] | None = None,
                    clinicians: Sequence[str] | None = None, kappa: bool = True) -> Path:
    """Write ``logs`` in the format ``read_visit_log`` reads: each patient's visits up to their last
    observed one (``observed`` must be a prefix of each row); ``kappa``: with the kappa column."""
    observed = logs.observed_mask()
    visits = observed.sum(axis=1) + 1
    patients = patients or [f"P{n + 1:04d}" for n in range(len(visits))]
    clinicians = clinicians or [f"C{c + 1:02d}" for c in range(int(logs.clinician.max()) + 1)]
    rows = []
    for n, count in enumerate(visits.tolist()):
        for t in range(count):
            state = int(logs.states[n, t])
            parts = [""] * len(STATE_COLUMNS) if state == CONTROLLED else np.unravel_index(state, STATE_SHAPE)
            row = {"patient": patients[n], "clinician": clinicians[int(logs.clinician[n])], "visit": t,
                   **dict(zip(STATE_COLUMNS, [str(p) for p in parts], strict=True)),
                   "controlled": int(state == CONTROLLED),
                   "action": ACTIONS[int(logs.actions[n, t])] if t < count - 1 else ""}
            if kappa:
                row["kappa"] = f"{float(logs.kappa[n]):.6g}"
            rows.append(row)
    pd.DataFrame(rows).to_csv(path, index=False)
    return Path(path)
