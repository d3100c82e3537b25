"""The pension ALM page: the form, a recorded run opened with ``?run=<id>``, the views (its input errors and its
refusal of another domain's run: ``test_common``)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import decisions.finance.pension as pension
from tests.apps.conftest import APPS, PENSION_PAGE
from tests.apps.helpers import open_page, open_report, record_report, run_from_form

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import pension_views  # noqa: E402

ASSETS = ("cash", "bond_2y", "bond_10y", "equities")


def _allocation(equity: float) -> pd.DataFrame:
    months = np.arange(24)
    weights = {"cash": 0.1, "bond_2y": 0.3, "bond_10y": 0.6 - equity, "equities": equity}
    return pd.DataFrame(
        {"month": months, "year": months / 12.0, **{a: np.full(24, w) for a, w in weights.items()},
         "contribution_rate": np.linspace(0.2, 0.1, 24)}
    )


def _hand_made_tables() -> dict[str, pd.DataFrame]:
    """Small tables with the columns of ``PensionReport.tables()``, written by hand (no JAX run)."""
    months = np.arange(25)
    median = 1.0 + 0.005 * months
    fan = pd.DataFrame({"month": months, "year": months / 12.0, "mean": median + 0.01,
                        **{f"p{q}": median + (q - 50) / 200.0 * np.sqrt(months / 12.0) for q in (5, 25, 50, 75, 95)}})
    tenors = [0.25, 1.0, 5.0, 10.0, 30.0]
    return {
        "comparison": pd.DataFrame(
            {"method": ["snapo", "fixed_mix"], "n": [512, 512], "mean": [120.0, 100.0], "stderr": [4.0, 5.0],
             "ci95_low": [112.0, 90.0], "ci95_high": [128.0, 110.0], "ratio_to_reference": [1.2, 1.0],
             "diff_mean": [20.0, 0.0], "diff_stderr": [2.0, 0.0]}
        ),
        "funding_fan": fan,
        "allocation": _allocation(0.3),
        "fixed_mix_allocation": _allocation(0.2),
        "key_rate_sensitivity": pd.DataFrame({"tenor": tenors, "rate": [0.02, 0.025, 0.032, 0.034, 0.035],
                                              "dV_dr": [10.0, -50.0, 200.0, 900.0, -300.0],
                                              "dV_per_bp": [0.001, -0.005, 0.02, 0.09, -0.03]}),
        "asset_sensitivity": pd.DataFrame({"asset": ["equities", "equities"],
                                           "parameter": ["expected_return", "volatility"],
                                           "value": [0.065, 0.16], "dV_dinput": [800.0, -300.0]}),
        "correlation_sensitivity": pd.DataFrame({"first": ["level"], "second": ["equities"], "value": [-0.1],
                                                 "dV_dinput": [12.0]}),
        "input_sensitivity": pd.DataFrame({"input": ["mortality_scale", "floor"], "value": [1.0, 0.9],
                                           "dV_dinput": [40.0, -70.0]}),
        "liability_risk": pd.DataFrame({"tenor": tenors, "key_rate_duration": [0.0, 0.1, 1.5, 4.0, 6.0],
                                        "dv01": [0.0, 0.1, 1.5, 4.0, 6.0]}),
        "training_curve": pd.DataFrame({"step": [0, 1, 2], "value": [80.0, 95.0, 110.0], "grad_norm": 1.0,
                                        "temperature": 0.01}),
    }


def _record_by_hand(url: str, folder: Path) -> int:
    """Record a run whose artifacts are the hand-made tables, saved by ``PensionReport.save`` as a job saves them."""
    config = {"scenario": {"funding": {"floor": 0.9}}}
    metrics = {"value_snapo": 120.0, "value_fixed_mix": 100.0, "snapo_minus_fixed_mix": 20.0,
               "snapo_minus_fixed_mix_stderr": 2.0, "terminal_funding_ratio_median": 1.12,
               "liability_present_value": 50_000.0, "n_sensitivities": 180.0}
    tables = _hand_made_tables()
    tables["comparison"] = tables["comparison"].set_index("method")
    report = pension.PensionReport(**tables, metrics=metrics)
    return record_report(url, report, folder, kind="pension", config=config)


def test_pension_page_renders_its_form(store_url: str) -> None:
    at = open_page(PENSION_PAGE)
    assert at.title[0].value == "Pension ALM"
    keys = {widget.key for widget in at.number_input}
    assert {"horizon_years", "key_rates", "contribution_min", "contribution_max", "floor", "steps",
            "paths_per_step", "eval_paths", "selection_paths", "timing_paths"} <= keys
    assert at.number_input(key="steps").value == 100
    assert not at.error and not at.header[1:]  # only the timing panel's header; nothing run yet


def test_recorded_run_opens_from_query_param(store_url: str, tmp_path: Path) -> None:
    run_id = _record_by_hand(store_url, tmp_path / "run")
    at = open_report(PENSION_PAGE, run_id)
    assert [m.value for m in at.metric] == ["120.0", "100.0", "112.0%", "50,000", "180"]
    assert list(at.dataframe[0].value["method"]) == ["SNAPO", "best fixed mix"]
    # value bars, fan, two allocations, contribution rate, key-rate bars, training curve
    assert len(at.get("vega_lite_chart")) >= 7
    subheaders = [s.value for s in at.subheader]
    assert {"Funding ratio under the SNAPO policy", "Allocation over time",
            "Sensitivities of the SNAPO objective"} <= set(subheaders)
    assert [t.label for t in at.tabs] == ["Key rates", "Assets", "Correlations", "Other inputs",
                                          "Liability key-rate risk"]
    assert {"download_funding_fan", "download_liability_risk"} <= {b.key for b in at.download_button}

    at.run()  # a rerun keeps the report
    assert at.header[0].value == f"Results of run #{run_id}"


def test_views_shape_the_tables() -> None:
    tables = _hand_made_tables()
    assert pension_views.asset_columns(tables["allocation"]) == list(ASSETS)
    long = pension_views.allocation_long(tables["allocation"])
    assert list(long.columns) == ["month", "year", "asset", "weight"] and len(long) == 24 * len(ASSETS)
    assert np.allclose(long.groupby("month")["weight"].sum(), 1.0)
    assert [pension_views.tenor_label(t) for t in (0.25, 0.5, 1.0, 2.5, 30.0)] == ["3m", "6m", "1y", "2.5y", "30y"]
    view = pension_views.comparison_view(tables["comparison"].iloc[::-1].set_index("method"))
    assert list(view["method"]) == ["SNAPO", "best fixed mix"]
    timing = pension.speedup_table(
        {"bump_seconds_K5": 0.6, "value_and_grad_seconds_K5": 0.2, "speedup_K5": 3.0, "bump_method_K5": "loop"}, [5]
    )
    assert timing.loc[0, ["key_rates", "speedup"]].tolist() == [5, 3.0]
    for chart in (
        pension_views.fan_chart(tables["funding_fan"], 0.9),
        pension_views.allocation_chart(tables["allocation"], "SNAPO"),
        pension_views.contribution_chart({"snapo": tables["allocation"], "fixed_mix": tables["fixed_mix_allocation"]}),
        pension_views.key_rate_chart(tables["key_rate_sensitivity"]),
        pension_views.speedup_chart(timing),
    ):
        assert chart.to_dict()


def test_job_spec_of_the_form() -> None:
    form = {"name": "p", "seed": 1, "horizon_years": 10, "key_rates": 11, "contribution_min": 0.0,
            "contribution_max": 0.3, "floor": 0.9, "steps": 100, "paths_per_step": 64, "eval_paths": 512,
            "selection_paths": 256}
    spec = pension_views.job_spec(form, "/tmp/out")
    assert spec["job"] == {"kind": "pension", "name": "p", "seed": 1, "output_dir": "/tmp/out"}
    assert "curve" not in spec["scenario"] and spec["scenario"]["funding"]["floor"] == 0.9
    assert spec["snapo"] == {"steps": 100, "paths_per_step": 64, "log_every": 25}
    curve = pension_views.job_spec({**form, "key_rates": 5})["scenario"]["curve"]
    assert len(curve["tenors"]) == len(curve["rates"]) == 5


def test_timing_panel_charts_the_measured_speedups(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(counts: list[int], **_: object) -> pd.DataFrame:
        figures = {}
        for k in counts:
            figures |= {f"bump_seconds_K{k}": 0.01 * (k + 1), f"value_and_grad_seconds_K{k}": 0.03,
                        f"speedup_K{k}": (k + 1) / 3.0}
        return pension.speedup_table(figures, counts)

    monkeypatch.setattr(pension, "measure_speedups", fake)  # the page measures through the package
    at = open_page(PENSION_PAGE)
    at.multiselect(key="timing_counts").set_value([]).run()
    at.button(key="timing_run").click().run()
    assert at.error[0].value.startswith("timing_counts:")
    at.multiselect(key="timing_counts").set_value([5, 50]).run()
    at.button(key="timing_run").click().run()
    assert not at.exception and not at.error
    assert list(at.dataframe[0].value["key_rates"]) == [5, 50]
    assert any("decisions bench pension --json" in c.value for c in at.caption)
    assert len(at.get("vega_lite_chart")) == 1


@pytest.mark.slow
def test_tiny_run_from_the_form_is_recorded_and_shown(store_url: str, tmp_path: Path) -> None:
    at = open_page(PENSION_PAGE, timeout=600)
    budgets = {"horizon_years": 2, "key_rates": 5, "steps": 4, "paths_per_step": 8, "eval_paths": 32,
               "selection_paths": 16}
    run_from_form(at, store_url, name="tiny-pension", kind="pension", numbers=budgets)
    assert len(at.dataframe[1].value) == 5  # one key-rate row per tenor


@pytest.mark.slow
def test_quick_timing_measures_a_speedup_per_key_rate_count() -> None:
    frame = pension.measure_speedups((2, 5), paths=16, horizon_years=1)
    assert list(frame["key_rates"]) == [2, 5] and (frame["speedup"] > 0).all()
