"""The gas storage job end to end on a small problem: report contents, recording, artifacts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.energy.gas_storage import DOMAIN, snapo_policy
from decisions.energy.gas_storage import job as gas_job
from decisions.errors import InputError
from decisions.platform.record import execute_domain
from decisions.store import RunStatus, dispose_engines, get_run
from tests.helpers import with_sections

pytestmark = pytest.mark.smoke_runs("gas_storage")  # the conformance kit's tiny job: same shapes, compiled once

DAYS = len(DOMAIN.smoke_spec["scenario"]["forward_curve"])


def _spec(**overrides) -> dict:
    """The registry's smoke job (``DOMAIN.smoke_spec``) comparing every method, with 150 SNAPO steps."""
    spec = with_sections(
        DOMAIN.smoke_spec,
        job={"kind": "gas_storage", "name": "small", "method": "compare", "seed": 1},
        snapo={"steps": 150},
        evaluation={"lsmc_paths": 256},
    )
    return with_sections(spec, **overrides)


@pytest.fixture(scope="module")
def report():
    return gas_job.run_job(gas_job.prepare(_spec()))


def test_report_tables(report) -> None:
    comparison = report.comparison
    assert set(comparison.index) == {"intrinsic_lp", "snapo", "rolling_intrinsic", "lsmc", "do_nothing"}
    assert len(report.schedule) == DAYS and len(report.curve_sensitivity) == DAYS
    assert {"snapo_inventory", "lp_inventory", "snapo_net_injection"} <= set(report.schedule.columns)
    assert np.isfinite(report.curve_sensitivity["snapo_dV_dF"]).all()
    assert report.metrics["n_sensitivities"] >= DAYS
    # the stochastic methods capture extrinsic value; do-nothing is worth nothing here
    assert comparison.loc["rolling_intrinsic", "mean"] > comparison.loc["intrinsic_lp", "mean"]
    assert comparison.loc["snapo", "mean"] > 0.5 * comparison.loc["intrinsic_lp", "mean"]  # learned to trade (short run)
    assert comparison.loc["do_nothing", "mean"] == 0.0


def test_report_saves_tables_and_chart(report, tmp_path: Path) -> None:
    written = report.save(tmp_path)
    assert set(written) >= {"comparison", "schedule", "curve_sensitivity", "input_sensitivity", "chart"}
    assert written["chart"].stat().st_size > 10_000
    back = pd.read_csv(written["comparison"])
    assert list(back["method"]) == list(report.comparison.index)


def test_execute_records_run_and_policy_reloads(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    try:
        spec = _spec(job={"method": "snapo"}, snapo={"steps": 50})
        del spec["evaluation"]["lsmc_paths"]  # no LSMC without the baselines: prepare refuses it
        job = gas_job.prepare(spec)
        run_id = execute_domain(DOMAIN, job, url=url)
        record = get_run(run_id, url=url)
        assert record.status == RunStatus.SUCCEEDED
        assert record.latest_metrics()["value_snapo"] is not None
        paths = {a.name: Path(a.path) for a in record.artifacts}
        assert paths["chart"].parent == tmp_path / "artifacts" / f"run-{run_id}"
        reloaded = snapo_policy.load_policy(paths["snapo_policy"])
        assert reloaded.settings == job.snapo
    finally:
        dispose_engines()


def test_prepare_names_bad_fields(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"^scenario\.prices\.volatility:"):
        gas_job.prepare(_spec(scenario={"prices": {"model": "seasonal_ou", "volatility": -1.0}}))
    with pytest.raises(InputError, match=r"^snapo\.steps:"):
        gas_job.prepare(_spec(snapo={"steps": 0}))
    with pytest.raises(InputError, match=r"^job\.method:"):
        gas_job.prepare(_spec(job={"method": "guess"}))
    with pytest.raises(InputError, match=r"^bogus:"):
        gas_job.prepare({**_spec(), "bogus": {}})
    with pytest.raises(InputError, match=r"forward_curve_csv: file not found"):
        gas_job.prepare({"scenario": {"forward_curve_csv": "nope.csv"}}, tmp_path)
