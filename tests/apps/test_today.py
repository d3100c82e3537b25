"""The Today panel of a domain page (adding an asset, deploying the shown run's policy, deciding a state,
recording its outcome, every write naming the operator), what each role may do there once the store has
users (a viewer, an operator, an approver), and the Monitor page, in Streamlit's AppTest."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from decisions.health.chronic import DOMAIN
from decisions.health.chronic.report import ChronicReport
from decisions.health.chronic.settings import Data, Problem
from decisions.health.chronic.spec import ChronicJob
from decisions.health.chronic.study import run_study
from decisions.platform.operations import deploy, propose
from decisions.platform.record import execute_recorded
from decisions.store import (
    asset_history,
    create_asset,
    decisions_of,
    list_runs,
    outcomes_for,
    outcomes_of,
    record_decision,
    record_outcome,
)
from decisions.store.forgettings import forgettings_of
from decisions.store.users import add_user, set_role
from tests.apps.helpers import open_as, open_page, open_report, record_report

SMALL = ChronicJob(problem=Problem(diseases=("htn",), horizon=6),
                   data=Data(patients=40, seeds=1, sweep_patients=(40,), sweep_low_shares=(0.5,)))
MONITOR = "pages/11_Monitor.py"


@pytest.fixture(scope="module")
def small_report() -> ChronicReport:
    """The report of a small chronic-care study (one disease, 40 patients, 6 visits)."""
    return ChronicReport.of_study(run_study(SMALL.care(), seed=0))


def test_the_today_panel_deploys_decides_and_records_an_outcome_naming_the_operator(
        store_url: str, tmp_path: Path, small_report: ChronicReport) -> None:
    run_id = record_report(store_url, small_report, tmp_path / "files", kind=DOMAIN.name)
    at = open_report(DOMAIN.page, run_id)
    at.text_input(key="chronic_today_operator").set_value("ana")
    at.text_input(key="chronic_new_asset").set_value("Clinic East")
    at.button(key="chronic_add_asset").click().run()
    assert not at.exception and at.selectbox(key="chronic_today_asset").value == "Clinic East"
    best = propose("Clinic East", run_id, url=store_url).best
    assert at.selectbox(key="chronic_today_policy").value == best.name  # the study's favourite, proposed
    at.button(key="chronic_today_deploy").click().run()
    assert [s.value for s in at.success][-1].startswith(f"Deployed {best.label}")
    [deployed] = asset_history("Clinic East", url=store_url)
    assert deployed.chosen_by == "ana" and deployed.run_id == run_id and deployed.settings["policy"] == best.name

    assert '"disease": "htn"' in at.text_area(key="chronic_today_state").value  # the run's example state
    at.button(key="chronic_today_decide").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    action = next(m for m in at.metric if m.label == "Action")
    assert action.value in {"intensify", "hold", "step_down", "check", "follow_up"}
    [decision] = decisions_of("Clinic East", url=store_url)
    assert decision.decided_by == "ana" and decision.policy_digest == deployed.policy_digest

    at.number_input(key="chronic_today_outcome_decision").set_value(decision.id)
    at.number_input(key="chronic_today_outcome_value").set_value(1.0)
    at.button(key="chronic_today_outcome").click().run()
    assert [r.realised_value for r in outcomes_of("Clinic East", url=store_url)] == [1.0]


def test_a_bad_state_is_one_line_naming_the_field(store_url: str, tmp_path: Path, small_report: ChronicReport) -> None:
    run_id = record_report(store_url, small_report, tmp_path / "files", kind=DOMAIN.name)
    create_asset("Clinic", DOMAIN.name, {}, url=store_url)
    at = open_report(DOMAIN.page, run_id)
    at.button(key="chronic_today_deploy").click().run()
    at.text_input(key="chronic_today_operator").set_value("ana")
    at.button(key="chronic_today_deploy").click().run()
    at.text_area(key="chronic_today_state").set_value('{"disease": "htn", "visit": 0, "band": 9}')
    at.button(key="chronic_today_decide").click().run()
    assert [e.value for e in at.error] and at.error[-1].value.startswith("state.band"), [e.value for e in at.error]
    assert decisions_of("Clinic", url=store_url) == []


def test_the_monitor_page_shows_each_assets_verdict_and_the_detectors_statistics(store_url: str) -> None:
    for name, shift in (("Steady", 0.0), ("Drifting", 2.5)):
        create_asset(name, DOMAIN.name, {}, url=store_url)
        rng = np.random.default_rng(1)
        for i in range(60):
            d = record_decision(name, None, {}, {"action": "hold"}, expected_value=0.0, interval=(-1.96, 1.96),
                                url=store_url)
            record_outcome(d.id, {}, float(rng.normal(shift if i >= 30 else 0.0)), url=store_url)
    at = open_page(MONITOR)
    overview = at.dataframe[0].value
    assert list(overview["asset"]) == ["Drifting", "Steady"]
    assert list(overview["alarm"]) == ["ALARM", ""]
    assert at.error[0].value.startswith("Drifting: ALARM") and "Retrain" in at.error[0].value
    at.selectbox(key="monitor_asset").set_value("Steady").run()
    assert at.success[0].value.startswith("Steady: no alarm over 60 outcomes")


def _deployed_clinic(url: str, report: ChronicReport, folder: Path) -> int:
    """The small study recorded, "Clinic East" added and its favourite policy deployed by the approver; the
    run id."""
    run_id = record_report(url, report, folder, kind=DOMAIN.name)
    create_asset("Clinic East", DOMAIN.name, {}, created_by="boss", url=url)
    deploy("Clinic East", run_id, chosen_by="boss", url=url)
    return run_id


def _captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def _press_anyway(at: AppTest, key: str) -> AppTest:
    """Press a disabled button as a forged request would (a browser cannot): nothing may be written."""
    button = at.button(key=key)
    assert button.disabled, key
    button.proto.disabled = False
    return button.click().run()


def test_a_viewer_sees_the_write_controls_disabled_and_writes_nothing(
        users_store: str, tmp_path: Path, small_report: ChronicReport) -> None:
    run_id = _deployed_clinic(users_store, small_report, tmp_path / "files")
    at = open_as("vera", DOMAIN.page, run=run_id)
    for key in ("run", "chronic_today_decide", "chronic_today_deploy", "chronic_today_outcome", "forget"):
        assert at.button(key=key).disabled, key
    for caption in ("Running a job needs an operator; you are a viewer.",
                    "Deciding needs an operator; you are a viewer.",
                    "Deploying needs an approver; you are a viewer.",
                    "Forgetting needs an approver; you are a viewer."):
        assert caption in _captions(at), caption

    for key in ("chronic_today_decide", "chronic_today_deploy", "run"):
        assert not _press_anyway(at, key).exception
    assert decisions_of("Clinic East", url=users_store) == []
    assert len(asset_history("Clinic East", url=users_store)) == 1
    assert [run.id for run in list_runs(url=users_store)] == [run_id]


def test_an_operator_decides_and_records_outcomes_in_their_name_but_cannot_deploy_or_forget(
        users_store: str, tmp_path: Path, small_report: ChronicReport) -> None:
    run_id = _deployed_clinic(users_store, small_report, tmp_path / "files")
    at = open_as("olga", DOMAIN.page, run=run_id)
    assert not at.button(key="chronic_today_decide").disabled and not at.button(key="chronic_today_outcome").disabled
    assert at.button(key="chronic_today_deploy").disabled and at.button(key="forget").disabled
    assert "Deploying needs an approver; you are an operator." in _captions(at)

    at.button(key="chronic_today_decide").click().run()
    assert not at.error, [e.value for e in at.error]
    [decision] = decisions_of("Clinic East", url=users_store)
    assert decision.decided_by == "olga"
    at.number_input(key="chronic_today_outcome_decision").set_value(decision.id)
    at.number_input(key="chronic_today_outcome_value").set_value(1.0)
    at.button(key="chronic_today_outcome").click().run()
    assert [(o.realised_value, o.recorded_by) for o in outcomes_for(decision.id, url=users_store)] == [(1.0, "olga")]

    _press_anyway(at, "chronic_today_deploy")
    at.text_input(key="forget_patient").input("htn-1")
    _press_anyway(at, "forget")
    assert len(asset_history("Clinic East", url=users_store)) == 1
    assert forgettings_of(run_id, url=users_store) == [] and not at.warning  # no forgetting to confirm

    set_role("olga", "viewer", url=users_store)  # the page drawn for an operator is now stale
    at.button(key="chronic_today_decide").click().run()  # its role is read again first: the press is dropped
    assert len(decisions_of("Clinic East", url=users_store)) == 1
    assert at.button(key="chronic_today_decide").disabled and "Deciding needs an operator; you are a viewer." in _captions(at)


def test_a_run_started_from_a_page_names_the_logged_in_user(
        users_store: str, tmp_path: Path, small_report: ChronicReport, monkeypatch: pytest.MonkeyPatch) -> None:
    import app_common  # the module the pages import (``users_store`` puts ``apps/`` on the path)

    def recorded(domain: Any, job: Any, *, url: str | None = None, progress: Any = None) -> int:
        """The page's run, recorded as the domain would record it, with the small study's report."""
        return execute_recorded(domain.name, job.name, job.config(), lambda: small_report, url=url,
                                output_dir=job.output_dir)

    monkeypatch.setattr(app_common, "execute_domain", recorded)
    at = open_as("olga", DOMAIN.page)
    at.button(key="run").click().run()
    assert not at.error, [e.value for e in at.error]
    [run] = list_runs(url=users_store)
    assert (run.started_by, run.status.value) == ("olga", "succeeded")
    assert at.header[0].value == f"Results of run #{run.id}"


def test_an_approver_deploys_in_their_name(users_store: str, tmp_path: Path, small_report: ChronicReport) -> None:
    run_id = record_report(users_store, small_report, tmp_path / "files", kind=DOMAIN.name)
    create_asset("Clinic East", DOMAIN.name, {}, created_by="boss", url=users_store)
    at = open_as("boss", DOMAIN.page, run=run_id)
    assert not at.button(key="chronic_today_deploy").disabled
    at.button(key="chronic_today_deploy").click().run()
    assert [s.value for s in at.success][-1].startswith("Deployed ")
    [deployed] = asset_history("Clinic East", url=users_store)
    assert (deployed.run_id, deployed.chosen_by) == (run_id, "boss")

    add_user("anna", "anna password", "approver", url=users_store)
    set_role("boss", "operator", url=users_store)  # the page drawn for an approver is now stale
    at.button(key="chronic_today_deploy").click().run()
    assert at.error[-1].value.startswith("user: 'boss' is an operator: to deploy needs an approver")
    assert len(asset_history("Clinic East", url=users_store)) == 1
    assert at.button(key="chronic_today_deploy").disabled


def test_a_press_after_the_session_ended_writes_nothing(
        users_store: str, tmp_path: Path, small_report: ChronicReport) -> None:
    run_id = record_report(users_store, small_report, tmp_path / "files", kind=DOMAIN.name)
    create_asset("Clinic East", DOMAIN.name, {}, created_by="boss", url=users_store)
    at = open_as("boss", DOMAIN.page, run=run_id)
    at.session_state["app_last_seen"] = time.time() - 31 * 60  # idle past the default 30 minutes
    at.button(key="chronic_today_deploy").click().run()
    assert asset_history("Clinic East", url=users_store) == []
    assert at.text_input(key="login_name") and at.info[0].value.startswith("Your session ended")
