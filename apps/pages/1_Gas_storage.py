"""Gas storage page: edit a facility, its prices and forward curve, run SNAPO against the baselines.

The run goes through ``execute_domain``, so it is recorded in the
run store like a CLI run; the page then reopens the recorded report
(``GasStorageReport.load``) and draws it. ``?run=<id>`` opens the report of a
recorded run. The page imports the domain's package API only.
"""

from __future__ import annotations

from datetime import date

import app_charts
import app_common
import page_skeleton
import pandas as pd
import streamlit as st

from decisions.energy.gas_storage import (
    DOMAIN,
    ExponentialOU,
    Facility,
    GasStorageReport,
    Scenario,
    SeasonalOU,
    TerminalRule,
    load_forward_curve_csv,
    seasonal_forward_curve,
)
from decisions.energy.gas_storage.spec import DEFAULT_LSMC_PATHS
from decisions.errors import InputError

# What the page decides, under its title.
INTRO = (
    "Value a storage lease: a SNAPO policy trained through the differentiable simulator, scored on "
    "common price paths against the LP intrinsic value, rolling intrinsic, least-squares Monte Carlo "
    "and doing nothing, with the sensitivity of the value to every forward-curve day."
)

PRICE_MODELS = {
    "seasonal_ou": "Seasonal one-factor (forward curve honoured in expectation)",
    "exponential_ou": "Exponential OU spot (model-implied forward)",
    "deterministic": "Deterministic (spot = forward: the intrinsic problem)",
}
TERMINAL_RULES = {
    TerminalRule.REQUIRED.value: "End inventory required",
    TerminalRule.SPOT_VALUE.value: "Leftover gas sold at spot",
}
CURVE_SOURCES = ("Default seasonal curve", "Upload a CSV")
METHODS = {
    "compare": "SNAPO and every baseline",
    "snapo": "SNAPO only (with the LP intrinsic value)",
    "baselines": "Baselines only",
}

# SNAPO and evaluation sizes small enough for an interactive run of about a minute on a CPU
# (no bare string literals at module level here: Streamlit's "magic" would print them).
INTERACTIVE_DEFAULTS = {"snapo_steps": 150, "snapo_paths": 64, "eval_paths": 256, "lsmc_paths": DEFAULT_LSMC_PATHS}


def facility_inputs() -> dict:
    """Number inputs for the facility; returns the ``scenario.facility`` mapping."""
    default = Facility()
    st.subheader("Facility")
    left, right = st.columns(2)
    data = {
        "min_inventory": left.number_input("Min inventory", value=default.min_inventory, key="min_inventory"),
        "max_inventory": right.number_input("Max inventory", value=default.max_inventory, key="max_inventory"),
        "start_inventory": left.number_input("Start inventory", value=default.start_inventory, key="start_inventory"),
        "end_inventory": right.number_input("End inventory", value=default.end_inventory, key="end_inventory"),
        "max_injection": left.number_input(
            "Max injection per day", value=float(default.max_injection), key="max_injection"
        ),
        "max_withdrawal": right.number_input(
            "Max withdrawal per day", value=float(default.max_withdrawal), key="max_withdrawal"
        ),
        "injection_cost": left.number_input(
            "Injection cost per unit", value=default.injection_cost, format="%.3f", key="injection_cost"
        ),
        "withdrawal_cost": right.number_input(
            "Withdrawal cost per unit", value=default.withdrawal_cost, format="%.3f", key="withdrawal_cost"
        ),
        "discount_rate": left.number_input(
            "Discount rate (annual)", value=default.discount_rate, step=0.005, format="%.4f", key="discount_rate"
        ),
        "terminal": right.selectbox(
            "Terminal rule", list(TERMINAL_RULES), format_func=TERMINAL_RULES.__getitem__, key="terminal"
        ),
    }
    return data


