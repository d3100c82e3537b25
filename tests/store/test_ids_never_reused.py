"""Run and deployment ids are never handed out twice, not even after the newest is deleted; revision 0003
brings a SQLite store forward keeping its rows; a new run never reuses a folder that already holds files."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy.pool import NullPool

from decisions.store import (
    RunStatus,
    db,
    delete_run,
    deployments,
    dispose_engines,
    finish_run,
    get_run,
    list_runs,
    migrations,
    start_run,
)


def _finished(url: str, name: str) -> int:
    """A new run, recorded as succeeded; its id."""
    run_id = start_run("toy", name, {}, url=url)
    finish_run(run_id, status=RunStatus.SUCCEEDED, url=url)
    return run_id


pytestmark = pytest.mark.usefixtures("no_cached_engines")


def test_the_newest_runs_id_is_not_reused_after_it_is_deleted(any_store_url: str) -> None:
    url = any_store_url
    first, newest = _finished(url, "a"), _finished(url, "b")
    chosen = deployments.choose(newest, "toy", "policy", {}, url=url)
    delete_run(newest, url=url, with_deployments=True)
    after = _finished(url, "c")
    assert after > newest > first
    assert deployments.choose(after, "toy", "policy", {}, url=url).id > chosen.id


def _store_at_0002_with_rows(path: Path) -> str:
    """A SQLite store at revision 0002 (before ids were kept from reuse) holding two runs, their metrics,
    an artifact and a deployment of run 2; foreign keys enforced as the store's own connections do."""
    url = f"sqlite:///{path}"
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            connection.exec_driver_sql("PRAGMA foreign_keys = ON")
            migrations.upgrade(connection, "0002")
            connection.exec_driver_sql(
                "INSERT INTO runs (kind, name, status, config, package_version, host, created_at) VALUES "
                "('toy', 'a', 'succeeded', '{}', '0', 'h', '2026-01-01'), ('toy', 'b', 'failed', '{}', '0', 'h', '2026-01-02')"
            )
            connection.exec_driver_sql("INSERT INTO metrics (run_id, name, value) VALUES (1, 'm', 1.0), (2, 'm', 2.0)")
            connection.exec_driver_sql("INSERT INTO artifacts (run_id, name, path, url) VALUES (2, 'r', '/x', 'file:///x')")
            connection.exec_driver_sql(
                "INSERT INTO deployments (run_id, kind, label, settings, chosen_at) VALUES (2, 'toy', 'p', '{}', '2026-01-03')"
            )
    finally:
        engine.dispose()
    return url


def test_db_upgrade_keeps_every_row_and_ids_are_not_reused_afterwards(tmp_path: Path) -> None:
    url = _store_at_0002_with_rows(tmp_path / "runs.db")
    assert db.upgrade_store(url) == ("0002", migrations.head())
    run = get_run(2, url=url)
    assert [m.value for m in run.metrics] == [2.0] and [a.url for a in run.artifacts] == ["file:///x"]
    assert [d.run_id for d in deployments.history("toy", url=url)] == [2]
    delete_run(2, url=url, with_deployments=True)
    assert deployments.history("toy", url=url) == []
    assert _finished(url, "c") == 3
    delete_run(1, url=url)  # the cascade from runs still holds after the rebuild
    assert [r.id for r in list_runs(url=url)] == [3]


def test_0003_downgrades_keeping_the_rows(tmp_path: Path) -> None:
    url = _store_at_0002_with_rows(tmp_path / "runs.db")
    db.upgrade_store(url)
    dispose_engines()
    engine = sa.create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as connection:
            migrations.downgrade(connection, "0002")
            assert connection.exec_driver_sql("SELECT count(*) FROM metrics").scalar() == 2
            assert "AUTOINCREMENT" not in connection.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE name = 'runs'"
            ).scalar()
    finally:
        engine.dispose()


def test_a_new_run_sets_aside_a_folder_that_already_holds_files(tmp_path: Path, store: str) -> None:
    from decisions.platform.record import execute_recorded, run_folder

    class Report:
        metrics: dict[str, float] = {}

        def save(self, directory: str | Path) -> dict[str, Path]:
            path = Path(directory) / "new.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("new")
            return {"new": path}

    stale = run_folder(1, str(tmp_path / "out"))
    stale.mkdir(parents=True)
    (stale / "old.txt").write_text("old")
    run_id = execute_recorded("toy", "x", {}, Report, url=store, output_dir=str(tmp_path / "out"))
    assert run_id == 1
    assert sorted(p.name for p in stale.iterdir()) == ["new.txt"]
    [moved] = [p for p in stale.parent.iterdir() if p.name.startswith("run-1.replaced-")]
    assert (moved / "old.txt").read_text() == "old"
