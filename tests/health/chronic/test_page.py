"""The Chronic care page: a recorded run opened with ``?run=<id>``, its curves and the state inspector."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisions.health.chronic import DOMAIN
from decisions.health.chronic.report import ChronicReport
from decisions.health.chronic.settings import Data, Problem
from decisions.health.chronic.spec import ChronicJob
from decisions.health.chronic.study import run_study
from decisions.store.forgettings import forgettings_of
from tests.apps.helpers import one_line_error, open_page, open_report, record_report, stop_at_prepare, submit

SMALL = ChronicJob(problem=Problem(diseases=("htn",), horizon=6),
                   data=Data(patients=40, seeds=1, sweep_patients=(40,), sweep_low_shares=(0.5,)))


@pytest.fixture(scope="module")
def small_report() -> ChronicReport:
    """The report of a small study: one disease, 40 patients, 6 visits."""
    return ChronicReport.of_study(run_study(SMALL.care(), seed=0))


def test_a_recorded_run_shows_its_curves_and_each_states_recommended_action(
    store_url: str, tmp_path: Path, small_report: ChronicReport
) -> None:
    run_id = record_report(store_url, small_report, tmp_path / "files", kind=DOMAIN.name)
    at = open_report(DOMAIN.page, run_id)
    said = " ".join(m.value for m in at.markdown)
    assert "**optimal** recommends **" in said and "**mb_kappa_aware** recommends **" in said
    assert at.selectbox(key="curve_regime").options == list(Problem().regimes)


def test_the_form_sends_the_clinicians_and_the_data_size(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    prepared = stop_at_prepare(DOMAIN, monkeypatch)
    at = submit(open_page(DOMAIN.page), {"patients": 300, "seeds": 2})
    one_line_error(at, "test: prepared")
    [job] = prepared
    assert (job.data.patients, job.data.seeds, job.clinicians.low_share) == (300, 2, pytest.approx(0.6))


def test_forgetting_a_patient_asks_to_confirm_then_records_it_with_the_name(
    store_url: str, tmp_path: Path, small_report: ChronicReport
) -> None:
    run_id = record_report(store_url, small_report, tmp_path / "files", kind=DOMAIN.name, config=SMALL.config())
    at = open_report(DOMAIN.page, run_id)
    at.text_input(key="forget_patient").input("htn-3")
    at.button(key="forget").click().run()
    assert [e.value for e in at.error] == [
        "patient: type the patient's identifier and your name (it is recorded with the forgetting)"]
    at.text_input(key="forget_operator").input("Ada").run()
    at.button(key="forget").click().run()
    assert at.warning[0].value == f"Forget **htn-3** from run #{run_id}? It cannot be undone."
    at.button(key="forget_cancel").click().run()
    assert not at.warning and forgettings_of(run_id, url=store_url) == []  # nothing without the confirmation
    at.button(key="forget").click().run()
    at.button(key="forget_confirm").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    [record] = forgettings_of(run_id, url=store_url)
    assert (record.patient, record.created_by, record.equal) == ("htn-3", "Ada", True)
    assert at.success[0].value.startswith(f"Forgot htn-3 from run #{run_id} (by Ada): unlearning equals retraining")
    assert list(at.dataframe[-1].value["patient"]) == ["htn-3"]
    at.text_input(key="forget_patient").input("htn-3").run()
    at.button(key="forget").click().run()
    at.button(key="forget_confirm").click().run()
    one_line_error(at, "patient: htn-3 is already forgotten")
