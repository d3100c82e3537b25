"""README tables generated from the stored bench results, and the check that they agree."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decisions.errors import InputError
from decisions.jobs import benches
from decisions.jobs.bench_report import (
    README,
    Row,
    provenance,
    readme_blocks,
    render_rows,
    render_table,
    stale_blocks,
    update_readme,
)
from decisions.jobs.bench_store import save_result

ROWS = (
    Row("value", "{value:.2f} (s.e. {stderr:.2f})"),
    Row("peer", "{peer_value:.1f}", optional=True),
)


def test_rows_are_filled_from_the_figures_and_an_absent_optional_row_is_left_out() -> None:
    lines = render_rows({"value": 1.234, "stderr": 0.05}, ROWS, "x")
    assert lines[2:] == ["| value | 1.23 (s.e. 0.05) |"]
    with_peer = render_rows({"value": 1.0, "stderr": 0.1, "peer_value": 2.0}, ROWS, "x")
    assert with_peer[-1] == "| peer | 2.0 |"


def test_a_required_figure_missing_from_the_stored_result_is_an_error_naming_it() -> None:
    with pytest.raises(InputError, match="lacks \\['stderr'\\]") as caught:
        render_rows({"value": 1.0}, ROWS, "x")
    assert caught.value.field == "figures"


def test_the_table_says_where_its_figures_come_from(tmp_path: Path) -> None:
    save_result("toy", {"value": 2.0, "stderr": 0.1}, wall_seconds=12.34, budget={"ppo": False}, folder=tmp_path)
    record = json.loads((tmp_path / "toy.json").read_text())
    line = provenance(record)
    assert line.startswith("From `benchmarks/toy.json`") and "12.3 s wall time" in line and "ppo=false" in line
    assert record["date"][:10] in line
    assert render_table("toy", ROWS, tmp_path).endswith("| value | 2.00 (s.e. 0.10) |\n")


def test_a_block_that_disagrees_with_its_stored_result_is_stale_and_rewritten(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- bench-table: toy -->\nold figures\n<!-- /bench-table -->\nafter\n")
    tables = {"toy": "new figures\n"}
    assert stale_blocks(readme.read_text(), tables) == ["toy"]
    assert update_readme(tables, readme) == ["toy"]
    assert readme.read_text() == "intro\n<!-- bench-table: toy -->\nnew figures\n<!-- /bench-table -->\nafter\n"
    assert stale_blocks(readme.read_text(), tables) == [] and update_readme(tables, readme) == []


def test_a_missing_stored_result_names_the_command_that_makes_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="decisions bench toy --save"):
        render_table("toy", ROWS, tmp_path)


def test_every_readme_figure_table_agrees_with_its_stored_bench_result() -> None:
    tables = benches.readme_tables()
    blocks = readme_blocks(README.read_text())
    assert tables, "no bench declares README rows with a stored result"
    assert sorted(blocks) == sorted(tables), "each stored bench with README rows has exactly one README block"
    assert stale_blocks(README.read_text(), tables) == [], "run `decisions bench report`"
