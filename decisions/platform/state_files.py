"""Reading the operator's files: states to decide and outcomes to record, as JSON or CSV.

JSON: one object, or a list of objects. CSV: a header, then one record per row; a cell is read as
JSON where it is JSON (numbers, ``true``/``false``, ``[1, 2]``) and as text otherwise, and an empty
cell is left out (the field's default applies). Errors name the file and the row as the file counts it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from decisions.errors import InputError


class Record(NamedTuple):
    """One record of a file: how errors name it (``<file> row N``, ``<file> record N``) and its fields."""

    name: str
    fields: dict[str, Any]

MAX_ROWS = 1_000_000
"""The most records one file may hold."""


def _cell(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def read_records(path: Path, *, field: str) -> list[Record]:
    """The records of a JSON or CSV file (by its suffix), in order.

    Raises:
        InputError: on ``field``: no such file, not JSON/CSV, empty, or a record that is not a table
            (the file and row named).
    """
    if not path.is_file():
        raise InputError(field, f"no such file: {path}")
    text = path.read_text(encoding="utf-8-sig")
    if path.suffix.lower() == ".json":
        try:
            loaded = json.loads(text)
        except ValueError as err:
            raise InputError(field, f"{path.name} is not JSON ({err})") from None
        records = loaded if isinstance(loaded, list) else [loaded]
        for index, record in enumerate(records):
            if not isinstance(record, Mapping):
                raise InputError(f"{path.name} record {index + 1}", "must be a table of fields")
        records = [Record(f"{path.name} record {i + 1}", dict(r)) for i, r in enumerate(records)]
    elif path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        if not reader.fieldnames:
            raise InputError(field, f"{path.name} has no header row")
        records = []
        for row in reader:
            if None in row or any(value is None for value in row.values()):
                raise InputError(f"{path.name} row {reader.line_num}", "has a different number of cells than the header")
            cells = {key.strip(): _cell(value.strip()) for key, value in row.items() if value.strip()}
            records.append(Record(f"{path.name} row {reader.line_num}", cells))
    else:
        raise InputError(field, f"{path.name}: give a .json or .csv file")
    if not records:
        raise InputError(field, f"{path.name} holds no record")
    if len(records) > MAX_ROWS:
        raise InputError(field, f"{path.name} holds {len(records)} records, at most {MAX_ROWS}")
    return records
