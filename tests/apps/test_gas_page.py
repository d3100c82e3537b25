"""The gas storage page: the form, input errors on one line, forward-curve uploads, a tiny recorded run."""

from __future__ import annotations

import io
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from decisions.energy.gas_storage import DOMAIN, GasStorageReport, load_forward_curve_csv
from decisions.errors import InputError
from decisions.store import list_runs
from tests.apps.conftest import GAS_PAGE, HOME
from tests.apps.helpers import (
    one_line_error,
    open_form,
    open_page,
    open_report,
    record_report,
    run_from_form,
    submit,
)

FACILITY_KEYS = (
    "min_inventory", "max_inventory", "start_inventory", "end_inventory", "max_injection",
    "max_withdrawal", "injection_cost", "withdrawal_cost", "discount_rate",
)


def _curve_csv(days: int, *, bad_row: int | None = None) -> bytes:
    start = date(2026, 4, 1)
    lines = ["date,forward"]
    for t in range(days):
        price = "n/a" if t == bad_row else f"{25 + 5 * (t % 7) / 7:.3f}"
        lines.append(f"{start + timedelta(days=t):%Y-%m-%d},{price}")
    return ("\n".join(lines) + "\n").encode()


def test_gas_page_renders_its_form(store_url: str) -> None:
    at = open_page(GAS_PAGE)
    assert at.title[0].value == "Gas storage"
    keys = {widget.key for widget in at.number_input}
    assert set(FACILITY_KEYS) <= keys
    assert {"snapo_steps", "snapo_paths", "eval_paths", "lsmc_paths"} <= keys
    assert at.selectbox(key="terminal").value == "required_end_inventory"
    assert at.selectbox(key="price_model").value == "seasonal_ou"
    assert {"mean_reversion", "volatility"} <= keys
    assert at.button(key="run").disabled is False
    assert not at.error


def test_switching_the_price_model_shows_its_parameters(store_url: str) -> None:
    at = open_page(GAS_PAGE)
    at.selectbox(key="price_model").select("exponential_ou").run()
    keys = {widget.key for widget in at.number_input}
    assert {"ou_speed", "ou_level", "ou_volatility", "ou_initial"} <= keys
    assert "mean_reversion" not in keys
    at.selectbox(key="price_model").select("deterministic").run()
    assert not {"ou_speed", "mean_reversion"} & {widget.key for widget in at.number_input}


def test_bad_facility_shows_one_line_error_naming_the_field_and_records_nothing(store_url: str) -> None:
    at = open_page(GAS_PAGE)
    message = one_line_error(submit(at, {"min_inventory": 500.0, "max_inventory": 100.0}), "scenario.facility:")
    assert len(at.error) == 1 and "max_inventory" in message, message
    assert list_runs(url=store_url) == []


def test_bad_price_parameter_names_its_field(store_url: str) -> None:
    at = open_page(GAS_PAGE)
    message = one_line_error(submit(at, {"volatility": -0.5}), "scenario.prices.")
    assert "volatility: Input should be greater than or equal to 0" in message, message


def test_bad_uploaded_curve_shows_the_row_and_disables_run(store_url: str) -> None:
    at = open_page(GAS_PAGE)
    at.radio(key="curve_source").set_value("Upload a CSV").run()
    assert at.button(key="run").disabled
    at.file_uploader(key="curve_file").set_value(("curve.csv", _curve_csv(10, bad_row=3), "text/csv")).run()
    assert not at.exception
    assert at.error[0].value == "forward_curve_csv: curve.csv, column 'forward', row 5: 'n/a' is not a number"
    assert at.button(key="run").disabled


def test_good_uploaded_curve_is_summarised(store_url: str) -> None:
    at = open_page(GAS_PAGE)
    at.radio(key="curve_source").set_value("Upload a CSV").run()
    at.file_uploader(key="curve_file").set_value(("curve.csv", _curve_csv(30), "text/csv")).run()
    assert not at.exception and not at.error
    assert any(caption.value.startswith("30 daily prices from 2026-04-01") for caption in at.caption)
    assert at.button(key="run").disabled is False


