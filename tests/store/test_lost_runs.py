"""Runs whose process died: heartbeat, PID and host on the row, ``lost`` when judged, reaped, deleted;
an older store gains the new columns (``decisions db upgrade``); a stopped block is recorded as interrupted."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.dialects import sqlite
from sqlalchemy.schema import CreateTable

from decisions.store import (
    Artifact,
    Metric,
    Run,
    RunAliveError,
    RunNotFoundError,
    RunStatus,
    add_artifact,
    artifacts_root,
    beat,
    delete_run,
    dispose_engines,
    finish_run,
    get_run,
    interrupt_running,
    list_runs,
    log_metrics,
    lost_after,
    migrations,
    reap_lost_runs,
    recorded_run,
    session_scope,
    start_run,
)
from decisions.store.db import upgrade_store
from decisions.store.liveness import heartbeat_interval, pid_exists
from tests.helpers import dead_pid, set_row


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite store in a temporary directory."""
    yield f"sqlite:///{tmp_path / 'runs.db'}"
    dispose_engines()




def test_start_run_records_host_pid_and_a_first_heartbeat(url: str) -> None:
    import os
    import socket

    run_id = start_run("toy", "alive", {}, url=url)
    run = get_run(run_id, url=url)
    assert (run.status, run.host, run.pid) == (RunStatus.RUNNING, socket.gethostname(), os.getpid())
    assert run.heartbeat_at == run.started_at


