"""Output that is not a terminal (a file, a pipe): plain progress lines, flushed at a steady cadence while the
job runs, and whole table rows instead of rows cut to 80 columns."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.core.progress import console_progress, plain_progress
from decisions.store import RunStatus, finish_run, start_run

runner = CliRunner()


def test_plain_progress_prints_each_start_finish_and_a_steady_tick() -> None:
    out = io.StringIO()
    with plain_progress(out, interval_s=0.05) as progress:
        progress("train", 0, 4)
        progress("train", 1, 4)  # no line of its own: the ticker reports the state
        time.sleep(0.3)
        ticks = out.getvalue().count("train: 1/4 (25%)")
        progress("train", 4, 4)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("train: 0/4 (0%)") and lines[-1].startswith("train: 4/4 (100%)")
    assert ticks >= 3, lines
    assert "\x1b" not in out.getvalue()  # no terminal control codes


def test_progress_to_a_file_is_written_while_the_job_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "out.log"
    with log.open("w") as file:
        monkeypatch.setattr(sys, "stdout", file)
        with console_progress(interval_s=0.05) as progress:
            progress("evaluate", 2, 10)
            time.sleep(0.2)
            seen = log.read_text()  # flushed before the run ends
            progress("evaluate", 10, 10)
    assert "evaluate: 2/10 (20%)" in seen
    assert "evaluate: 10/10" in log.read_text()


def test_a_table_in_a_pipe_keeps_whole_rows(store: str) -> None:
    name = "a-run-name-long-enough-to-push-the-table-past-eighty-columns-" + "x" * 40
    run_id = start_run("gas_storage", name, {}, url=store)
    finish_run(run_id, status=RunStatus.SUCCEEDED, url=store)
    result = runner.invoke(app, ["runs", "list"])
    assert result.exit_code == 0, result.output
    assert name in result.output and "…" not in result.output
