"""The Chronic care page: a recorded run opened with ``?run=<id>``, its curves and the state inspector."""

from __future__ import annotations

from pathlib import Path

import pytest

from decisions.health.chronic import DOMAIN
from decisions.health.chronic.job import report_of
from decisions.health.chronic.settings import Clinicians, Data, HtnMachine, Problem, Reward, T2dMachine
from decisions.health.chronic.study import run_study
from tests.apps.helpers import one_line_error, open_page, open_report, record_report, stop_at_prepare, submit


def test_a_recorded_run_shows_its_curves_and_each_states_recommended_action(store_url: str, tmp_path: Path) -> None:
    problem = Problem(diseases=("htn",), horizon=6)
    data = Data(patients=40, seeds=1, sweep_patients=(40,), sweep_low_shares=(0.5,))
    study = run_study(problem, HtnMachine(), T2dMachine(), Reward(), Clinicians(), data, seed=0)
    run_id = record_report(store_url, report_of(study), tmp_path / "files", kind=DOMAIN.name)
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
