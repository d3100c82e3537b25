"""The Today panel of a domain page (adding an asset, deploying the shown run's policy, deciding a state,
recording its outcome, every write naming the operator) and the Monitor page, in Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from decisions.health.chronic import DOMAIN
from decisions.health.chronic.report import ChronicReport
from decisions.health.chronic.settings import Data, Problem
from decisions.health.chronic.spec import ChronicJob
from decisions.health.chronic.study import run_study
from decisions.platform.operations import propose
from decisions.store import (
    asset_history,
    create_asset,
    decisions_of,
    outcomes_of,
    record_decision,
    record_outcome,
)
from tests.apps.helpers import open_page, open_report, record_report

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
