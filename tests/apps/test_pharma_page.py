"""The pharma page: the form, input errors on one line, a recorded run opened with ``?run=<id>``, the views."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.health.pharma import CPP_NAMES, CQA_NAMES, CQA_UNITS, DOMAIN, PharmaReport, sensitivity_long
from decisions.store import list_runs
from tests.apps.conftest import APPS, PHARMA_PAGE
from tests.apps.helpers import (
    one_line_error,
    open_form,
    open_page,
    open_report,
    record_report,
    run_from_form,
    submit,
)

if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))  # the page imports its helpers by name, as Streamlit runs it
import pharma_views  # noqa: E402


def _hand_made_report() -> PharmaReport:
    """A small report with the real tables' columns, written by hand (no JAX run needed)."""
    methods = ("snapo", "best_constant")
    cpps = {"snapo": [76.0, 4.0, 14.0, 6.0, 2.0, 50.5, 10.0], "best_constant": [75.0, 4.0, 20.0, 6.0, 2.0, 55.0, 10.0]}
    comparison = pd.DataFrame(
        [{"method": m, "mean_yield": y, "compliance": c, "nominal_meets": ok, **dict(zip(CPP_NAMES, cpps[m], strict=True))}
         for m, y, c, ok in (("snapo", 80.0, 0.96, True), ("best_constant", 72.0, 0.93, False))]
    ).set_index("method")
    low = {"purity": 99.5, "d50": 80.0}
    high = {"impurity": 0.15, "degradant": 0.10, "d50": 250.0, "residual_solvent": 5000.0}
    nominal = {"snapo": [80.0, 99.7, 0.10, 0.06, 120.0, 600.0], "best_constant": [72.0, 99.6, 0.16, 0.07, 110.0, 700.0]}
    cqa = pd.concat(
        [pd.DataFrame({"method": m, "cqa": list(CQA_NAMES), "unit": [CQA_UNITS[n] for n in CQA_NAMES],
                       "low": [low.get(n, np.nan) for n in CQA_NAMES], "high": [high.get(n, np.nan) for n in CQA_NAMES],
                       "nominal": nominal[m], "meets": [True, True, m == "snapo", True, True, True],
                       "mean": nominal[m]}) for m in methods],
        ignore_index=True,
    )
    profiles = pd.DataFrame(
        [(m, unit, 0, 0.0, 4.0, 75.0, 75.0) for m in methods for unit in ("reactor", "crystalliser", "dryer")],
        columns=["method", "unit", "segment", "start_h", "end_h", "temperature_start", "temperature_end"],
    )
    rows = []
    for m in methods:
        for unit, start, temps in (("reactor", 0.0, [80, 76, 72]), ("crystalliser", 4.0, [60, 40, 14]),
                                   ("dryer", 10.0, [45, 50, 52])):
            for k, temp in enumerate(temps):
                rows.append((m, unit, 2.0 * k, start + 2.0 * k, "temperature", float(temp)))
                if unit == "dryer":
                    rows.append((m, unit, 2.0 * k, start + 2.0 * k, "residual_solvent", 5000.0 / (k + 1)))
    trajectories = pd.DataFrame(rows, columns=["method", "unit", "time_h", "batch_time_h", "variable", "value"])
    jacobian = pd.DataFrame(np.arange(42.0).reshape(6, 7) - 20.0, index=list(CQA_NAMES), columns=list(CPP_NAMES))
    zeros = np.zeros((6, 7), bool)
    grid = np.meshgrid([60.0, 75.0, 90.0], [0.0, 15.0, 30.0], indexing="ij")
    return PharmaReport(
        comparison=comparison,
        cqa=cqa,
        profiles=profiles,
        trajectories=trajectories,
        filtration=pd.DataFrame({"method": list(methods), "product": [90.0, 85.0], "wash_loss": [1.0, 1.2]}),
        sensitivity=sensitivity_long(jacobian, zeros, zeros),
        design_space=pd.DataFrame({"reactor_temperature": grid[0].ravel(), "cooling_end_temperature": grid[1].ravel(),
                                   "probability": np.linspace(0.0, 1.0, 9)}),
        training_curve=pd.DataFrame({"step": [0, 1, 2], "value": [0.5, 0.6, 0.7], "grad_norm": 1.0,
                                     "temperature": 0.1}),
        metrics={"snapo_yield": 80.0, "best_constant_yield": 72.0, "yield_gain": 8.0, "sens_ms": 1.5,
                 "n_sensitivities": 42.0, "design_space_share_meeting_target": 1 / 9},
        compliance_target=0.9,
    )


def _record_by_hand(url: str, folder: Path) -> int:
    config = {"optimise": {"compliance_target": 0.9}}
    return record_report(url, _hand_made_report(), folder, kind=DOMAIN.name, config=config)


def test_pharma_page_renders_its_form(store_url: str) -> None:
    at = open_page(PHARMA_PAGE)
    assert at.title[0].value == "Pharma process"
    keys = {widget.key for widget in at.number_input}
    assert {"range_reactor_temperature_low", "range_dryer_temperature_high", "purity_min", "d50_max",
            "residual_solvent_max", "cpp_reaction_time", "opt_steps", "eval_samples", "base_points",
            "ds_points", "ds_x_low_reactor_temperature", "ds_y_high_cooling_end_temperature"} <= keys
    assert at.number_input(key="opt_steps").value == 200
    assert at.selectbox(key="method").value == "all"
    assert not at.error and not at.header  # nothing run yet


