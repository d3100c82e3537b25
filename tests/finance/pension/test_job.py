"""The pension job layer: spec validation naming the field, and a small end-to-end run whose report
holds the tables the app charts, written to disk and recorded in a run store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from decisions.errors import InputError
from decisions.finance.pension import DOMAIN
from decisions.finance.pension import job as pension_job
from decisions.finance.pension import snapo_policy as sp
from decisions.platform.record import execute_domain
from decisions.store import RunStatus, dispose_engines, get_run

pytestmark = pytest.mark.smoke_runs("pension")


def test_prepare_validates_the_spec() -> None:
    job = pension_job.prepare({"job": {"kind": "pension", "name": "alm"}, "scenario": {"horizon_years": 10}})
    assert job.name == "alm" and job.scenario.horizon_years == 10 and job.snapo == sp.PensionSnapoSettings()
    for spec, field in (
        ({"scenario": {"horizon_years": -1}}, "scenario.horizon_years"),
        ({"scenario": {"funding": {"contribution_min": 0.5, "contribution_max": 0.2}}}, "scenario.funding.contribution_max"),
        ({"snapo": {"steps": 0}}, "snapo.steps"),
        ({"evaluation": {"paths": 0}}, "evaluation.paths"),
        ({"job": {"seed": -3}}, "job.seed"),
        ({"sweep": {}}, "sweep"),
    ):
        with pytest.raises(InputError) as err:
            pension_job.prepare(spec)
        assert err.value.field == field


def test_a_small_recorded_job_reports_every_table(tmp_path: Path) -> None:
    job = pension_job.prepare(DOMAIN.smoke_spec)  # the conformance kit's tiny job: its programs compile once
    report = pension_job.run_job(job)
    assert set(report.comparison.index) == {"snapo", "fixed_mix"}
    assert len(report.funding_fan) == 25 and len(report.allocation) == 24
    assert len(report.key_rate_sensitivity) == 11 and np.isfinite(report.key_rate_sensitivity["dV_dr"]).all()
    for name in ("train_seconds", "value_snapo", "value_fixed_mix", "snapo_minus_fixed_mix_stderr", "n_sensitivities"):
        assert np.isfinite(report.metrics[name])
    written = report.save(tmp_path / "tables")
    assert written["chart"].stat().st_size > 0
    assert {p.suffix for p in written.values()} == {".csv", ".png", ".json", ".msgpack"}

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        run_id = execute_domain(DOMAIN, job, url=url)
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED and record.kind == DOMAIN.name
        assert record.latest_metrics()["value_snapo"] == pytest.approx(report.metrics["value_snapo"], rel=1e-6)
        paths = {a.name: Path(a.path) for a in record.artifacts}
        assert {"funding_fan", "allocation", "key_rate_sensitivity", "chart", "snapo_policy"} <= set(paths)
        assert sp.load_policy(paths["snapo_policy"]).settings == job.snapo
    finally:
        dispose_engines()
