"""Remake ``store_before_migrations.db``: a run store as the release before migrations left it.

That release's ``get_engine`` made the tables with ``Base.metadata.create_all`` (plus
``add_missing_columns``) and kept no ``alembic_version`` table. Run this script with that
release's code, e.g. from a worktree of the commit before issue 24's migrations::

    python tests/store/data/make_legacy_store.py [OUTPUT]

With a later release it stops (its ``get_engine`` builds a migrated store, which is not what
the tests of ``decisions db upgrade`` need). The store holds three runs (succeeded, failed,
interrupted) with metrics at steps and artifact rows, and one deployment; the file is switched
from WAL to the rollback journal and vacuumed, so it is one self-contained file.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

from decisions.store import add_artifact, dispose_engines, finish_run, get_engine, log_metrics, start_run
from decisions.store.deployments import choose

OUTPUT = Path(__file__).with_name("store_before_migrations.db")


def make(path: Path) -> None:
    """Write the legacy store at ``path`` (replacing any file there)."""
    path.unlink(missing_ok=True)
    url = f"sqlite:///{path}"
    engine = get_engine(url)
    with engine.connect() as connection:
        tables = set(connection.dialect.get_table_names(connection))
    if "alembic_version" in tables:
        dispose_engines()
        path.unlink()
        sys.exit("this code already builds migrated stores: run the script with the release before migrations")

    good = start_run("gas_storage", "legacy baseline", {"seed": 7, "scenario": {"days": 30}}, url=url, sweep_id="sw-legacy")
    for step, loss in enumerate([3.0, 2.0, 1.5]):
        log_metrics(good, {"loss": loss}, step=step, url=url)
    log_metrics(good, {"value": 1.25e6, "job_seconds": 4.5}, url=url)
    add_artifact(good, "report", "/srv/decisions/artifacts/run-1/report.json", url=url)
    add_artifact(good, "policy", "/srv/decisions/artifacts/run-1/policy.msgpack", "application/msgpack", url=url)
    finish_run(good, status="succeeded", url=url)
    choose(good, "gas_storage", "legacy baseline policy", {"method": "snapo"}, note="kept across upgrades", url=url)

    bad = start_run("utility", "legacy failure", {"lr": 10.0}, url=url)
    log_metrics(bad, {"loss": float("nan")}, step=0, url=url)
    finish_run(bad, status="failed", error="RuntimeError: diverged", url=url)

    stopped = start_run("pension", "legacy interrupted", {}, url=url, sweep_id="sw-legacy")
    add_artifact(stopped, "curve", "/srv/decisions/artifacts/run-3/curve.png", url=url)
    finish_run(stopped, status="interrupted", error="interrupted: stopped with its sweep", url=url)
    dispose_engines()

    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode = DELETE")
    connection.close()
    with sqlite3.connect(path) as connection:
        connection.execute("VACUUM")
    connection.close()


if __name__ == "__main__":
    make(Path(sys.argv[1]) if len(sys.argv) > 1 else OUTPUT)
