"""Tests of the run store: round trips, failures, listing, URL choice and concurrent writers, on SQLite
and PostgreSQL."""

from __future__ import annotations

import math
import multiprocessing
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import func, select

from decisions.store import (
    Metric,
    Run,
    RunNotFoundError,
    RunStatus,
    add_artifact,
    database_url,
    dispose_engines,
    finish_run,
    get_engine,
    get_run,
    list_runs,
    log_metrics,
    recorded_run,
    session_scope,
    start_run,
)

WRITERS = 4
RUNS_PER_WRITER = 25
METRICS_PER_RUN = 10


@pytest.fixture
def url(any_store_url: str) -> str:
    """A fresh store: each test runs on SQLite (a new file) and on PostgreSQL (``tests/store/conftest.py``)."""
    return any_store_url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    """A fresh SQLite store in a temporary directory."""
    yield f"sqlite:///{tmp_path / 'store' / 'runs.db'}"
    dispose_engines()


def test_round_trip_keeps_config_metrics_and_artifacts(url: str) -> None:
    before = datetime.now(UTC)
    config = {"scenario": {"volatility": 0.3, "days": 365}, "seed": 7, "tags": ["a", "b"]}
    run_id = start_run("gas_storage", "baseline", config, url=url, sweep_id="sw-1")

    log_metrics(run_id, {"loss": 2.5, "value": 1.0e6}, step=0, url=url)
    log_metrics(run_id, {"loss": 1.25}, step=1, url=url)
    add_artifact(run_id, "policy", Path("out/policy.msgpack"), "application/msgpack", url=url)
    add_artifact(run_id, "report", "out/report.json", url=url)
    finish_run(run_id, status=RunStatus.SUCCEEDED, url=url)

    run = get_run(run_id, url=url)
    assert run.id == run_id
    assert (run.kind, run.name, run.sweep_id) == ("gas_storage", "baseline", "sw-1")
    assert run.status is RunStatus.SUCCEEDED
    assert run.config == config
    assert run.error is None
    assert run.host
    assert run.package_version
    assert [(m.name, m.value, m.step) for m in run.metrics] == [
        ("loss", 2.5, 0),
        ("value", 1.0e6, 0),
        ("loss", 1.25, 1),
    ]
    assert run.latest_metrics() == {"loss": 1.25, "value": 1.0e6}
    assert [m.value for m in run.metric_history("loss")] == [2.5, 1.25]
    assert [(a.name, a.path, a.media_type) for a in run.artifacts] == [
        ("policy", "out/policy.msgpack", "application/msgpack"),
        ("report", "out/report.json", "application/json"),  # guessed from the suffix
    ]
    # Timestamps come back aware UTC, in order, and the duration matches them.
    assert run.created_at.tzinfo is not None and run.created_at.utcoffset() == timedelta(0)
    assert before - timedelta(seconds=1) <= run.created_at <= run.started_at <= run.finished_at
    assert run.duration_seconds == pytest.approx((run.finished_at - run.started_at).total_seconds(), abs=1e-3)


def test_record_is_detached_from_the_database(url: str) -> None:
    run_id = start_run("toy", "r", {"x": 1}, url=url)
    record = get_run(run_id, url=url)
    log_metrics(run_id, {"late": 1.0}, url=url)
    assert record.metrics == ()  # the record is a snapshot, not a live view
    with pytest.raises(AttributeError):
        record.name = "other"  # type: ignore[misc]


def test_non_finite_metrics_are_stored_as_null_and_bad_values_rejected(url: str) -> None:
    run_id = start_run("toy", "r", {}, url=url)
    log_metrics(run_id, {"nan": math.nan, "inf": math.inf, "ok": 3}, url=url)
    assert get_run(run_id, url=url).latest_metrics() == {"nan": None, "inf": None, "ok": 3.0}

    with pytest.raises(ValueError, match="metric 'bad'.*not a number"):
        log_metrics(run_id, {"fine": 1.0, "bad": "high"}, url=url)  # type: ignore[dict-item]
    # Nothing of the rejected call was written.
    assert "fine" not in get_run(run_id, url=url).latest_metrics()


def test_failed_run_records_one_line_error_and_reraises(url: str) -> None:
    with pytest.raises(RuntimeError, match="solver diverged"):
        with recorded_run("toy", "bad", {"lr": 10.0}, url=url) as recorder:
            recorder.log_metrics({"loss": 1.0}, step=0)
            raise RuntimeError("solver diverged\nat step 3")

    run = get_run(recorder.run_id, url=url)
    assert run.status is RunStatus.FAILED
    assert run.error == "RuntimeError: solver diverged at step 3"
    assert run.finished_at is not None and run.duration_seconds is not None
    assert run.latest_metrics() == {"loss": 1.0}  # what was logged before the failure stays


def test_recorded_run_marks_success(url: str, tmp_path: Path) -> None:
    with recorded_run("toy", "good", {"lr": 0.1}, url=url) as recorder:
        recorder.log_metrics({"loss": 0.5})
        recorder.add_artifact("curve", tmp_path / "curve.png")
    run = get_run(recorder.run_id, url=url)
    assert run.status is RunStatus.SUCCEEDED
    assert run.error is None
    assert [(a.name, a.media_type) for a in run.artifacts] == [("curve", "image/png")]


