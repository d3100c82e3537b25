"""``core.csv_table``: a user's CSV checked cell by cell, each refusal naming the file, row and column."""

from __future__ import annotations

import io
from datetime import timedelta

import numpy as np
import pytest

from decisions.core.csv_table import CsvTable
from decisions.errors import InputError

GOOD = "time,load_kwh,kind,ok,count\n2026-01-01 00:00,1.5,home,yes,3\n\n2026-01-01 01:00,2,Shop,0,4\n"


def _table(text: str, **columns) -> CsvTable:
    source = io.StringIO(text)
    source.name = "home.csv"
    return CsvTable.read(source, field="data.load", required=columns.get("required", ("time", "load_kwh")),
                         optional=columns.get("optional", ("kind", "ok", "count")))


def test_columns_read_into_arrays_with_the_files_row_numbers() -> None:
    table = _table(GOOD)
    assert len(table) == 2 and table.rows.tolist() == [2, 4]  # the blank line 3 is skipped
    np.testing.assert_array_equal(table.numbers("load_kwh", low=0, high=100), [1.5, 2.0])
    assert table.choices("kind", ("home", "shop")).tolist() == [0, 1]
    assert table.booleans("ok").tolist() == [True, False]
    assert table.integers("count", 0, 10).tolist() == [3, 4]
    times = table.dates("time", step=timedelta(hours=1))
    blank = _table("time,load_kwh\n2026-01-01,\n2026-01-02,2\n")
    assert blank.numbers("load_kwh", blank=0.0).tolist() == [0.0, 2.0]
    assert [t.hour for t in times] == [0, 1]


@pytest.mark.parametrize(("text", "call", "message"), [
    ("time,load_kwh,colour\n", None, "home.csv: unknown column 'colour'"),
    ("time\n2026-01-01\n", None, "home.csv: missing column 'load_kwh'"),
    ("time,load_kwh\n\n", None, "home.csv: it has no row after the header"),
    ("time,load_kwh\n2026-01-01,1\n2026-01-02,x\n", lambda t: t.numbers("load_kwh"),
     "home.csv, row 3, column 'load_kwh': 'x' is not a finite number"),
    ("time,load_kwh\n2026-01-01,\n", lambda t: t.numbers("load_kwh"), "row 2, column 'load_kwh': is empty"),
    ("time,load_kwh\n2026-01-01,1500\n", lambda t: t.numbers("load_kwh", low=0, high=100, unit_hint="in Wh?"),
     "row 2, column 'load_kwh': 1500 is above 100 (in Wh?)"),
    ("time,load_kwh\n2026-01-01,-1\n", lambda t: t.numbers("load_kwh", low=0), "-1 is below 0"),
    ("time,load_kwh\n01/02/2026,1\n", lambda t: t.dates("time"), "'01/02/2026' is not an ISO date"),
    ("time,load_kwh\n2026-01-02,1\n2026-01-01,1\n", lambda t: t.dates("time"),
     "row 3, column 'time': 2026-01-01 does not come after 2026-01-02"),
    ("time,load_kwh\n2026-01-01,1\n2026-01-03,1\n", lambda t: t.dates("time", step=timedelta(days=1)),
     "row 3, column 'time': 2026-01-03 is not one day after 2026-01-01"),
    ("time,load_kwh,count\n2026-01-01,1,2.5\n", lambda t: t.integers("count", 0, 9), "'2.5' is not a whole number"),
    ("time,load_kwh,kind\n2026-01-01,1,barn\n", lambda t: t.choices("kind", ("home", "shop")),
     "'barn' is not one of home, shop"),
])
def test_refusals_name_the_file_row_and_column(text: str, call, message: str) -> None:
    with pytest.raises(InputError) as refused:
        table = _table(text)
        call(table)
    assert refused.value.field == "data.load" and message in refused.value.problem, refused.value.problem