def test_heartbeat_renews_while_the_block_runs_and_stops_after(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DECISIONS_HEARTBEAT_S", "0.05")
    with recorded_run("toy", "beating", {}, url=url) as run:
        first = get_run(run.run_id, url=url).heartbeat_at
        time.sleep(0.4)
        later = get_run(run.run_id, url=url).heartbeat_at
    assert later > first
    finished = get_run(run.run_id, url=url)
    time.sleep(0.2)
    assert get_run(run.run_id, url=url).heartbeat_at == finished.heartbeat_at  # no beat after the end
    assert finished.status is RunStatus.SUCCEEDED


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DECISIONS_HEARTBEAT_S", raising=False)
    monkeypatch.delenv("DECISIONS_LOST_AFTER_S", raising=False)
    assert (heartbeat_interval(), lost_after()) == (10.0, 60.0)
    monkeypatch.setenv("DECISIONS_HEARTBEAT_S", "30")
    assert lost_after() == 90.0  # three heartbeats
    monkeypatch.setenv("DECISIONS_LOST_AFTER_S", "5")
    assert lost_after() == 5.0
    monkeypatch.setenv("DECISIONS_LOST_AFTER_S", "soon")
    assert lost_after() == 90.0


def test_a_run_whose_process_is_gone_reads_back_lost(url: str) -> None:
    alive = start_run("toy", "alive", {}, url=url)
    killed = start_run("toy", "killed", {}, url=url)
    pid = dead_pid()
    assert not pid_exists(pid)
    set_row(url, killed, pid=pid)

    run = get_run(killed, url=url)
    assert run.status is RunStatus.LOST
    assert run.error == f"lost: process {pid} on {run.host} is gone"
    assert get_run(alive, url=url).status is RunStatus.RUNNING
    assert [r.id for r in list_runs(status="lost", url=url)] == [killed]
    assert [r.id for r in list_runs(status="running", url=url)] == [alive]
    assert [r.id for r in list_runs(status="running", limit=1, url=url)] == [alive]  # limit after judging


def test_a_run_without_a_recent_heartbeat_is_lost_after_the_threshold(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = start_run("toy", "silent", {}, url=url)
    two_minutes_ago = datetime.now(UTC) - timedelta(minutes=2)
    set_row(url, run_id, heartbeat_at=two_minutes_ago, host="another-host", pid=1)  # PID not checkable there
    monkeypatch.delenv("DECISIONS_LOST_AFTER_S", raising=False)
    run = get_run(run_id, url=url)
    assert run.status is RunStatus.LOST
    assert run.error.startswith("lost: no heartbeat since") and "process 1 on another-host" in run.error
    monkeypatch.setenv("DECISIONS_LOST_AFTER_S", "600")
    assert get_run(run_id, url=url).status is RunStatus.RUNNING
    set_row(url, run_id, heartbeat_at=datetime.now(UTC))
    monkeypatch.delenv("DECISIONS_LOST_AFTER_S")
    assert get_run(run_id, url=url).status is RunStatus.RUNNING


def test_reap_marks_lost_runs_in_the_store_and_a_live_one_revives(url: str) -> None:
    alive = start_run("toy", "alive", {}, url=url)
    killed = start_run("toy", "killed", {}, url=url)
    set_row(url, killed, pid=dead_pid())

    [marked] = reap_lost_runs(url=url)
    assert (marked.id, marked.status) == (killed, RunStatus.LOST)
    with session_scope(url, read_only=True) as session:
        row = session.get(Run, killed)
        assert (row.status, row.error, row.finished_at) == (RunStatus.LOST, marked.error, row.heartbeat_at)
    assert reap_lost_runs(url=url) == []
    assert get_run(alive, url=url).status is RunStatus.RUNNING

    # A run reaped by mistake (its process alive after all) comes back with its next heartbeat ...
    set_row(url, alive, status=RunStatus.LOST, error="lost: x")
    assert beat(alive, url=url)
    assert (get_run(alive, url=url).status, get_run(alive, url=url).error) == (RunStatus.RUNNING, None)
    # ... and a lost run can still be finished by its own process.
    finish_run(killed, status=RunStatus.SUCCEEDED, url=url)
    assert get_run(killed, url=url).status is RunStatus.SUCCEEDED
    assert not beat(killed, url=url)  # finished: the heartbeat stops


def test_a_stopped_block_is_recorded_interrupted_and_an_error_failed(url: str) -> None:
    with pytest.raises(KeyboardInterrupt), recorded_run("toy", "stopped", {}, url=url):
        raise KeyboardInterrupt("stopped by signal SIGTERM")
    with pytest.raises(ValueError), recorded_run("toy", "broken", {}, url=url):
        raise ValueError("boom")
    runs = {run.name: run for run in list_runs(url=url)}
    assert (runs["stopped"].status, runs["stopped"].error) == (
        RunStatus.INTERRUPTED, "KeyboardInterrupt: stopped by signal SIGTERM"
    )
    assert (runs["broken"].status, runs["broken"].error) == (RunStatus.FAILED, "ValueError: boom")
    assert [r.name for r in list_runs(status="interrupted", url=url)] == ["stopped"]


def test_interrupt_running_marks_what_a_stopped_sweep_left_running(url: str) -> None:
    left = start_run("toy", "left running", {}, url=url, sweep_id="s1")
    done = start_run("toy", "done", {}, url=url, sweep_id="s1")
    finish_run(done, status="succeeded", url=url)
    own = start_run("toy", "stopped itself", {}, url=url, sweep_id="s1")
    finish_run(own, status="interrupted", error="Terminated: stopped by signal SIGTERM", url=url)
    other = start_run("toy", "other sweep", {}, url=url, sweep_id="s2")

    assert interrupt_running(url=url, sweep_id="s1", error="interrupted: test") == [left, own]
    assert get_run(left, url=url).error == "interrupted: test"
    assert get_run(own, url=url).error == "Terminated: stopped by signal SIGTERM"
    assert get_run(done, url=url).status is RunStatus.SUCCEEDED
    assert get_run(other, url=url).status is RunStatus.RUNNING


def test_delete_removes_rows_and_the_folder_under_the_artifacts_root(url: str, tmp_path: Path) -> None:
    run_id = start_run("toy", "done", {}, url=url)
    folder = artifacts_root(url) / f"run-{run_id}"
    folder.mkdir(parents=True)
    (folder / "table.csv").write_text("a\n1\n")
    outside = tmp_path / "elsewhere" / "chart.png"
    outside.parent.mkdir()
    outside.write_bytes(b"png")
    log_metrics(run_id, {"value": 1.0}, url=url)
    add_artifact(run_id, "table", folder / "table.csv", url=url)
    add_artifact(run_id, "chart", outside, url=url)
    finish_run(run_id, status="failed", error="E: x", url=url)
    kept = start_run("toy", "kept", {}, url=url)
    log_metrics(kept, {"value": 2.0}, url=url)
    finish_run(kept, status="succeeded", url=url)

    deleted = delete_run(run_id, url=url)
    assert deleted.folders == (folder.resolve(),)
    assert not folder.exists() and outside.exists() and artifacts_root(url).exists()
    with pytest.raises(RunNotFoundError):
        get_run(run_id, url=url)
    with session_scope(url, read_only=True) as session:
        assert session.scalar(select(func.count()).select_from(Metric)) == 1
        assert session.scalar(select(func.count()).select_from(Artifact)) == 0
    assert get_run(kept, url=url).latest_metrics() == {"value": 2.0}


def test_delete_refuses_a_live_run_but_takes_a_lost_one(url: str) -> None:
    alive = start_run("toy", "alive", {}, url=url)
    with pytest.raises(RunAliveError, match="still running"):
        delete_run(alive, url=url)
    set_row(url, alive, pid=dead_pid())
    assert delete_run(alive, url=url).run.status is RunStatus.LOST
    assert list_runs(url=url) == []


def _old_runs_table() -> str:
    """The ``runs`` table as stores created before heartbeats have it."""
    from decisions.store.migrations.baseline import baseline_metadata

    ddl = str(CreateTable(baseline_metadata().tables["runs"]).compile(dialect=sqlite.dialect()))
    return "\n".join(line for line in ddl.splitlines() if "pid" not in line and "heartbeat_at" not in line)


def test_an_older_store_gains_the_new_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as connection:
        connection.execute(_old_runs_table())
        connection.execute(
            "INSERT INTO runs (kind, name, status, config, package_version, host, created_at, started_at) "
            "VALUES ('toy', 'stuck', 'running', '{}', '0.0', 'old-host', '2020-01-01 00:00:00', "
            "'2020-01-01 00:00:00')"
        )
    connection.close()
    url = f"sqlite:///{path}"
    try:
        assert upgrade_store(url) == (None, migrations.head())  # decisions db upgrade
        with sqlite3.connect(path) as connection:
            columns = {row[1] for row in connection.execute("PRAGMA table_info(runs)")}
        connection.close()
        assert {"pid", "heartbeat_at"} <= columns
        assert upgrade_store(url) == (migrations.head(), migrations.head())  # once only
        stuck = get_run(1, url=url)
        assert (stuck.pid, stuck.heartbeat_at, stuck.status) == (None, None, RunStatus.LOST)  # judged by its start
        new = start_run("toy", "new", {}, url=url)
        assert get_run(new, url=url).status is RunStatus.RUNNING
        assert [run.id for run in reap_lost_runs(url=url)] == [1]
    finally:
        dispose_engines()


@pytest.fixture
def cli_store(url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The ``url`` store as the command line's (``DECISIONS_DB_URL``), with wide output."""
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    monkeypatch.setenv("COLUMNS", "200")
    return url


def test_runs_delete_asks_first_and_refuses_a_live_run(cli_store: str) -> None:
    from typer.testing import CliRunner

    from decisions.cli import app

    cli = CliRunner()
    alive = start_run("toy", "alive", {}, url=cli_store)
    refused = cli.invoke(app, ["runs", "delete", str(alive), "--yes"])
    assert refused.exit_code == 2
    assert refused.output.strip() == (
        f"error: run: run {alive} is still running (process {get_run(alive, url=cli_store).pid} on "
        f"{get_run(alive, url=cli_store).host}); stop it first"
    )
    done = start_run("toy", "done", {}, url=cli_store)
    log_metrics(done, {"value": 1.0}, url=cli_store)
    finish_run(done, status="failed", error="E: x", url=cli_store)

    kept = cli.invoke(app, ["runs", "delete", str(done)], input="n\n")
    assert kept.exit_code == 1 and "Delete run 2 (toy/done, failed): 1 metric value, 0 artifact records?" in kept.output
    assert get_run(done, url=cli_store).status is RunStatus.FAILED
    deleted = cli.invoke(app, ["runs", "delete", str(done)], input="y\n")
    assert deleted.exit_code == 0 and "deleted run 2 (toy/done, failed)" in deleted.output
    with pytest.raises(RunNotFoundError):
        get_run(done, url=cli_store)
    assert cli.invoke(app, ["runs", "delete", str(done), "--yes"]).exit_code == 2  # gone


def test_runs_show_says_where_a_lost_run_ran_and_list_filters_it(cli_store: str) -> None:
    from typer.testing import CliRunner

    from decisions.cli import app

    cli = CliRunner()
    killed = start_run("toy", "killed", {}, url=cli_store)
    pid = dead_pid()
    set_row(cli_store, killed, pid=pid)
    shown = cli.invoke(app, ["runs", "show", str(killed)])
    assert shown.exit_code == 0
    assert f"run {killed} toy/killed: lost" in shown.output
    assert f"process {pid} on" in shown.output and "decisions runs reap" in shown.output
    assert "killed" in cli.invoke(app, ["runs", "list", "--status", "lost"]).output
    assert "killed" not in cli.invoke(app, ["runs", "list", "--status", "running"]).output