def test_every_method_and_terminal_rule_make_a_spec_that_prepare_accepts(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form sends only the settings the method and terminal rule use (prepare refuses the others); no job runs."""
    at, prepared = open_form(DOMAIN, monkeypatch)
    choices = [(m, t) for m in ("compare", "snapo", "baselines") for t in ("required_end_inventory", "spot_value")]
    for method, terminal in choices:
        at.selectbox(key="method").select(method)
        at.selectbox(key="terminal").select(terminal)
        at.button(key="run").click().run()
        assert [e.value for e in at.error] == ["test: prepared"], (method, terminal)
    assert [(job.method.value, job.scenario.facility.terminal.value) for job in prepared] == choices
    assert list_runs(url=store_url) == []


def test_curve_loader_reads_upload_bytes_and_rejects_bad_files() -> None:
    prices, first = load_forward_curve_csv(io.BytesIO(_curve_csv(5)))
    assert len(prices) == 5 and first == date(2026, 4, 1)
    with pytest.raises(InputError) as err:
        load_forward_curve_csv(io.BytesIO(b"date,forward\n2026-04-01,20\n2026-04-03,21\n"), field="forward_curve_csv")
    assert str(err.value) == ("forward_curve_csv: the forward curve, row 3, column 'date': 2026-04-03 is not the day "
                              "after 2026-04-01 (dates must be consecutive days: a gap, a repeat or out of order)")
    with pytest.raises(InputError, match=r"^forward_curve_csv: cannot read CSV"):
        load_forward_curve_csv(io.BytesIO(b"\xff\xfe\x00bad"), field="forward_curve_csv")


def test_tiny_run_is_recorded_and_shows_results(store_url: str, tmp_path) -> None:
    at = open_page(GAS_PAGE, timeout=300)  # a ceiling: the tiny job compiles every method (2-core CI under load)
    at.radio(key="curve_source").set_value("Upload a CSV").run()
    at.file_uploader(key="curve_file").set_value(("curve.csv", _curve_csv(30), "text/csv")).run()
    budgets = {"snapo_steps": 20, "snapo_paths": 8, "eval_paths": 16, "lsmc_paths": 50}
    run = run_from_form(at, store_url, name="tiny-app-run", kind=DOMAIN.name, numbers=budgets)
    assert run.config["evaluation"] == {"paths": 16, "lsmc_paths": 50}
    assert len(run.config["scenario"]["forward_curve"]) == 30
    assert all(Path(a.path).is_relative_to(tmp_path / "artifacts") for a in run.artifacts)
    bars = [bar.proto.text for bar in at.status[0].get("progress")]
    assert "intrinsic LP: 1/1" in bars and "SNAPO training: 20/20" in bars

    comparison = at.dataframe[0].value
    assert {"snapo", "intrinsic_lp", "rolling_intrinsic", "lsmc"} <= set(comparison["method"])
    assert comparison.set_index("method").loc["snapo", "mean"] == pytest.approx(run.latest_metrics()["value_snapo"])
    downloads = {button.key for button in at.download_button}
    assert {"download_comparison", "download_schedule", "download_curve_sensitivity",
            "download_input_sensitivity", "download_training_curve"} <= downloads

    at.run()  # a rerun shows the kept report without running the job again
    assert at.dataframe[0].value.equals(comparison)
    assert len(list_runs(url=store_url)) == 1


def _record_gas_run_by_hand(url: str, folder: Path) -> int:
    """A succeeded gas storage run whose report is made by hand (no JAX needed) and saved as a job saves it."""
    days = pd.date_range("2026-04-01", periods=5, freq="D")
    report = GasStorageReport(
        comparison=pd.DataFrame({
            "method": ["snapo", "intrinsic_lp", "rolling_intrinsic"], "n": 16, "mean": [105.0, 100.0, 103.0],
            "stderr": [1.0, 0.0, 1.0], "ci95_low": [103.0, 100.0, 101.0], "ci95_high": [107.0, 100.0, 105.0],
            "ratio_to_intrinsic": [1.05, 1.0, 1.03],
        }).set_index("method"),
        schedule=pd.DataFrame({"date": days, "forward": [20.0, 21, 22, 23, 24],
                               "lp_net_injection": [25.0, 25, 0, -25, -25], "lp_inventory": [0.0, 25, 50, 50, 25]}),
        curve_sensitivity=pd.DataFrame({"date": days, "forward": 20.0, "lp_dV_dF": [-25.0, -25, 0, 25, 25]}),
        input_sensitivity=pd.DataFrame({"input": ["max_inventory"], "value": [1000.0], "dV_dinput": [0.0]}),
        metrics={"value_snapo": 105.0, "value_rolling_intrinsic": 103.0, "snapo_vs_rolling_intrinsic": 105.0 / 103.0},
    )
    return record_report(url, report, folder, kind=DOMAIN.name)


def test_recorded_run_opens_from_query_param(store_url: str, tmp_path: Path) -> None:
    run_id = _record_gas_run_by_hand(store_url, tmp_path / "run")
    home = AppTest.from_file(HOME, default_timeout=30).run()
    link = home.get("page_link")[0]
    assert (link.proto.page, link.proto.query_string) == ("Gas_storage", f"run={run_id}")

    at = open_report(GAS_PAGE, run_id)
    assert list(at.dataframe[0].value["method"]) == ["snapo", "intrinsic_lp", "rolling_intrinsic"]
    assert [m.value for m in at.metric] == ["105", "103", "1.019"]  # values rounded, the ratio to 3 decimals
    assert {b.key for b in at.download_button} == {
        "download_comparison", "download_schedule", "download_curve_sensitivity", "download_input_sensitivity"
    }
    assert len(at.get("vega_lite_chart")) >= 5  # forward curve, values, schedule, moves, dV/dF


def test_failing_job_shows_one_line_error_and_is_recorded_as_failed(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(job, *, progress):
        progress("intrinsic LP", 0, 1)
        raise RuntimeError("solver\nexploded")

    monkeypatch.setattr(DOMAIN.job(), "run_job", boom)  # what execute_domain runs
    at = open_page(GAS_PAGE)
    at.button(key="run").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == ["RuntimeError: solver exploded"]
    assert at.status[0].label == "Run failed"
    assert [(r.status.value, r.error) for r in list_runs(url=store_url)] == [("failed", "RuntimeError: solver exploded")]
    assert "gas_storage_report" not in at.session_state
