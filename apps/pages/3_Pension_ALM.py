"""Pension ALM page: set the horizon, key rates, contribution bounds and floor; train SNAPO against a fixed mix.

The run goes through ``decisions.finance.pension.job.execute``, so it is recorded in the
run store like a CLI run; the page then reads the recorded tables back and draws SNAPO
against the best fixed mix, the funding-ratio fan, the allocation over time with the
contribution rate, the key-rate sensitivities, the other sensitivity tables and the
liability's key-rate risk. A panel measures bump-and-revalue against one adjoint pass for
a few key-rate counts. ``?run=<id>`` opens the report of a recorded run.
"""

from __future__ import annotations

import app_charts
import app_common
import app_login
import page_skeleton
import pension_views
import streamlit as st

import decisions.finance.pension as pension
from decisions.errors import InputError
from decisions.store import error_line

# What the page decides, under its title.
INTRO = (
    "Choose each month's allocation across cash, bond buckets and risky assets and the sponsor's "
    "contribution rate for a defined-benefit scheme, with a penalty when the funding ratio falls "
    "below the floor. SNAPO is scored against the best fixed mix on the same fresh paths, with every "
    "sensitivity (key rates, asset parameters, correlations, mortality, funding) from one adjoint pass."
)

TIMING_KEY = "pension_timing"

# Budgets small enough for an interactive run of a minute or two on a CPU (no bare string
# literals at module level here: Streamlit's "magic" would print them).
INTERACTIVE_DEFAULTS = {
    "horizon_years": 10,
    "key_rates": pension_views.DEFAULT_KEY_RATES,
    "steps": 100,
    "paths_per_step": 64,
    "eval_paths": 512,
    "selection_paths": 256,
}


def form_inputs() -> dict:
    """The scenario and budget inputs; returns the form for ``pension_views.job_spec``."""
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Scheme")
        data = {
            "horizon_years": st.number_input(
                "Horizon (years)", min_value=1, max_value=60, value=INTERACTIVE_DEFAULTS["horizon_years"],
                key="horizon_years",
            ),
            "key_rates": st.number_input(
                "Key rates on the curve", min_value=2, max_value=200, value=INTERACTIVE_DEFAULTS["key_rates"],
                key="key_rates", help="11 is the standard 3m-30y curve; other counts span 3m-60y geometrically.",
            ),
            "contribution_min": st.number_input(
                "Contribution rate, min (x payroll)", value=0.0, step=0.01, format="%.2f", key="contribution_min"
            ),
            "contribution_max": st.number_input(
                "Contribution rate, max (x payroll)", value=0.30, step=0.01, format="%.2f", key="contribution_max"
            ),
            "floor": st.number_input("Funding-ratio floor", value=0.9, step=0.05, format="%.2f", key="floor"),
        }
    with right:
        st.subheader("Training and evaluation")
        data["name"] = st.text_input("Run name", value="pension-app", key="run_name")
        data["seed"] = st.number_input("Seed", min_value=0, value=0, key="seed")
        labels = {
            "steps": "SNAPO training steps",
            "paths_per_step": "SNAPO paths per step",
            "eval_paths": "Fresh evaluation paths",
            "selection_paths": "Fixed-mix selection paths",
        }
        for key, label in labels.items():
            data[key] = st.number_input(label, min_value=0, value=INTERACTIVE_DEFAULTS[key], key=key)
    return data


def show_comparison(report: pension_views.RecordedPensionRun) -> None:
    """SNAPO against the best fixed mix on the same fresh paths."""
    view = pension_views.comparison_view(report.table("comparison"))
    app_common.table_section(
        "SNAPO against the best fixed mix", view, app_charts.value_bars(view),
        caption="Objective per path: discounted surplus at the horizon, less contribution cost and the "
                "shortfall penalty below the floor; mean over common fresh paths, paired difference.",
    )