def price_inputs() -> dict:
    """The price model select and its parameters; returns the ``scenario.prices`` mapping."""
    st.subheader("Price model")
    model = st.selectbox("Model", list(PRICE_MODELS), format_func=PRICE_MODELS.__getitem__, key="price_model")
    left, right = st.columns(2)
    if model == "seasonal_ou":
        default = SeasonalOU()
        return {
            "model": model,
            "mean_reversion": left.number_input(
                "Mean reversion (per year)", value=default.mean_reversion, key="mean_reversion"
            ),
            "volatility": right.number_input("Volatility (per √year)", value=default.volatility, key="volatility"),
        }
    if model == "exponential_ou":
        default = ExponentialOU()
        st.caption("This process implies the forward curve (E[S_t]): of the curve below only its horizon and first day are used.")
        return {
            "model": model,
            "speed": left.number_input("Mean-reversion speed (per year)", value=default.speed, key="ou_speed"),
            "level": right.number_input("Long-run mean of ln S", value=default.level, format="%.4f", key="ou_level"),
            "volatility": left.number_input(
                "Volatility of ln S (per √year)", value=default.volatility, key="ou_volatility"
            ),
            "initial": right.number_input("Spot on day 0", value=default.initial, key="ou_initial"),
        }
    return {"model": model}


def curve_inputs() -> tuple[list[float], date] | None:
    """The forward curve: the default seasonal one or an uploaded CSV.

    Returns:
        ``(daily prices, first delivery date)``, or None when the upload is
        missing or invalid (an error is shown).
    """
    st.subheader("Horizon and forward curve")
    source = st.radio("Forward curve", CURVE_SOURCES, horizontal=True, key="curve_source")
    left, right = st.columns(2)
    if source == CURVE_SOURCES[0]:
        days = left.number_input("Horizon (days)", min_value=2, max_value=3650, value=365, key="horizon_days")
        start = right.date_input("First delivery day", value=date(2026, 4, 1), key="start_date")
        mean = left.number_input("Mean price", value=25.0, key="curve_mean")
        amplitude = right.number_input("Winter-summer half spread", value=6.0, key="curve_amplitude")
        curve = seasonal_forward_curve(int(days), start=start, mean=mean, amplitude=amplitude)
    else:
        upload = st.file_uploader(
            "CSV with a `forward` (or `price`) column and an optional `date` column",
            type=["csv"],
            key="curve_file",
        )
        if upload is None:
            st.info("Upload a forward curve to run.")
            return None
        try:
            curve, first = load_forward_curve_csv(upload, field="forward_curve_csv")
        except InputError as err:
            st.error(str(err))
            return None
        start = first or right.date_input("First delivery day", value=date(2026, 4, 1), key="start_date")
        st.caption(f"{len(curve)} daily prices from {start:%Y-%m-%d}, between {min(curve):.4g} and {max(curve):.4g}.")
    st.line_chart(pd.DataFrame({"forward": curve}, index=pd.date_range(start, periods=len(curve))), height=160)
    return curve, start


def settings_inputs() -> dict:
    """Run name, method, seed and the SNAPO / evaluation sizes, in an expander."""
    with st.expander("Training and evaluation"):
        left, right = st.columns(2)
        return {
            "name": left.text_input("Run name", value="gas-storage-app", key="run_name"),
            "method": right.selectbox("Methods", list(METHODS), format_func=METHODS.__getitem__, key="method"),
            "seed": left.number_input("Seed", min_value=0, value=0, key="seed"),
            "snapo_steps": right.number_input(
                "SNAPO training steps", min_value=1, value=INTERACTIVE_DEFAULTS["snapo_steps"], key="snapo_steps"
            ),
            "snapo_paths": left.number_input(
                "SNAPO paths per step", min_value=1, value=INTERACTIVE_DEFAULTS["snapo_paths"], key="snapo_paths"
            ),
            "eval_paths": right.number_input(
                "Evaluation paths", min_value=1, value=INTERACTIVE_DEFAULTS["eval_paths"], key="eval_paths"
            ),
            "lsmc_paths": left.number_input(
                "LSMC regression paths", min_value=1, value=INTERACTIVE_DEFAULTS["lsmc_paths"], key="lsmc_paths"
            ),
        }


