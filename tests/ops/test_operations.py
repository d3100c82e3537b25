"""The operator's loop through the CLI: assets, deploy (proposed and chosen), rollback, decide a CSV of
states, outcomes one by one and from a file, the monitor; bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import csv
import gc
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from decisions.cli import app
from decisions.platform.record import execute_recorded
from decisions.store import (
    RunStatus,
    asset_history,
    create_asset,
    decisions_of,
    dispose_engines,
    finish_run,
    get_decision,
    list_assets,
    outcomes_of,
    record_decision,
    record_outcome,
    start_run,
)
from tests.smoke_runs import smoke_run

runner = CliRunner()
STATE_FIELDS = ("disease", "visit", "band", "step", "adherent", "side_effect", "months_since_intensification")


pytestmark = pytest.mark.smoke_runs("chronic")  # the conformance kit's smoke run, shared


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A store holding one succeeded chronic-care run (the shared smoke run), as a file to copy."""
    folder = tmp_path_factory.mktemp("ops_store")
    smoke = smoke_run("chronic")
    url = f"sqlite:///{folder / 'runs.db'}"
    execute_recorded("chronic", smoke.job.name, smoke.job.config(), lambda: smoke.report, url=url,
                     output_dir=str(folder / "out"))
    dispose_engines()
    yield folder / "runs.db"


