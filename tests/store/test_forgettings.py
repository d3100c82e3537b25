"""A run's forgetting records: recorded in order with who and when, refusals, ids never reused, deletion."""

from __future__ import annotations

import pytest

from decisions.errors import InputError
from decisions.store import RunStatus, delete_run, finish_run, get_run, start_run
from decisions.store.forgettings import Forgotten, forgettings_of, newest_id, record_forgettings
from decisions.store.lifecycle import RunForgettingsError
from decisions.store.repository import RunNotFoundError

pytestmark = pytest.mark.usefixtures("no_cached_engines")


def _succeeded(url: str, kind: str = "chronic") -> int:
    run_id = start_run(kind, "r", {}, url=url)
    finish_run(run_id, status=RunStatus.SUCCEEDED, url=url)
    return run_id


def _forgotten(patient: str, before: str = "a" * 64) -> Forgotten:
    return Forgotten(patient, patient.split("-")[0], before, "b" * 64, "c" * 64, True, 0.001, 0.002)


def test_forgettings_are_recorded_in_order_with_who_and_when(any_store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    url = any_store_url
    run_id = _succeeded(url)
    monkeypatch.setattr("getpass.getuser", lambda: "clinic-admin")
    first = record_forgettings(run_id, [_forgotten("t2d-17"), _forgotten("htn-3")], kind="chronic", after=None, url=url)
    later = record_forgettings(run_id, [_forgotten("t2d-2")], kind="chronic", after=first[-1].id, created_by="Ada",
                               url=url)
    records = forgettings_of(run_id, url=url)
    assert [(r.patient, r.disease, r.created_by) for r in records] == [
        ("t2d-17", "t2d", "clinic-admin"), ("htn-3", "htn", "clinic-admin"), ("t2d-2", "t2d", "Ada")
    ]
    assert records == [*first, *later] and newest_id(records) == later[0].id
    assert records[0].equal is True and records[0].data_digest_before == "a" * 64
    assert records[0].created_at.tzinfo is not None
    assert forgettings_of(_succeeded(url), url=url) == []


def test_refusals_name_the_problem(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    run_id = _succeeded(url)
    with pytest.raises(InputError, match="^run: run .* is a .chronic. run, not .utility.: only utility runs"):
        record_forgettings(run_id, [_forgotten("t2d-1")], kind="utility", after=None, url=url)
    running = start_run("chronic", "r", {}, url=url)
    with pytest.raises(InputError, match="^run: run .* is running: only a succeeded run's policy can forget$"):
        record_forgettings(running, [_forgotten("t2d-1")], kind="chronic", after=None, url=url)
    with pytest.raises(RunNotFoundError):
        record_forgettings(run_id + 100, [_forgotten("t2d-1")], kind="chronic", after=None, url=url)
    [done] = record_forgettings(run_id, [_forgotten("t2d-1")], kind="chronic", after=None, url=url)
    with pytest.raises(InputError, match="^run: run .* gained a forgetting meanwhile"):
        record_forgettings(run_id, [_forgotten("t2d-2")], kind="chronic", after=None, url=url)
    with pytest.raises(InputError, match="^patient: t2d-1 is already forgotten from run"):
        record_forgettings(run_id, [_forgotten("t2d-1")], kind="chronic", after=done.id, url=url)
    with pytest.raises(InputError, match="^patient: t2d-2 is already forgotten"):
        record_forgettings(run_id, [_forgotten("t2d-2"), _forgotten("t2d-2")], kind="chronic", after=done.id, url=url)
    assert [r.patient for r in forgettings_of(run_id, url=url)] == ["t2d-1"]  # nothing of a refused request


def test_deleting_a_run_with_forgettings_is_refused_unless_they_go_too(any_store_url: str) -> None:
    url = any_store_url
    run_id = _succeeded(url)
    [record] = record_forgettings(run_id, [_forgotten("t2d-17")], kind="chronic", after=None, url=url)
    with pytest.raises(RunForgettingsError) as info:
        delete_run(run_id, url=url)
    assert str(info.value) == (
        f"run: run {run_id} has 1 forgetting record (t2d-17), the record that those patients' data was forgotten: "
        "--with-forgettings deletes them with it"
    )
    assert get_run(run_id, url=url).id == run_id
    deleted = delete_run(run_id, url=url, with_forgettings=True)
    assert deleted.forgettings == (record,)
    assert forgettings_of(run_id, url=url) == []
    other = _succeeded(url)
    [again] = record_forgettings(other, [_forgotten("t2d-17")], kind="chronic", after=None, url=url)
    assert again.id > record.id  # ids are never handed out again
