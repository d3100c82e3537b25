"""Revision 0005 (operations: assets, deployments per asset, decisions, outcomes) on SQLite and
PostgreSQL: a store at 0004 and the committed store made before migrations carried forward, and back."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from decisions.errors import InputError
from decisions.store import (
    create_asset,
    current,
    db,
    deploy,
    deployments,
    dispose_engines,
    list_assets,
    migrations,
    outcomes_of,
    record_decision,
    record_outcome,
    session_scope,
)
from tests.store.conftest import BACKENDS
from tests.store.test_migrations import (
    HEAD,
    _execute,
    _kept_run_at,
    _legacy_store,
    _plain_engine,
    _schema,
    _version_table,
)

pytestmark = pytest.mark.usefixtures("no_cached_engines")


@pytest.mark.parametrize("backend", BACKENDS)
def test_0005_carries_a_store_at_0004_forward_with_operations_and_back(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = _kept_run_at("0004", "gas_storage", backend, request, tmp_path)
    for day in (1, 2, 3):
        _execute(url, "INSERT INTO deployments (run_id, kind, label, settings, chosen_at) "
                      f"VALUES (1, 'gas_storage', 'choice {day}', '{{}}', '2026-01-0{day} 00:00:00')")
    _execute(url, "DELETE FROM deployments WHERE id = 3")  # the newest id must not come back
    assert db.upgrade_store(url) == ("0004", HEAD)
    schema = _schema(url)
    assert [c for c in schema["deployments"]["columns"][-4:]] == [
        ("asset_id", True), ("policy_digest", True), ("figures", True), ("replaces_id", True)
    ]
    assert (("deployment_id",), "deployments", ("id",), "SET NULL") in schema["decisions"]["foreign_keys"]
    assert schema["outcomes"]["foreign_keys"] == [(("decision_id",), "decisions", ("id",), "CASCADE")]
    assert ("ix_decisions_asset_decided", ("asset_id", "decided_at"), False) in schema["decisions"]["indexes"]
    kept = deployments.history("gas_storage", url=url)
    assert [(d.id, d.label, d.asset_id, d.policy_digest, d.figures, d.replaces_id) for d in kept] == [
        (2, "choice 2", None, None, {}, None), (1, "choice 1", None, None, {}, None)
    ]
    create_asset("north", "gas_storage", {}, url=url)
    deployed = deploy("north", 1, "for north", {}, policy_digest="d" * 64, url=url)
    assert deployed.id == 4
    decision = record_decision("north", deployed.id, {}, {"inject": 1}, expected_value=2.0, url=url)
    record_outcome(decision.id, {}, 2.5, url=url)
    assert [r.residual for r in outcomes_of("north", url=url)] == [0.5]
    dispose_engines()
    engine = _plain_engine(url)
    try:
        with engine.begin() as connection:
            migrations.downgrade(connection, "0004")
        assert {"assets", "decisions", "outcomes"}.isdisjoint(_schema(url)) and _version_table(url) == ["0004"]
        with engine.connect() as connection:
            assert connection.exec_driver_sql("SELECT id FROM deployments ORDER BY id").scalars().all() == [1, 2]
    finally:
        engine.dispose()
    assert db.upgrade_store(url) == ("0004", HEAD)
    assert deployments.choose(1, "gas_storage", "after", {}, url=url).id == 5


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_store_before_migrations_upgrades_through_0005_with_nothing_lost(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    url = _legacy_store(backend, request, tmp_path)
    assert db.upgrade_store(url) == (None, HEAD)
    with session_scope(url, read_only=True) as session:
        counts = [session.scalar(sa.text(f"SELECT count(*) FROM {t}"))
                  for t in ("runs", "metrics", "artifacts", "deployments", "assets", "decisions", "outcomes")]
    assert counts == [3, 6, 3, 1, 0, 0, 0]
    [legacy] = deployments.history("gas_storage", url=url)
    assert (legacy.run_id, legacy.label, legacy.settings, legacy.asset_id, legacy.replaces_id) == (
        1, "legacy baseline policy", {"method": "snapo"}, None, None
    )
    assert list_assets(url=url) == []
    create_asset("north", "gas_storage", {"days": 30}, url=url)
    with pytest.raises(InputError, match="^run: run 2 is a 'utility' run"):
        deploy("north", 2, "x", {}, url=url)
    assert deploy("north", 1, "baseline", {"method": "snapo"}, url=url) == current("north", url=url)
    assert deployments.deployed("gas_storage", url=url) == legacy