@pytest.fixture()
def ops_store(recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh copy of the recorded store as ``DECISIONS_DB_URL``; yields its URL."""
    shutil.copy(recorded, tmp_path / "runs.db")
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    monkeypatch.setenv("DECISIONS_DB_URL", url)
    yield url
    dispose_engines()


def _invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args), terminal_width=300)
    return result.exit_code, result.output


def _states(path: Path, rows: list[tuple]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(STATE_FIELDS)
        writer.writerows(rows)
    return path


def test_the_operator_loop_from_the_command_line(ops_store: str, tmp_path: Path) -> None:
    settings = tmp_path / "clinic.json"
    settings.write_text(json.dumps({"state": {"regime": "quarterly"}}))
    assert _invoke("assets", "add", "Clinic East", "--kind", "chronic", "--settings", str(settings))[0] == 0
    code, out = _invoke("deploy", "Clinic East", "1", "--propose")
    assert code == 0 and "mb_kappa_aware" in out and "usual_care" in out
    code, out = _invoke("deploy", "Clinic East", "1")
    assert code == 0 and "proposes kappa-weighted offline RL" in out, out
    assert _invoke("deploy", "Clinic East", "1", "--policy", "usual_care", "--note", "compare")[0] == 0
    assert _invoke("rollback", "Clinic East")[0] == 0
    history = asset_history("Clinic East", url=ops_store)
    assert [h.settings["policy"] for h in history] == ["mb_kappa_aware", "usual_care", "mb_kappa_aware"]
    assert history[0].policy_digest == history[2].policy_digest != history[1].policy_digest

    states = _states(tmp_path / "today.csv", [("t2d", 0, 2, 1, "true", "false", 6), ("htn", 3, 1, 0, "false", "false", 2)])
    answers = tmp_path / "answers.csv"
    code, out = _invoke("decide", "Clinic East", "--state", str(states), "--out", str(answers))
    assert code == 0, out
    rows = list(csv.DictReader(answers.open()))
    assert [r["regime"] for r in rows] == ["quarterly", "quarterly"]  # the asset's settings filled it in
    assert {r["action"] for r in rows} <= {"intensify", "hold", "step_down", "check", "follow_up"}
    again = tmp_path / "again.json"
    assert _invoke("decide", "Clinic East", "--state", str(states), "--out", str(again), "--no-record")[0] == 0
    assert [r["action"] for r in json.loads(again.read_text())] == [r["action"] for r in rows]
    assert len(decisions_of("Clinic East", url=ops_store)) == 2  # the what-if was not recorded

    first, second = (int(r["decision"]) for r in rows)
    assert _invoke("outcome", str(first), "1", "--realised", '{"band": 1}')[0] == 0
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text(f"decision,value,note,band\n{second},2,seen at the visit,2\n")
    assert _invoke("outcome", "--file", str(outcomes))[0] == 0
    realised = outcomes_of("Clinic East", url=ops_store)
    assert [(r.decision_id, r.realised_value) for r in realised] == [(first, 1.0), (second, 2.0)]
    code, out = _invoke("monitor", "Clinic East", "--json")
    assert code == 0 and json.loads(out)[0]["outcomes"] == 2
    code, out = _invoke("assets", "list")
    assert code == 0 and "Clinic East" in out and "kappa-weighted" in out


def _written(url: str) -> tuple[int, int, int]:
    assets = list_assets(include_retired=True, url=url)
    decided = sum(len(decisions_of(a.name, None, url=url)) for a in assets)
    realised = sum(len(outcomes_of(a.name, url=url)) for a in assets)
    return len(assets), decided, realised


@pytest.mark.parametrize(("rows", "field"), [
    ([("t2d", 0, 2, 1, "true", "false")], "today.csv row 2: months_since_intensification"),
    ([("t2d", 0, 2, 1, "true", "false", 6), ("t2d", 0, 7, 1, "true", "false", 6)], "today.csv row 3: band"),
    ([("flu", 0, 2, 1, "true", "false", 6)], "today.csv row 2: disease"),
])
def test_a_bad_state_is_refused_naming_its_row_and_field_and_nothing_is_recorded(
        ops_store: str, tmp_path: Path, rows: list[tuple], field: str) -> None:
    create_asset("Clinic", "chronic", {}, url=ops_store)
    assert _invoke("deploy", "Clinic", "1")[0] == 0
    before = _written(ops_store)
    if len(rows[0]) < len(STATE_FIELDS):
        path = tmp_path / "today.csv"
        path.write_text(",".join(STATE_FIELDS[:-1]) + "\n" + ",".join(map(str, rows[0])) + "\n")
    else:
        path = _states(tmp_path / "today.csv", rows)
    code, out = _invoke("decide", "Clinic", "--state", str(path))
    assert code == 2 and out.startswith(f"error: {field}") and len(out.strip().splitlines()) == 1, out
    assert _written(ops_store) == before


def test_a_large_batch_is_decided_in_order_and_the_collector_runs_again_after_it(ops_store: str) -> None:
    from decisions.errors import InputError
    from decisions.platform.operations import decide

    create_asset("Clinic", "chronic", {"state": {"regime": "quarterly"}}, url=ops_store)
    assert _invoke("deploy", "Clinic", "1")[0] == 0
    good = [dict(zip(STATE_FIELDS, ("t2d", v % 8, v % 3, 1, True, False, 6), strict=True)) for v in range(150)]
    with pytest.raises(InputError, match="band"):
        decide("Clinic", [*good, {**good[0], "band": 7}], url=ops_store)
    assert gc.isenabled() and _written(ops_store)[1] == 0
    answers = decide("Clinic", good, url=ops_store)
    assert gc.isenabled()
    assert [a.state["visit"] for a in answers] == [v % 8 for v in range(150)]
    ids = [a.decision_id for a in answers]
    assert ids == sorted(ids) and len(set(ids)) == 150
    again = decide("Clinic", good[:3], url=ops_store)
    assert [get_decision(a.decision_id, url=ops_store).action for a in answers[:3]] == [
        get_decision(a.decision_id, url=ops_store).action for a in again]


def test_unknown_assets_decisions_and_failed_runs_are_refused_with_nothing_written(ops_store: str, tmp_path: Path) -> None:
    create_asset("Clinic", "chronic", {}, url=ops_store)
    failed = start_run("chronic", "broken", {}, url=ops_store)
    finish_run(failed, status=RunStatus.FAILED, error="boom", url=ops_store)
    states = _states(tmp_path / "today.csv", [("t2d", 0, 2, 1, "true", "false", 6)])
    outcomes = tmp_path / "outcomes.csv"
    outcomes.write_text("decision,value\n99,1\n")
    before = _written(ops_store)
    for args, start in ((("deploy", "Clinic", str(failed)), "error: run:"),
                        (("deploy", "Nowhere", "1"), "error: asset:"),
                        (("decide", "Clinic", "--state", str(states)), "error: asset: nothing is deployed"),
                        (("decide", "Nowhere", "--state", str(states)), "error: asset:"),
                        (("outcome", "99", "1"), "error: decision:"),
                        (("outcome", "--file", str(outcomes)), "error: outcomes.csv row 2: decision:"),
                        (("assets", "add", "X", "--kind", "nosuch"), "error: kind:"),
                        (("deploy", "Clinic", "1", "--policy", "nosuch"), "error: policy:")):
        code, out = _invoke(*args)
        assert code == 2 and out.startswith(start) and len(out.strip().splitlines()) == 1, (args, out)
    assert _written(ops_store) == before


def test_the_monitor_alarms_on_a_shift_and_says_what_to_do(ops_store: str) -> None:
    create_asset("Drifting", "chronic", {}, url=ops_store)
    rng = np.random.default_rng(0)
    for i in range(120):
        decision = record_decision("Drifting", None, {}, {"action": "hold"}, expected_value=1.0,
                                   interval=(1.0 - 1.96, 1.0 + 1.96), url=ops_store)
        record_outcome(decision.id, {}, 1.0 + float(rng.normal(2.0 if i >= 60 else 0.0)), url=ops_store)
    code, out = _invoke("monitor", "Drifting")
    assert code == 3 and "ALARM" in out and "Retrain" in out, out
    verdict = json.loads(_invoke("monitor", "Drifting", "--json")[1])[0]
    assert verdict["alarm_channel"] == "mean" and verdict["alarm_side"] == 1 and verdict["alarm_decision"] > 60


def test_a_run_that_offers_no_policy_is_refused_in_one_line(ops_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.health.chronic import decide as chronic_decide

    create_asset("Clinic", "chronic", {}, url=ops_store)
    monkeypatch.setattr(chronic_decide, "candidates", lambda folder, metrics: [])
    code, out = _invoke("deploy", "Clinic", "1")
    assert code == 2 and out.startswith("error: run: run 1 offers no policy") and len(out.strip().splitlines()) == 1, out
    assert asset_history("Clinic", url=ops_store) == []


def _as(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """Act as OS user ``name`` (``getpass.getuser`` reads ``LOGNAME`` first)."""
    monkeypatch.setenv("LOGNAME", name)


def test_roles_limit_what_each_user_may_do_from_the_command_line(ops_store: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from decisions.store.users import list_users

    _as(monkeypatch, "boss")
    added = runner.invoke(app, ["users", "add", "boss", "--role", "approver", "--password-stdin"],
                          input="correct horse\n")
    assert added.exit_code == 0, added.output
    for name, role in (("ann", "operator"), ("vic", "viewer")):
        assert runner.invoke(app, ["users", "add", name, "--role", role, "--password-stdin"],
                             input="battery staple\n").exit_code == 0
    code, out = _invoke("users", "list")
    assert code == 0 and "ann" in out and "operator" in out and "staple" not in out

    states = _states(tmp_path / "today.csv", [("t2d", 0, 2, 1, "true", "false", 6)])
    _as(monkeypatch, "vic")
    code, out = _invoke("assets", "add", "Clinic East", "--kind", "chronic")
    assert (code, out.strip()) == (2, "error: user: 'vic' is a viewer: to add assets needs an operator or above")
    assert list_assets(url=ops_store) == []
    assert _invoke("users", "set-role", "vic", "approver")[0] == 2

    _as(monkeypatch, "ann")
    assert _invoke("assets", "add", "Clinic East", "--kind", "chronic")[0] == 0
    code, out = _invoke("deploy", "Clinic East", "1")
    assert code == 2 and "'ann' is an operator: to deploy needs an approver" in out
    assert asset_history("Clinic East", url=ops_store) == []
    assert _invoke("forget", "1", "--patient", "t2d-1")[0] == 2
    assert _invoke("deploy", "Clinic East", "1", "--propose")[0] == 0  # reading the proposal is allowed

    _as(monkeypatch, "boss")
    assert _invoke("deploy", "Clinic East", "1")[0] == 0
    _as(monkeypatch, "ann")
    code, out = _invoke("decide", "Clinic East", "--state", str(states))
    assert code == 0, out
    (decided,) = decisions_of("Clinic East", url=ops_store)
    assert decided.decided_by == "ann"
    _as(monkeypatch, "vic")
    assert _invoke("decide", "Clinic East", "--state", str(states))[0] == 2
    assert _invoke("decide", "Clinic East", "--state", str(states), "--no-record")[0] == 0  # a what-if only reads
    _as(monkeypatch, "stranger")
    code, out = _invoke("outcome", str(decided.id), "1")
    assert code == 2 and "'stranger' is not a user of this store" in out
    assert [u.name for u in list_users(url=ops_store)] == ["ann", "boss", "vic"]
