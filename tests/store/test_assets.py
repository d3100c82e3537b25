"""Assets and their deployments: create, read, list, retire; deploy, current, history, rollback; refusals."""

from __future__ import annotations

import pytest

from decisions.errors import InputError
from decisions.store import (
    RunStatus,
    asset_history,
    create_asset,
    current,
    deploy,
    deployments,
    finish_run,
    get_asset,
    list_assets,
    retire_asset,
    rollback,
    start_run,
)
from decisions.store.repository import RunNotFoundError


def _run(url: str, kind: str = "gas_storage", status: RunStatus = RunStatus.SUCCEEDED) -> int:
    """A finished run of ``kind`` with ``status``."""
    run_id = start_run(kind, f"{kind} {status.value}", {}, url=url)
    finish_run(run_id, status=status, url=url)
    return run_id


def test_assets_are_created_read_listed_and_retired(any_store_url: str) -> None:
    url = any_store_url
    north = create_asset(" north ", "gas_storage", {"capacity": 2.0, "spread": float("inf")}, note="main site",
                         created_by="ops", url=url)
    create_asset("south", "gas_storage", {}, url=url)
    create_asset("grid", "utility", {"users": [1, 2]}, url=url)
    assert (north.name, north.kind, north.settings, north.note, north.created_by) == (
        "north", "gas_storage", {"capacity": 2.0, "spread": None}, "main site", "ops")
    assert get_asset("north", url=url) == north and not north.retired
    assert [a.name for a in list_assets(url=url)] == ["grid", "north", "south"]
    assert [a.name for a in list_assets("gas_storage", url=url)] == ["north", "south"]
    retired = retire_asset("south", url=url)
    assert retired.retired and get_asset("south", url=url).retired_at is not None
    assert [a.name for a in list_assets("gas_storage", url=url)] == ["north"]
    assert [a.name for a in list_assets("gas_storage", include_retired=True, url=url)] == ["north", "south"]
    assert create_asset("west", "gas_storage", {}, url=url).id > get_asset("grid", url=url).id


def test_asset_refusals_name_the_field_and_write_nothing(any_store_url: str) -> None:
    url = any_store_url
    create_asset("north", "gas_storage", {}, url=url)
    retire_asset("north", url=url)
    with pytest.raises(InputError, match=r"^name: an asset is already named 'north'"):
        create_asset("north", "utility", {}, url=url)
    with pytest.raises(InputError, match=r"^name: must not be empty$"):
        create_asset("  ", "utility", {}, url=url)
    with pytest.raises(InputError, match=r"^name: must be at most 255"):
        create_asset("x" * 256, "utility", {}, url=url)
    with pytest.raises(InputError, match=r"^kind: must not be empty$"):
        create_asset("east", "", {}, url=url)
    with pytest.raises(InputError, match=r"^settings: must be plain JSON"):
        create_asset("east", "utility", {"f": object()}, url=url)
    with pytest.raises(InputError, match=r"^asset: no asset is named 'east'$"):
        get_asset("east", url=url)
    with pytest.raises(InputError, match=r"^asset: no asset is named 'east'$"):
        retire_asset("east", url=url)
    with pytest.raises(InputError, match=r"^asset: 'north' was retired already"):
        retire_asset("north", url=url)
    assert [a.name for a in list_assets(include_retired=True, url=url)] == ["north"]