def test_design_space_ranges_follow_the_chosen_cpp(store_url: str) -> None:
    at = open_page(PHARMA_PAGE)
    at.selectbox(key="ds_cpp_x").select("dryer_time").run()
    assert at.number_input(key="ds_x_low_dryer_time").value == 5.0
    assert "ds_x_low_reactor_temperature" not in {w.key for w in at.number_input}


def test_bad_inputs_show_one_line_errors_naming_the_field_and_record_nothing(store_url: str) -> None:
    at = open_page(PHARMA_PAGE)
    submit(at, {"range_reactor_temperature_low": 100.0})
    assert not at.exception
    assert [e.value for e in at.error] == ["scenario.ranges.reactor_temperature: low (100.0) must be below high (100.0)"]

    one_line_error(submit(at, {"range_reactor_temperature_low": 50.0, "opt_steps": 0}), "optimise.steps:")

    submit(at, {"opt_steps": 5, "ds_y_high_cooling_end_temperature": 65.0})
    assert at.error[0].value.startswith("design_space.y_high: 65.0 must be below the crystalliser start")
    assert list_runs(url=store_url) == [] and not at.status


def test_every_method_makes_a_spec_that_prepare_accepts(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The form sends only the settings the method uses (prepare refuses the others); no job runs."""
    at, prepared = open_form(DOMAIN, monkeypatch)
    methods = ["all", "optimise", "sensitivities", "design_space"]
    for method in methods:
        at.selectbox(key="method").select(method)
        at.button(key="run").click().run()
        assert [e.value for e in at.error] == ["test: prepared"], method
    assert [job.method.value for job in prepared] == methods
    assert list_runs(url=store_url) == []


def test_recorded_run_opens_from_query_param(store_url: str, tmp_path: Path) -> None:
    run_id = _record_by_hand(store_url, tmp_path / "run")
    at = open_report(PHARMA_PAGE, run_id)
    assert [m.value for m in at.metric] == ["80.00 %", "96.0%", "72.00 %", "93.0%", "1.5 ms"]
    cqa = at.dataframe[0].value
    assert list(cqa["cqa"]) == list(CQA_NAMES)
    assert cqa.set_index("cqa").loc["impurity", "best constant check"] == "FAIL"
    assert cqa.set_index("cqa").loc["impurity", "SNAPO check"] == "pass"
    assert cqa.set_index("cqa").loc["yield", "SNAPO check"] == ""
    assert cqa.set_index("cqa").loc["d50", "specification"] == "80 – 250"
    assert list(at.dataframe[1].value["method"]) == ["SNAPO", "best constant"]
    # temperatures, another trajectory, yield bars, heat map, design space, training curve
    assert len(at.get("vega_lite_chart")) >= 6
    assert at.selectbox(key="trajectory_variable").value == "residual_solvent"
    assert {b.key for b in at.download_button} == {
        "download_profiles", "download_trajectories", "download_cqa", "download_comparison",
        "download_sensitivity", "download_design_space", "download_training_curve",
    }
    assert any("11% of the grid reaches 90%" in c.value for c in at.caption)

    at.run()  # a rerun keeps the report
    assert at.header[0].value == f"Results of run #{run_id}"


def test_views_shape_the_tables() -> None:
    report = _hand_made_report()
    assert pharma_views.spec_text(99.5, float("nan")) == "≥ 99.5"
    assert pharma_views.spec_text(float("nan"), 0.15) == "≤ 0.15"
    assert pharma_views.spec_text(float("nan"), float("nan")) == ""
    starts = pharma_views.unit_starts(report.trajectories)
    assert list(starts["unit"]) == ["reactor", "crystalliser", "dryer"] and list(starts["batch_time_h"]) == [0, 4, 10]
    assert pharma_views.trajectory_variables(report.trajectories) == ["residual_solvent"]
    for chart in (
        pharma_views.temperature_chart(report.trajectories),
        pharma_views.yield_bars(report.comparison, 0.95),
        pharma_views.sensitivity_heatmap(report.sensitivity),
        pharma_views.design_space_chart(report.design_space, report.comparison, 0.9),
    ):
        assert chart.to_dict()
    edges = pharma_views._cell_edges(report.design_space["reactor_temperature"], "x")
    assert edges["x_lo"].min() == 52.5 and edges["x_hi"].max() == 97.5


@pytest.mark.slow
def test_tiny_run_from_the_form_is_recorded_and_shown(store_url: str, tmp_path: Path) -> None:
    at = open_page(PHARMA_PAGE, timeout=600)
    budgets = {"opt_steps": 10, "opt_samples": 4, "eval_samples": 32, "base_samples": 8, "base_points": 2,
               "base_refinements": 0, "ds_points": 3, "ds_samples": 4}
    run = run_from_form(at, store_url, name="tiny-pharma", kind="pharma", numbers=budgets)
    assert run.config["baseline"]["points"] == [2, 2, 2]
    assert all(Path(a.path).is_relative_to(tmp_path / "artifacts") for a in run.artifacts)
    bars = [bar.proto.text for bar in at.status[0].get("progress")]
    assert "SNAPO training: 10/10" in bars and "design space: 1/1" in bars
    assert list(at.dataframe[1].value["method"]) == ["SNAPO", "best constant"]
