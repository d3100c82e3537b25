"""Stored benchmark results: overrides parsed as JSON and checked, files with their provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decisions.platform.bench_store import machine, parse_overrides, save_result
from tests.helpers import assert_input_error


def _bench(progress=None, *, paths: int = 10, ppo: bool = True, counts: tuple[int, ...] = (1,)) -> dict:
    return {"paths": paths}


def test_overrides_are_json_values_of_the_bench_keywords() -> None:
    assert parse_overrides(["paths=512", "ppo=false", "counts=[4, 16]"], _bench) == {
        "paths": 512, "ppo": False, "counts": [4, 16],
    }
    assert parse_overrides([], _bench) == {}


@pytest.mark.parametrize(
    ("pairs", "words"),
    [
        (["paths"], "expected key=value"),
        (["=3"], "expected key=value"),
        (["progress=1"], "'progress' is not a setting"),  # positional: not an override
        (["colour=1"], "'colour' is not a setting"),
        (["ppo=__import__('os')"], "must be JSON"),
    ],
)
def test_bad_overrides_name_the_option(pairs: list[str], words: str) -> None:
    assert_input_error(parse_overrides, pairs, _bench, field="set", words=words)


def test_a_saved_result_carries_commit_date_machine_wall_time_and_budget(tmp_path: Path) -> None:
    path = save_result("toy", {"value": 1.5}, wall_seconds=12.345, budget={"ppo": False}, folder=tmp_path)
    record = json.loads(path.read_text())
    assert path == tmp_path / "toy.json"
    assert record["figures"] == {"value": 1.5} and record["budget"] == {"ppo": False}
    assert record["wall_seconds"] == 12.3 and record["date"].startswith("20")
    assert record["machine"] == machine() and record["machine"]["cores"] >= 1
    assert record["commit"] is None or len(record["commit"].removesuffix("-dirty")) == 40


def test_a_merged_result_keeps_earlier_figures_and_lists_each_part(tmp_path: Path) -> None:
    save_result("toy", {"a": 1.0, "b": 2.0}, wall_seconds=10.0, budget={"scenarios": ["x"]}, folder=tmp_path)
    save_result("toy", {"b": 3.0, "c": 4.0}, wall_seconds=5.0, budget={"scenarios": ["y"]}, folder=tmp_path,
                merge=True)
    path = save_result("toy", {"d": 5.0}, wall_seconds=1.0, budget={}, folder=tmp_path, merge=True)
    record = json.loads(path.read_text())
    assert record["figures"] == {"a": 1.0, "b": 3.0, "c": 4.0, "d": 5.0}  # the newer part's b replaces
    assert [p["figures"] for p in record["parts"]] == [["a"], ["b", "c"], ["d"]]  # each part lists what it still gives
    assert [p["budget"] for p in record["parts"]] == [{"scenarios": ["x"]}, {"scenarios": ["y"]}, {}]
    assert record["wall_seconds"] == 16.0 and record["budget"] == {}
    from decisions.platform.bench_report import provenance

    line = provenance(record)
    assert "run in 3 parts" in line and 'scenarios=["y"]' in line and "(2 figures)" in line
    path = save_result("toy", {"b": 6.0, "c": 7.0}, wall_seconds=2.0, budget={}, folder=tmp_path, merge=True)
    record = json.loads(path.read_text())  # the second part's figures are all given again: it is dropped
    assert [p["figures"] for p in record["parts"]] == [["a"], ["d"], ["b", "c"]]
    assert record["wall_seconds"] == 13.0 and record["figures"]["b"] == 6.0


def test_a_merge_that_gives_every_figure_again_leaves_one_part_read_as_a_plain_result(tmp_path: Path) -> None:
    from decisions.platform.bench_report import provenance

    save_result("toy", {"a": 1.0}, wall_seconds=10.0, budget={"scenarios": ["x"]}, folder=tmp_path)
    save_result("toy", {"b": 2.0}, wall_seconds=5.0, budget={}, folder=tmp_path, merge=True)
    path = save_result("toy", {"a": 3.0, "b": 4.0}, wall_seconds=7.0, budget={}, folder=tmp_path, merge=True)
    record = json.loads(path.read_text())
    assert len(record["parts"]) == 1 and record["wall_seconds"] == 7.0
    line = provenance(record)
    assert "parts" not in line and "7.0 s wall time" in line and "settings: defaults" in line


def test_merge_without_a_stored_result_writes_a_plain_one(tmp_path: Path) -> None:
    path = save_result("toy", {"a": 1.0}, wall_seconds=2.0, budget={}, folder=tmp_path, merge=True)
    record = json.loads(path.read_text())
    assert record["figures"] == {"a": 1.0} and "parts" not in record


def test_a_result_is_credited_to_the_commit_its_bench_started_at(tmp_path: Path) -> None:
    path = save_result("toy", {"a": 1.0}, wall_seconds=2.0, budget={}, folder=tmp_path, commit="abc1234" * 5 + "12345")
    assert json.loads(path.read_text())["commit"] == "abc1234" * 5 + "12345"
