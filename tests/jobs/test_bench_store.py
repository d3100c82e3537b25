"""Stored benchmark results: overrides parsed as JSON and checked, files with their provenance."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from decisions.jobs.bench_store import machine, parse_overrides, save_result
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
