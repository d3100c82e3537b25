"""The decision log: decisions and outcomes round-trip, the newest outcome counts, refusals, deleted runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisions import store
from decisions.errors import InputError


def _deployed(url: str, asset: str = "north") -> int:
    """Create ``asset`` (gas storage), deploy a succeeded run's policy for it; the deployment's id."""
    store.create_asset(asset, "gas_storage", {"capacity": 1.0}, url=url)
    run_id = store.start_run("gas_storage", "study", {}, url=url)
    store.finish_run(run_id, status=store.RunStatus.SUCCEEDED, url=url)
    return store.deploy(asset, run_id, "snapo", {"method": "snapo"}, policy_digest="d" * 64, url=url).id


def test_decisions_and_outcomes_round_trip_and_the_newest_outcome_counts(any_store_url: str) -> None:
    url = any_store_url
    deployment = _deployed(url)
    first = store.record_decision("north", deployment, {"day": 1, "level": 0.5}, {"inject": 0.2},
                                  expected_value=10.0, interval=(8.0, 12.0),
                                  details={"alternative": {"inject": 0.0, "value": 9.0},
                                           "sensitivity": {"price": float("nan")}},
                                  decided_by="ann", url=url)
    second = store.record_decision("north", deployment, {"day": 2}, {"inject": 0.0},
                                   expected_value=float("inf"), interval=(float("-inf"), 3.0),
                                   policy_digest="e" * 64, url=url)
    third = store.record_decision("north", None, {"day": 3}, {"inject": 0.1}, url=url)
    assert (first.asset, first.deployment_id, first.policy_digest, first.decided_by) == (
        "north", deployment, "d" * 64, "ann")
    assert (first.state, first.action, first.details["sensitivity"]) == (
        {"day": 1, "level": 0.5}, {"inject": 0.2}, {"price": None})
    assert (second.expected_value, second.interval_low, second.interval_high, second.policy_digest) == (
        None, None, 3.0, "e" * 64)
    assert (third.deployment_id, third.policy_digest, third.expected_value) == (None, None, None)
    assert store.get_decision(first.id, url=url) == first
    assert store.decisions_of("north", url=url) == [third, second, first]
    assert store.decisions_of("north", 1, url=url) == [third]

    wrong = store.record_outcome(first.id, {"cash": 7.0}, 7.0, note="meter misread", recorded_by="bob", url=url)
    right = store.record_outcome(first.id, {"cash": 11.0}, 11.0, url=url)
    pending = store.record_outcome(second.id, {"cash": float("nan")}, float("nan"), url=url)
    assert (wrong.note, wrong.recorded_by, pending.realised, pending.realised_value) == (
        "meter misread", "bob", {"cash": None}, None)
    assert store.outcomes_for(first.id, url=url) == [wrong, right]
    series = store.outcomes_of("north", url=url)
    assert [(r.decision_id, r.expected_value, r.interval_low, r.interval_high, r.outcome_id, r.realised_value)
            for r in series] == [(first.id, 10.0, 8.0, 12.0, right.id, 11.0), (second.id, None, None, 3.0,
                                                                              pending.id, None)]
    assert [r.residual for r in series] == [1.0, None]


def test_decision_log_refusals_name_the_field_and_write_nothing(any_store_url: str) -> None:
    url = any_store_url
    deployment = _deployed(url)
    other = _deployed(url, "south")
    with pytest.raises(InputError, match=r"^asset: no asset is named 'east'$"):
        store.record_decision("east", None, {}, {}, url=url)
    with pytest.raises(InputError, match=rf"^deployment: deployment {other} is not a deployment of asset 'north'$"):
        store.record_decision("north", other, {}, {}, url=url)
    with pytest.raises(InputError, match=r"^interval: low 2.0 is above high 1.0$"):
        store.record_decision("north", deployment, {}, {}, interval=(2.0, 1.0), url=url)
    with pytest.raises(InputError, match=r"^interval: must be \(low, high\)"):
        store.record_decision("north", deployment, {}, {}, interval=(1.0,), url=url)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^expected_value: must be a number"):
        store.record_decision("north", deployment, {}, {}, expected_value="high", url=url)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^action: must be a JSON object"):
        store.record_decision("north", deployment, {}, [1], url=url)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^state: must be plain JSON"):
        store.record_decision("north", deployment, {"x": object()}, {}, url=url)
    with pytest.raises(InputError, match=r"^asset: no asset is named 'east'$"):
        store.decisions_of("east", url=url)
    with pytest.raises(InputError, match=r"^asset: no asset is named 'east'$"):
        store.outcomes_of("east", url=url)
    assert store.decisions_of("north", url=url) == []
    with pytest.raises(InputError, match=r"^decision: there is no decision 1$"):
        store.record_outcome(1, {}, 1.0, url=url)
    with pytest.raises(InputError, match=r"^decision: there is no decision 1$"):
        store.get_decision(1, url=url)
    decision = store.record_decision("north", deployment, {}, {}, url=url)
    with pytest.raises(InputError, match=r"^realised_value: must be a number"):
        store.record_outcome(decision.id, {}, "lots", url=url)  # type: ignore[arg-type]
    with pytest.raises(InputError, match=r"^realised: must be plain JSON"):
        store.record_outcome(decision.id, {"x": object()}, 1.0, url=url)
    assert store.outcomes_of("north", url=url) == [] and store.outcomes_for(decision.id, url=url) == []
    store.retire_asset("north", url=url)
    with pytest.raises(InputError, match=r"^asset: 'north' is retired"):
        store.record_decision("north", deployment, {}, {}, url=url)
    # what a decision taken before retirement led to still counts
    store.record_outcome(decision.id, {}, 2.0, url=url)
    assert [r.realised_value for r in store.outcomes_of("north", url=url)] == [2.0]


def test_decisions_outlive_the_deployment_of_a_deleted_run(any_store_url: str) -> None:
    url = any_store_url
    deployment = _deployed(url)
    decision = store.record_decision("north", deployment, {"day": 1}, {"inject": 0.2}, expected_value=1.0,
                                     url=url)
    store.record_outcome(decision.id, {}, 1.5, url=url)
    run_id = store.current("north", url=url).run_id
    deleted = store.delete_run(run_id, url=url, with_deployments=True)
    assert [d.id for d in deleted.deployments] == [deployment]
    kept = store.get_decision(decision.id, url=url)
    assert (kept.deployment_id, kept.policy_digest, kept.state) == (None, "d" * 64, {"day": 1})
    assert [r.realised_value for r in store.outcomes_of("north", url=url)] == [1.5]


@pytest.mark.parametrize("count", [1, 3, 40])  # a few rows one statement each, a batch in one executemany
def test_a_batch_of_decisions_is_recorded_in_order_with_its_ids(any_store_url: str, count: int) -> None:
    url = any_store_url
    deployment = _deployed(url)
    store.record_decision("north", deployment, {"day": 0}, {"inject": 0.0}, url=url)  # ids already taken
    batch = [store.NewDecision({"day": d}, {"inject": d / 10}, float(d), (d - 1.0, d + 1.0),
                               {"value": float(d), "missing": float("nan"), "pair": (d, d)})
             for d in range(1, count + 1)]
    written = store.record_decisions("north", deployment, batch, decided_by="ann", url=url)
    assert written[-1].details == {"value": float(count), "missing": None, "pair": [count, count]}
    assert [w.state["day"] for w in written] == list(range(1, count + 1))
    assert [w.id for w in written] == sorted({w.id for w in written}) and all(w.id > 1 for w in written)
    assert [store.get_decision(w.id, url=url) for w in written] == written
    assert store.decisions_of("north", None, url=url)[:count] == written[::-1]
    ids = store.record_decision_ids("north", deployment, batch, decided_by="ann", url=url)
    assert ids == sorted(set(ids)) and len(ids) == count and ids[0] > written[-1].id
    assert [store.get_decision(i, url=url).details for i in ids] == [w.details for w in written]


def test_a_batch_stores_the_same_columns_as_a_few_decisions(tmp_path: Path) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    deployment = _deployed(url)
    batch = [store.NewDecision({"day": d, "curve": [1.5, 2.0]}, {"inject": d / 10}, float(d),
                               (d - 1.0, float("inf")),
                               {"value": float(d), "missing": float("nan"), "pair": (d, d), "text": "é"})
             for d in range(3)]
    few = store.record_decision_ids("north", deployment, batch, decided_by="ann", url=url)
    many = store.record_decision_ids("north", deployment, batch * 4, decided_by="ann", url=url)
    columns = ("asset_id, deployment_id, policy_digest, state, action, expected_value, interval_low, interval_high, "
               "details, decided_by, typeof(decided_at), length(decided_at), typeof(state), typeof(expected_value)")
    with sqlite3.connect(tmp_path / "runs.db") as db:
        rows = {i: row for i, *row in db.execute(f"SELECT id, {columns} FROM decisions")}
    assert len(many) > 8 and [rows[i] for i in many] == [rows[i] for i in few] * 4