def show_paths(report: pension_views.RecordedPensionRun) -> None:
    """The funding-ratio fan, the allocations over time and the contribution rate."""
    st.subheader("Funding ratio under the SNAPO policy")
    st.caption("Bands: 5th-95th and 25th-75th percentiles over the evaluation paths; line: median, "
               "dashed: mean; red: the floor.")
    st.altair_chart(pension_views.fan_chart(report.table("funding_fan"), report.floor), width="stretch")
    app_common.download_csv(report.table("funding_fan"), "funding_fan", report.run_id)

    st.subheader("Allocation over time")
    allocations = {"snapo": report.table("allocation"), "fixed_mix": report.table("fixed_mix_allocation")}
    columns = st.columns(2)
    for column, (name, frame) in zip(columns, allocations.items(), strict=True):
        if not frame.empty:
            title = f"{pension_views.method_label(name)} (mean weights)"
            column.altair_chart(pension_views.allocation_chart(frame, title), width="stretch")
    st.altair_chart(pension_views.contribution_chart(allocations), width="stretch")
    app_common.download_csv(allocations["snapo"], "allocation", report.run_id)


def show_sensitivities(report: pension_views.RecordedPensionRun) -> None:
    """Key-rate bars, the asset, correlation and scalar sensitivity tables, the liability's risk."""
    st.subheader("Sensitivities of the SNAPO objective")
    st.caption("Every input differentiated in one reverse pass (the policy reacting).")
    key_rates = report.table("key_rate_sensitivity")
    if not key_rates.empty:
        st.altair_chart(pension_views.key_rate_chart(key_rates), width="stretch")
    tabs = {
        "key_rate_sensitivity": "Key rates",
        "asset_sensitivity": "Assets",
        "correlation_sensitivity": "Correlations",
        "input_sensitivity": "Other inputs",
        "liability_risk": "Liability key-rate risk",
    }
    present = {name: label for name, label in tabs.items() if not report.table(name).empty}
    for tab, name in zip(st.tabs(list(present.values())), present, strict=True):
        with tab:
            st.dataframe(report.table(name), hide_index=True, width="stretch")
            app_common.download_csv(report.table(name), name, report.run_id)


def show_report(report: pension_views.RecordedPensionRun) -> None:
    """Draw a recorded run: headline figures, comparison, fan, allocation, sensitivities, training."""
    app_common.results_header(report.run_id, pension_views.headline(report))
    if not report.table("comparison").empty:
        show_comparison(report)
    show_paths(report)
    show_sensitivities(report)
    app_common.training_curve_section(report.table("training_curve"), report.run_id)


def show_timing(url: str) -> None:
    """The bump-versus-adjoint panel: measure on demand (a role that may run jobs), chart speed-up against K
    (log-log)."""
    st.header("Bump and revalue versus one adjoint pass")
    st.caption(
        "With K key rates, bump and revalue needs K + 1 valuations; one jax.value_and_grad pass gives "
        "every sensitivity at once. This is a quick measurement (5-year horizon, few paths, compile "
        "excluded); the full benchmark is `decisions bench pension --json`."
    )
    left, right = st.columns(2)
    counts = left.multiselect(
        "Key-rate counts K", [2, 5, 10, 20, 50, 100, 200], default=list(pension.QUICK_KEY_RATES),
        key="timing_counts",
    )
    paths = right.number_input("Paths", min_value=16, max_value=8192, value=256, key="timing_paths")
    if st.button("Measure", key="timing_run", disabled=app_login.blocked("run")):
        try:
            app_login.writer("run", url)
        except InputError as err:
            st.error(str(err))
            return
        if not counts:
            st.error("timing_counts: choose at least one key-rate count")
        else:
            with st.status("Timing…", expanded=True) as status:
                try:
                    frame = pension.measure_speedups(
                        sorted(counts), paths=int(paths), progress=app_common.StreamlitProgress(status)
                    )
                except Exception as exc:  # shown on one line
                    status.update(label="Timing failed", state="error")
                    st.error(error_line(exc))
                    return
                status.update(label="Timing done", state="complete", expanded=False)
            st.session_state[TIMING_KEY] = frame
    frame = st.session_state.get(TIMING_KEY)
    if frame is not None:
        st.altair_chart(pension_views.speedup_chart(frame), width="stretch")
        st.dataframe(frame, hide_index=True, width="stretch")


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=pension.DOMAIN, icon=":material/savings:", intro=INTRO,
    settings=form_inputs, job_spec=pension_views.job_spec, show=lambda report, _run_id, _url: show_report(report),
    loader=pension_views.load_run, parse_scenario=pension.Scenario.parse,
    after=lambda _settings, url: show_timing(url),  # the bump-versus-adjoint panel, below any report
))