def test_list_runs_filters_and_orders_newest_first(url: str) -> None:
    ids = []
    for i, (kind, ok) in enumerate([("a", True), ("b", True), ("a", False), ("a", True), ("b", False)]):
        run_id = start_run(kind, f"run{i}", {"i": i}, url=url)
        finish_run(run_id, status="succeeded" if ok else "failed", error=None if ok else "E: x", url=url)
        ids.append(run_id)
    running = start_run("a", "still running", {}, url=url)

    assert [r.id for r in list_runs(url=url)] == [running, *reversed(ids)]
    assert [r.id for r in list_runs(kind="a", url=url)] == [running, ids[3], ids[2], ids[0]]
    assert [r.id for r in list_runs(status="failed", url=url)] == [ids[4], ids[2]]
    assert [r.id for r in list_runs(kind="a", status=RunStatus.SUCCEEDED, url=url)] == [ids[3], ids[0]]
    assert [r.id for r in list_runs(status=RunStatus.RUNNING, url=url)] == [running]
    assert [r.id for r in list_runs(limit=2, url=url)] == [running, ids[4]]
    assert list_runs(kind="nope", url=url) == []


def test_list_runs_orders_by_creation_time_not_id(url: str) -> None:
    older = start_run("toy", "older", {}, url=url)
    newer = start_run("toy", "newer", {}, url=url)
    with session_scope(url) as session:  # backdate the run with the larger id
        session.get(Run, newer).created_at = datetime(2000, 1, 1, tzinfo=UTC)
    assert [r.name for r in list_runs(url=url)] == ["older", "newer"]
    assert older < newer


def test_bad_input_gives_clear_errors(url: str) -> None:
    with pytest.raises(RunNotFoundError, match="run 999 does not exist"):
        get_run(999, url=url)
    with pytest.raises(RunNotFoundError):
        log_metrics(999, {"x": 1.0}, url=url)
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        start_run("toy", "r", {"f": object()}, url=url)
    with pytest.raises(ValueError, match="not JSON-serialisable"):
        start_run("toy", "r", {"x": math.nan}, url=url)
    run_id = start_run("toy", "r", {}, url=url)
    with pytest.raises(ValueError, match="final status"):
        finish_run(run_id, status="running", url=url)
    with pytest.raises(ValueError):
        finish_run(run_id, status="exploded", url=url)
    finish_run(run_id, status="succeeded", url=url)
    with pytest.raises(ValueError, match="already finished"):
        finish_run(run_id, status="failed", url=url)
    with pytest.raises(ValueError, match="limit"):
        list_runs(limit=0, url=url)


def test_deleting_a_run_cascades_to_metrics(url: str) -> None:
    run_id = start_run("toy", "r", {}, url=url)
    log_metrics(run_id, {"a": 1.0, "b": 2.0}, url=url)
    with session_scope(url) as session:
        session.delete(session.get(Run, run_id))
    with session_scope(url, read_only=True) as session:
        assert session.scalar(select(func.count()).select_from(Metric)) == 0


def test_sqlite_pragmas(sqlite_url: str) -> None:
    with get_engine(sqlite_url).connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000


def test_default_url_honours_env_var(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    target = tmp_path / "env" / "custom.db"
    monkeypatch.setenv("DECISIONS_DB_URL", f"sqlite:///{target}")
    assert database_url() == f"sqlite:///{target}"
    try:
        run_id = start_run("toy", "via env", {})  # no url: the environment decides
        assert get_run(run_id).name == "via env"
    finally:
        dispose_engines()
    assert target.is_file()


def test_default_url_is_in_user_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DECISIONS_DB_URL", raising=False)
    data_dir = tmp_path / "data" / "decisions"
    monkeypatch.setattr("platformdirs.user_data_dir", lambda appname: str(tmp_path / "data" / appname))
    assert database_url() == f"sqlite:///{data_dir / 'runs.db'}"
    assert data_dir.is_dir()


def _write_runs(url: str, writer: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    """Child process: record RUNS_PER_WRITER runs of METRICS_PER_RUN metrics each."""
    barrier.wait(timeout=60)
    for i in range(RUNS_PER_WRITER):
        with recorded_run("stress", f"w{writer}-{i}", {"writer": writer, "i": i}, url=url) as recorder:
            recorder.log_metrics({f"m{k}": float(k * i) for k in range(METRICS_PER_RUN)}, step=i)


def test_concurrent_processes_lose_nothing(url: str) -> None:
    # The file does not exist yet: the writers also race to create the schema.
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(WRITERS)
    workers = [ctx.Process(target=_write_runs, args=(url, w, barrier)) for w in range(WRITERS)]
    start = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0] * WRITERS
    assert time.monotonic() - start < 60

    runs = list_runs(limit=None, url=url)
    assert len(runs) == WRITERS * RUNS_PER_WRITER
    assert all(run.status is RunStatus.SUCCEEDED for run in runs)
    assert sorted(run.name for run in runs) == sorted(
        f"w{w}-{i}" for w in range(WRITERS) for i in range(RUNS_PER_WRITER)
    )
    assert sum(len(run.metrics) for run in runs) == WRITERS * RUNS_PER_WRITER * METRICS_PER_RUN
    with session_scope(url, read_only=True) as session:
        assert session.scalar(select(func.count()).select_from(Metric)) == 1000