def test_deploying_twice_keeps_a_history_and_rollback_adds_a_row(any_store_url: str) -> None:
    url = any_store_url
    create_asset("north", "gas_storage", {}, url=url)
    old, new = _run(url), _run(url)
    assert current("north", url=url) is None and asset_history("north", url=url) == []
    first = deploy("north", old, "snapo baseline", {"method": "snapo"}, policy_digest="a" * 64,
                   figures={"value": 1.5, "gap": float("nan")}, note="first", chosen_by="ann", url=url)
    second = deploy("north", new, "snapo tuned", {"method": "snapo", "lr": 0.1}, policy_digest="b" * 64,
                    url=url)
    assert (first.asset_id, first.replaces_id, first.figures, first.chosen_by) == (
        get_asset("north", url=url).id, None, {"value": 1.5, "gap": None}, "ann")
    assert (second.replaces_id, second.kind, second.figures) == (first.id, "gas_storage", {})
    assert current("north", url=url) == second
    assert asset_history("north", url=url) == [second, first]

    back = rollback("north", chosen_by="bob", url=url)
    assert (back.run_id, back.label, back.settings, back.policy_digest, back.figures) == (
        first.run_id, first.label, first.settings, first.policy_digest, first.figures)
    assert (back.replaces_id, back.note, back.chosen_by) == (second.id, f"rollback to deployment {first.id}", "bob")
    assert [d.id for d in asset_history("north", url=url)] == [back.id, second.id, first.id]
    assert current("north", url=url) == back
    again = rollback("north", to=second.id, url=url)
    assert (again.run_id, again.policy_digest, again.replaces_id) == (new, "b" * 64, back.id)
    assert deployments.history("gas_storage", url=url) == []  # choices for the whole kind are apart
    assert deployments.deployed("gas_storage", url=url) is None


def test_deploy_and_rollback_refusals_write_nothing(any_store_url: str) -> None:
    url = any_store_url
    create_asset("north", "gas_storage", {}, url=url)
    create_asset("grid", "utility", {}, url=url)
    good, failed, other = _run(url), _run(url, status=RunStatus.FAILED), _run(url, kind="utility")
    with pytest.raises(InputError, match=r"^asset: no asset is named 'east'$"):
        deploy("east", good, "x", {}, url=url)
    with pytest.raises(InputError, match=rf"^run: run {failed} is failed: only a succeeded run's policy"):
        deploy("north", failed, "x", {}, url=url)
    with pytest.raises(InputError, match=rf"^run: run {other} is a 'utility' run, not 'gas_storage'"):
        deploy("north", other, "x", {}, url=url)
    with pytest.raises(RunNotFoundError):
        deploy("north", other + 100, "x", {}, url=url)
    with pytest.raises(InputError, match=r"^label: must not be empty$"):
        deploy("north", good, " ", {}, url=url)
    with pytest.raises(InputError, match=r"^figures: must be plain JSON"):
        deploy("north", good, "x", {}, figures={"f": {1, 2}}, url=url)
    with pytest.raises(InputError, match=r"^asset: 'north' has no earlier deployment"):
        rollback("north", url=url)
    only = deploy("north", good, "x", {}, url=url)
    grid = deploy("grid", other, "y", {}, url=url)
    with pytest.raises(InputError, match=r"^asset: 'north' has no earlier deployment"):
        rollback("north", url=url)
    with pytest.raises(InputError, match=rf"^to: deployment {grid.id} is not a deployment of asset 'north' \(or its run was deleted\)$"):
        rollback("north", to=grid.id, url=url)
    with pytest.raises(InputError, match=rf"^to: deployment {only.id} is the current deployment of asset 'north'$"):
        rollback("north", to=only.id, url=url)
    retire_asset("north", url=url)
    with pytest.raises(InputError, match=r"^asset: 'north' is retired"):
        deploy("north", good, "x", {}, url=url)
    with pytest.raises(InputError, match=r"^asset: 'north' is retired"):
        rollback("north", to=only.id, url=url)
    assert asset_history("north", url=url) == [only]
    assert current("grid", url=url) == grid


def test_deleting_a_run_held_by_an_asset_says_so_and_its_deployments_go_with_the_flag(tmp_path) -> None:
    from decisions.store import RunDeployedError, delete_run

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    create_asset("north", "gas_storage", {}, url=url)
    old, new = _run(url), _run(url)
    first = deploy("north", old, "x", {}, url=url)
    deploy("north", new, "y", {}, url=url)
    with pytest.raises(RunDeployedError, match=r"1 deployment record, deployed now for asset 'north'"):
        delete_run(new, url=url)
    with pytest.raises(RunDeployedError, match=r"1 deployment record, none deployed now"):
        delete_run(old, url=url)
    delete_run(new, url=url, with_deployments=True)
    assert current("north", url=url) == first
    with pytest.raises(InputError, match=r"^asset: 'north' has no earlier deployment"):
        rollback("north", url=url)
