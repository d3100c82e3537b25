"""Shared app helpers: the runs table, the artifacts folder, CSV artifacts and the progress callback."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from apps import app_common
from decisions.store import get_run, list_runs, recorded_run


def test_runs_frame_keeps_only_metrics_some_run_has(store_url: str) -> None:
    with recorded_run("gas_storage", "one", {}, url=store_url) as run:
        run.log_metrics({"value_snapo": 5.0, "other": 1.0})
    with recorded_run("gas_storage", "two", {}, url=store_url):
        pass
    frame = app_common.runs_frame(list_runs(url=store_url))
    assert list(frame.columns) == ["id", "kind", "name", "status", "started", "duration_s", "value_snapo"]
    assert list(frame["name"]) == ["two", "one"]
    assert frame["value_snapo"].isna().tolist() == [True, False]
    assert app_common.runs_frame([]).empty
    assert app_common.run_kinds(store_url) == ["gas_storage"]


def test_artifacts_dir_is_next_to_a_sqlite_file(tmp_path: Path) -> None:
    assert app_common.artifacts_dir(f"sqlite:///{tmp_path / 'runs.db'}") == str(tmp_path / "artifacts")
    from decisions.store.db import default_database_path

    server_default = str(default_database_path().parent / "artifacts")
    assert app_common.artifacts_dir("sqlite:///:memory:") == server_default
    assert app_common.artifacts_dir("postgresql://user@host/db") == server_default


def test_csv_tables_reads_csv_artifacts_on_disk(store_url: str, tmp_path: Path) -> None:
    path = tmp_path / "schedule.csv"
    pd.DataFrame({"date": ["2026-04-01", "2026-04-02"], "forward": [20.0, 21.0]}).to_csv(path, index=False)
    with recorded_run("gas_storage", "with-files", {}, url=store_url) as run:
        run.add_artifact("schedule", path)
        run.add_artifact("gone", tmp_path / "gone.csv")
        run.add_artifact("chart", tmp_path / "chart.png")
    tables = app_common.csv_tables(get_run(run.run_id, url=store_url).artifacts)
    assert list(tables) == ["schedule"]
    assert pd.api.types.is_datetime64_any_dtype(tables["schedule"]["date"])


class _FakeBar:
    def __init__(self, value: float, text: str) -> None:
        self.updates = [(value, text)]

    def progress(self, value: float, text: str) -> None:
        self.updates.append((value, text))


class _FakeContainer:
    def __init__(self) -> None:
        self.bars: list[_FakeBar] = []

    def progress(self, value: float, text: str) -> _FakeBar:
        self.bars.append(_FakeBar(value, text))
        return self.bars[-1]


def test_streamlit_progress_draws_one_bar_per_task() -> None:
    container = _FakeContainer()
    progress = app_common.StreamlitProgress(container)
    progress("SNAPO training", 0, 4)
    progress("SNAPO training", 2, 4)
    progress("intrinsic LP", 1, 1)
    progress("SNAPO training", 5, 4)
    progress("empty task", 0, 0)
    assert progress.tasks == ["SNAPO training", "intrinsic LP", "empty task"]
    assert [value for value, _ in container.bars[0].updates] == pytest.approx([0.0, 0.5, 1.0])
    assert container.bars[0].updates[1][1] == "SNAPO training: 2/4"
    assert container.bars[2].updates == [(1.0, "empty task: 0/0")]
