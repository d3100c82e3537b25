"""README and docs tables generated from the stored bench results, and the check that they agree."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from decisions.core.bench_row import Target
from decisions.errors import InputError
from decisions.platform.bench_report import (
    DOMAINS_BLOCK,
    README,
    TARGETS_BLOCK,
    Row,
    block_places,
    provenance,
    render_domains_table,
    render_rows,
    render_table,
    render_targets_table,
    report_files,
    stale_blocks,
    stale_files,
    update_files,
    update_page,
)
from decisions.platform.bench_store import save_result
from decisions.platform.benches import generated_tables

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
    assert update_page(tables, readme) == ["toy"]
    assert readme.read_text() == "intro\n<!-- bench-table: toy -->\nnew figures\n<!-- /bench-table -->\nafter\n"
    assert stale_blocks(readme.read_text(), tables) == [] and update_page(tables, readme) == []


def test_a_missing_stored_result_names_the_command_that_makes_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="decisions bench toy --save"):
        render_table("toy", ROWS, tmp_path)


def test_the_domains_table_gives_each_domain_its_page_summary_and_headline(tmp_path: Path) -> None:
    save_result("toy", {"value": 2.0, "stderr": 0.1}, wall_seconds=1.0, budget={}, folder=tmp_path)
    domains = [SimpleNamespace(name=name, title=name.title(), summary=f"Decide {name}.", headline_figure=None)
               for name in ("toy", "other")]
    table = render_domains_table(domains, lambda name: ROWS, tmp_path).splitlines()
    assert table[2] == "| [Toy](docs/domains/toy.md) | Decide toy. | value: 2.00 (s.e. 0.10) |"
    assert table[3] == "| [Other](docs/domains/other.md) | Decide other. | no stored bench |"
    domains[0].headline_figure = {"label": "the value, twice", "value": "{value:.1f} x 2"}
    assert render_domains_table(domains, lambda name: ROWS, tmp_path).splitlines()[2] == (
        "| [Toy](docs/domains/toy.md) | Decide toy. | the value, twice: 2.0 x 2 |")


def test_blocks_are_checked_and_rewritten_on_every_page(tmp_path: Path) -> None:
    (tmp_path / "docs" / "domains").mkdir(parents=True)
    (tmp_path / "README.md").write_text("<!-- domains-table -->\nold\n<!-- /domains-table -->\n")
    page = tmp_path / "docs" / "domains" / "toy.md"
    page.write_text("# Toy\n<!-- bench-table: toy -->\nold\n<!-- /bench-table -->\n")
    files = report_files(tmp_path)
    tables = {"toy": "new toy\n", DOMAINS_BLOCK: "new domains\n"}
    assert block_places(files) == {DOMAINS_BLOCK: [tmp_path / "README.md"], "toy": [page]}
    assert len(stale_files(tables, files)) == 2 and len(update_files(tables, files)) == 2
    assert page.read_text() == "# Toy\n<!-- bench-table: toy -->\nnew toy\n<!-- /bench-table -->\n"
    assert stale_files(tables, files) == []


def test_every_generated_table_in_the_readme_and_docs_agrees_with_its_stored_bench_result() -> None:
    tables = generated_tables()
    files = report_files()
    places = block_places(files)
    assert DOMAINS_BLOCK in tables and len(tables) > 1, "no bench declares README rows with a stored result"
    assert sorted(places) == sorted(tables), "each stored bench with README rows has a block, and the README the domains"
    assert all(len(pages) == 1 for pages in places.values()), f"a block appears twice: {places}"
    assert places[DOMAINS_BLOCK] == [README], "the domains table belongs to the README"
    assert places[TARGETS_BLOCK] == [README], "the targets table belongs to the README"
    assert tables[TARGETS_BLOCK].count("\n") > 2, "no bench declares targets"
    assert stale_files(tables, files) == [], "run `decisions bench report`"


def test_the_readme_is_a_front_door_of_at_most_250_lines() -> None:
    assert len(README.read_text().splitlines()) <= 250


def test_a_target_compares_its_figure_with_its_bound_and_has_no_verdict_without_a_number() -> None:
    assert Target("x", ">=", 1.0, "x").met(1.0) and not Target("x", ">=", 1.0, "x").met(0.99)
    assert Target("x", "<=", 0.9, "x").met(0.9) and not Target("x", "<=", 0.9, "x").met(0.91)
    assert not Target("x", ">", 0.0, "x").met(0.0) and Target("x", ">", 0.0, "x").met(1e-9)
    assert Target("x", "==", True, "x").met(True) and not Target("x", "==", True, "x").met(False)
    assert [Target("x", ">=", 1.0, "x").met(v) for v in (None, float("nan"), "text")] == [None, None, None]
    with pytest.raises(ValueError, match="op must be one of"):
        Target("x", "=>", 1.0, "x")


def test_the_targets_table_gives_each_target_its_stored_value_and_verdict(tmp_path: Path) -> None:
    save_result("toy", {"value": 2.0, "ratio": 1.2, "exact": True}, wall_seconds=1.0, budget={}, folder=tmp_path)
    targets = {"toy": (Target("value", ">=", 1.5, "value"), Target("ratio", "<=", 1.0, "speed"),
                       Target("exact", "==", True, "exact"), Target("missing", "<=", 0.9, "not run")),
               "none": (), "unrun": (Target("value", ">=", 1.0, "value"),)}
    table = render_targets_table(list(targets), targets.__getitem__, {"toy": tmp_path / "toy.md"}, tmp_path)
    assert table.splitlines()[2:] == [
        f"| [toy]({tmp_path / 'toy.md'}) | value: `value` >= 1.5 | 2 | yes |",
        f"| [toy]({tmp_path / 'toy.md'}) | speed: `ratio` <= 1 | 1.2 | **no** |",
        f"| [toy]({tmp_path / 'toy.md'}) | exact: `exact` == true | true | yes |",
        f"| [toy]({tmp_path / 'toy.md'}) | not run: `missing` <= 0.9 | none | not stored |",
        "| unrun | value: `value` >= 1 | none | not stored |",
    ]