def job_spec(scenario: dict, settings: dict, output_dir: str | None) -> dict:
    """The job spec (``[job]``, ``[scenario]``, ``[snapo]``, ``[evaluation]``) of the form's values.

    Only the settings the chosen method and terminal rule use are sent (``prepare`` refuses the
    others): ``[snapo]`` unless only the baselines run, ``lsmc_paths`` unless only SNAPO runs,
    ``end_inventory`` only when the end inventory is required.
    """
    method = settings["method"]
    facility = dict(scenario["facility"])
    if facility.get("terminal") != TerminalRule.REQUIRED.value:
        facility.pop("end_inventory", None)
    evaluation = {"paths": int(settings["eval_paths"])}
    if method != "snapo":
        evaluation["lsmc_paths"] = int(settings["lsmc_paths"])
    spec = {
        "job": app_common.job_table(DOMAIN, settings, output_dir, method=method),
        "scenario": {**scenario, "facility": facility},
        "evaluation": evaluation,
    }
    if method != "baselines":
        spec["snapo"] = {"steps": int(settings["snapo_steps"]), "paths_per_step": int(settings["snapo_paths"])}
    return spec


def show_report(report: GasStorageReport, run_id: int) -> None:
    """Draw a report: values against baselines, schedule, sensitivities, training curve, downloads."""
    comparison = report.comparison.reset_index()  # the ``method`` index as a column
    headline = [
        ("value_snapo", "SNAPO value", "{:,.0f}"),
        ("value_rolling_intrinsic", "Rolling intrinsic value", "{:,.0f}"),
        ("snapo_vs_rolling_intrinsic", "SNAPO / rolling intrinsic", "{:.3f}"),
    ]
    app_common.results_header(run_id, app_common.format_figures(report.metrics, headline))

    money = ("mean", "stderr", "ci95_low", "ci95_high", "diff_mean", "diff_stderr")
    app_common.table_section(
        "Value against baselines", comparison, app_charts.value_bars(report.comparison),
        column_config=app_common.number_columns({**dict.fromkeys(money, "%.2f"), "ratio_to_intrinsic": "%.4f"}),
        download=(comparison, "comparison", run_id),
    )

    st.subheader("Schedule")
    st.altair_chart(app_charts.schedule_chart(report.schedule), width="stretch")
    st.altair_chart(app_charts.moves_chart(report.schedule), width="stretch")
    app_common.download_csv(report.schedule, "schedule", run_id)

    st.subheader("Sensitivity to the forward curve, dV/dF per day")
    st.altair_chart(app_charts.sensitivity_chart(report.curve_sensitivity), width="stretch")
    app_common.download_csv(report.curve_sensitivity, "curve_sensitivity", run_id)

    if not report.input_sensitivity.empty:
        st.subheader("Sensitivity to the scalar inputs")
        st.dataframe(report.input_sensitivity, hide_index=True, width="stretch")
        app_common.download_csv(report.input_sensitivity, "input_sensitivity", run_id)

    app_common.training_curve_section(report.training_curve, run_id)


def form_inputs() -> dict:
    """The whole form: the facility beside the price model and forward curve, then the settings.

    Returns:
        ``facility``, ``prices``, ``curve`` (None when no usable curve is given) and ``settings``.
    """
    form, model = st.columns(2, gap="large")
    with form:
        facility = facility_inputs()
    with model:
        prices = price_inputs()
        curve = curve_inputs()
    return {"facility": facility, "prices": prices, "curve": curve, "settings": settings_inputs()}


def form_job_spec(form: dict, output_dir: str | None) -> dict:
    """The job spec of the whole form: its scenario (the curve, or only its length when the process implies it)."""
    forward, start = form["curve"]
    prices = form["prices"]
    scenario = {"facility": form["facility"], "prices": prices, "start_date": start}
    if prices["model"] == "exponential_ou":  # the process implies the curve: only its length is used
        scenario["horizon_days"] = len(forward)
    else:
        scenario["forward_curve"] = forward
    return job_spec(scenario, form["settings"], output_dir)


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/propane_tank:", intro=INTRO,
    settings=form_inputs, job_spec=form_job_spec, show=lambda report, run_id, _url: show_report(report, run_id),
    parse_scenario=Scenario.parse, can_run=lambda form: form["curve"] is not None,
))
