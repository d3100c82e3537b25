"""Chart builders: each draws the series its table has, and skips the optional SNAPO ones when absent."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from apps import app_charts

DAYS = pd.date_range("2026-04-01", periods=10, freq="D")


def _spec(chart) -> str:
    """The Vega-Lite spec as text (validates the chart against the schema on the way)."""
    return json.dumps(chart.to_dict())


@pytest.fixture
def schedule() -> pd.DataFrame:
    t = np.arange(10.0)
    return pd.DataFrame({
        "date": DAYS, "forward": 20 + t, "lp_net_injection": np.r_[np.full(5, 25.0), np.full(5, -25.0)],
        "lp_inventory": np.minimum(25 * t, 125.0),
    })


def test_value_bars_draw_means_with_ci_error_bars() -> None:
    comparison = pd.DataFrame(
        {"mean": [110.0, 100.0], "stderr": [2.0, 0.0], "ci95_low": [106.0, 100.0], "ci95_high": [114.0, 100.0]},
        index=pd.Index(["snapo", "intrinsic_lp"], name="method"),
    )
    spec = app_charts.value_bars(comparison).to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["bar", "errorbar"]
    assert spec["layer"][1]["encoding"]["x2"]["field"] == "ci95_high"
    labels = {row["label"] for row in next(iter(spec["datasets"].values()))}
    assert labels == {"SNAPO", "intrinsic (LP)"}
    # a comparison read back from CSV has the method as a column
    assert _spec(app_charts.value_bars(comparison.reset_index())) == _spec(app_charts.value_bars(comparison))


def test_schedule_chart_without_snapo_columns_draws_lp_and_forward(schedule: pd.DataFrame) -> None:
    text = _spec(app_charts.schedule_chart(schedule))
    assert "LP intrinsic inventory" in text and "SNAPO" not in text and '"forward"' in text


def test_schedule_chart_with_snapo_columns_adds_band_and_mean(schedule: pd.DataFrame) -> None:
    schedule = schedule.assign(
        snapo_inventory=schedule["lp_inventory"] * 0.9, snapo_inventory_p10=schedule["lp_inventory"] * 0.8,
        snapo_inventory_p90=schedule["lp_inventory"], snapo_net_injection=schedule["lp_net_injection"] * 0.9,
        spot_mean=schedule["forward"],
    )
    spec = app_charts.schedule_chart(schedule).to_dict()
    text = json.dumps(spec)
    assert "SNAPO inventory (mean)" in text and "snapo_inventory_p90" in text and "spot (mean of paths)" in text
    assert spec["resolve"]["scale"]["y"] == "independent"
    assert "SNAPO (mean)" in _spec(app_charts.moves_chart(schedule))


def test_sensitivity_chart_draws_every_estimate_present() -> None:
    sens = pd.DataFrame({"date": DAYS, "forward": 20.0, "lp_dV_dF": np.linspace(-1, 1, 10)})
    assert "SNAPO" not in _spec(app_charts.sensitivity_chart(sens))
    sens = sens.assign(snapo_dV_dF=sens["lp_dV_dF"], snapo_dV_dF_full=sens["lp_dV_dF"])
    text = _spec(app_charts.sensitivity_chart(sens))
    assert "SNAPO (decisions held)" in text and "SNAPO (policy reacts)" in text


def test_training_chart_plots_value_per_step() -> None:
    curve = pd.DataFrame({"step": [0, 25, 50], "value": [1.0, 2.0, 2.5], "grad_norm": 1.0, "temperature": 0.1})
    spec = app_charts.training_chart(curve).to_dict()
    assert spec["encoding"]["x"]["field"] == "step" and spec["encoding"]["y"]["field"] == "value"


def test_method_label() -> None:
    assert app_charts.method_label("rolling_intrinsic") == "rolling intrinsic"
    assert app_charts.method_label("my_new_method") == "my new method"
