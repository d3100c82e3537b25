"""Pharma process page: set the CPP ranges, specifications and budgets; optimise the chain's profiles.

The run goes through ``execute_domain``, so it is recorded in the run store
like a CLI run; the page then reopens the recorded report (``PharmaReport.load``) and draws the chain's
temperature profiles, the CQA table against the specifications, SNAPO against the best
constant operation, the CQA x CPP sensitivity heat map, the design-space map and the training
curve. ``?run=<id>`` opens the report of a recorded run. The page imports the domain's
package API only.
"""

from __future__ import annotations

import app_common
import page_skeleton
import pharma_views
import streamlit as st

from decisions.health.pharma import (
    DOMAIN,
    Cpp,
    OperatingPoint,
    OperatingRanges,
    PharmaReport,
    Scenario,
    Specs,
)

# What the page decides, under its title.
INTRO = (
    "Optimise the temperature profiles of a reactor → crystalliser → filter/wash → dryer chain for "
    "expected yield, with every quality specification met under parameter uncertainty. SNAPO is scored "
    "against the best constant-temperature operation on the same fresh draws, with the ICH Q8 "
    "sensitivities of every CQA to every CPP and a design-space map."
)

METHODS = {
    "all": "Optimise, then sensitivities and design space at SNAPO's point",
    "optimise": "SNAPO against the best constant operation only",
    "sensitivities": "Sensitivities at the operating point below",
    "design_space": "Design space at the operating point below",
}
CPP_LABELS = {
    "reactor_temperature": "Reactor temperature (C)",
    "reaction_time": "Reaction time (h)",
    "cooling_end_temperature": "Cooling end temperature (C)",
    "cooling_time": "Cooling time (h)",
    "wash_ratio": "Wash ratio",
    "dryer_temperature": "Dryer temperature (C)",
    "dryer_time": "Drying time (h)",
}
SPEC_LABELS = {
    "purity_min": "Purity, min (%)",
    "impurity_max": "Impurity I, max (%)",
    "degradant_max": "Degradant D, max (%)",
    "d50_min": "d50, min (um)",
    "d50_max": "d50, max (um)",
    "residual_solvent_max": "Residual solvent, max (ppm)",
}
RANGE_LABELS = {
    "reactor_temperature": "Reactor temperature",
    "cooling_end_temperature": "Cooling end temperature",
    "dryer_temperature": "Dryer temperature",
}

# Budgets small enough for an interactive run of a minute or two on a CPU (no bare string
# literals at module level here: Streamlit's "magic" would print them).
INTERACTIVE_DEFAULTS = {
    "opt_steps": 200,
    "opt_samples": 32,
    "eval_samples": 500,
    "base_samples": 64,
    "base_points": 6,
    "base_refinements": 1,
    "ds_points": 15,
    "ds_samples": 64,
}


def range_inputs() -> dict:
    """Low/high inputs of the three optimised temperatures; returns ``scenario.ranges``."""
    st.subheader("Operating ranges (C)")
    default = OperatingRanges()
    data = {}
    for name, label in RANGE_LABELS.items():
        bounds = getattr(default, name)
        left, right = st.columns(2)
        data[name] = {
            "low": left.number_input(f"{label}, low", value=bounds.low, key=f"range_{name}_low"),
            "high": right.number_input(f"{label}, high", value=bounds.high, key=f"range_{name}_high"),
        }
    return data


def cpp_inputs() -> dict:
    """The operating point (SNAPO's start; the point of sensitivity-only runs); returns ``scenario.cpps``."""
    default = OperatingPoint()
    with st.expander("Operating point (times, wash ratio, starting temperatures)"):
        columns = st.columns(2)
        return {
            name: columns[i % 2].number_input(label, value=float(getattr(default, name)), key=f"cpp_{name}")
            for i, (name, label) in enumerate(CPP_LABELS.items())
        }


def spec_inputs() -> dict:
    """The specification limits on the CQAs; returns ``scenario.specs``."""
    st.subheader("Specifications")
    default = Specs()
    columns = st.columns(2)
    return {
        name: columns[i % 2].number_input(label, value=float(getattr(default, name)), key=name, format="%.4g")
        for i, (name, label) in enumerate(SPEC_LABELS.items())
    }


def design_space_inputs() -> dict:
    """The two CPPs of the design-space map, their ranges and the grid; returns ``design_space``."""
    with st.expander("Design space"):
        names = [c.value for c in Cpp]
        left, right = st.columns(2)
        cpp_x = left.selectbox("x axis", names, index=0, format_func=CPP_LABELS.__getitem__, key="ds_cpp_x")
        cpp_y = right.selectbox("y axis", names, index=2, format_func=CPP_LABELS.__getitem__, key="ds_cpp_y")
        x_low, x_high = pharma_views.AXIS_DEFAULTS[cpp_x]
        y_low, y_high = pharma_views.AXIS_DEFAULTS[cpp_y]
        return {
            "cpp_x": cpp_x,
            "x_low": left.number_input("x from", value=x_low, key=f"ds_x_low_{cpp_x}"),
            "x_high": left.number_input("x to", value=x_high, key=f"ds_x_high_{cpp_x}"),
            "cpp_y": cpp_y,
            "y_low": right.number_input("y from", value=y_low, key=f"ds_y_low_{cpp_y}"),
            "y_high": right.number_input("y to", value=y_high, key=f"ds_y_high_{cpp_y}"),
            "points": left.number_input(
                "Grid points per axis", min_value=1, value=INTERACTIVE_DEFAULTS["ds_points"], key="ds_points"
            ),
            "samples": right.number_input(
                "Draws of the uncertain constants", min_value=1, value=INTERACTIVE_DEFAULTS["ds_samples"],
                key="ds_samples",
            ),
        }


def settings_inputs() -> dict:
    """Run name, method, seed and the SNAPO / evaluation / baseline budgets, in an expander."""
    with st.expander("Training and evaluation"):
        left, right = st.columns(2)
        number = {
            "opt_steps": "SNAPO training steps",
            "opt_samples": "SNAPO draws per step",
            "eval_samples": "Fresh draws of the evaluation",
            "base_samples": "Baseline draws per grid point",
            "base_points": "Baseline grid points per temperature",
            "base_refinements": "Baseline zoomed passes",
        }
        data = {
            "name": left.text_input("Run name", value="pharma-app", key="run_name"),
            "method": right.selectbox("Methods", list(METHODS), format_func=METHODS.__getitem__, key="method"),
            "seed": left.number_input("Seed", min_value=0, value=0, key="seed"),
            "compliance_target": right.number_input(
                "Compliance target", value=0.95, step=0.01, format="%.2f", key="compliance_target"
            ),
        }
        for i, (key, label) in enumerate(number.items()):
            column = left if i % 2 == 0 else right
            data[key] = column.number_input(label, min_value=0, value=INTERACTIVE_DEFAULTS[key], key=key)
        return data


def job_spec(scenario: dict, design: dict, settings: dict, output_dir: str | None) -> dict:
    """The job spec (``[job]``, ``[scenario]``, ``[optimise]``, ``[baseline]``, ``[design_space]``) of the form.

    Only the settings the chosen method uses are sent (``prepare`` refuses the others): without
    optimising, ``[optimise]`` keeps just the evaluation's ``eval_samples`` and ``compliance_target``
    and there is no ``[baseline]`` or ``scenario.ranges``; without the map, no ``[design_space]``.
    """
    method = settings["method"]
    steps = int(settings["opt_steps"])
    target = float(settings["compliance_target"])
    optimise = {"eval_samples": int(settings["eval_samples"]), "compliance_target": target}
    spec: dict = {"job": app_common.job_table(DOMAIN, settings, output_dir, method=method)}
    if method in ("all", "optimise"):
        spec["scenario"] = scenario
        spec["optimise"] = {
            "steps": steps,
            "samples_per_step": int(settings["opt_samples"]),
            **optimise,
            "training_compliance": min(0.995, max(0.01, target + 0.01)),  # the back-off above the target
            "log_every": max(1, min(50, steps)),
        }
        spec["baseline"] = {
            "samples": int(settings["base_samples"]),
            "points": [int(settings["base_points"])] * 3,
            "refinements": int(settings["base_refinements"]),
        }
    else:
        spec["scenario"] = {key: value for key, value in scenario.items() if key != "ranges"}
        spec["optimise"] = optimise
    if method in ("all", "design_space"):
        spec["design_space"] = {**design, "points": int(design["points"]), "samples": int(design["samples"])}
    return spec


def show_chain(report: PharmaReport, run_id: int) -> None:
    """The chain's temperature profiles and any other trajectory variable, per operating point."""
    st.subheader("The chain's profiles")
    st.altair_chart(pharma_views.temperature_chart(report.trajectories), width="stretch")
    variables = pharma_views.trajectory_variables(report.trajectories)
    if variables:
        chosen = st.selectbox("Another trajectory", variables, key="trajectory_variable")
        st.altair_chart(pharma_views.variable_chart(report.trajectories, chosen), width="stretch")
    app_common.download_csv(report.profiles, "profiles", run_id)
    app_common.download_csv(report.trajectories, "trajectories", run_id)


def show_quality(report: PharmaReport, run_id: int) -> None:
    """The CQA table against the specifications and the comparison of the operating points."""
    st.subheader("Critical quality attributes against the specifications")
    st.caption("Nominal: at the nominal constants (checked against the limits); mean: over the fresh draws.")
    st.dataframe(pharma_views.cqa_view(report.cqa), hide_index=True, width="stretch")
    app_common.download_csv(report.cqa, "cqa", run_id)

    title = "SNAPO against the best constant operation" if "snapo" in report.comparison.index else "Operating point"
    app_common.table_section(
        title, pharma_views.comparison_view(report.comparison),
        pharma_views.yield_bars(report.comparison, report.compliance_target),
        column_config=app_common.number_columns({"mean_yield": "%.2f", "compliance": "%.3f"},
                                                labels={"mean_yield": "mean yield (%)"}),
        download=(report.comparison.reset_index(), "comparison", run_id),
    )


def show_maps(report: PharmaReport, run_id: int) -> None:
    """The sensitivity heat map and the design-space map, when the run computed them."""
    if not report.sensitivity.empty:
        st.subheader("Sensitivities of the CQAs to the CPPs")
        st.caption(
            "One reverse pass through dryer, filter, crystalliser and reactor (profile shapes held). "
            "Colour: each entry over its row's largest magnitude; text: d CQA / d CPP in CQA units per CPP unit."
        )
        st.altair_chart(pharma_views.sensitivity_heatmap(report.sensitivity), width="stretch")
        app_common.download_csv(report.sensitivity, "sensitivity", run_id)
    if not report.design_space.empty:
        st.subheader("Design space")
        share = report.metrics.get("design_space_share_meeting_target")
        target = f"{report.compliance_target:.0%}"
        note = f" {share:.0%} of the grid reaches {target}." if share is not None else ""
        st.caption(f"Probability that every specification is met under parameter uncertainty; "
                   f"outlined cells reach {target}.{note}")
        st.altair_chart(
            pharma_views.design_space_chart(report.design_space, report.comparison, report.compliance_target),
            width="stretch",
        )
        app_common.download_csv(report.design_space, "design_space", run_id)


def show_report(report: PharmaReport, run_id: int) -> None:
    """Draw a report: headline figures, profiles, CQAs, comparison, maps, training curve."""
    app_common.results_header(run_id, pharma_views.headline(report))
    show_chain(report, run_id)
    show_quality(report, run_id)
    show_maps(report, run_id)
    app_common.training_curve_section(report.training_curve, run_id)


def form_inputs() -> dict:
    """The whole form: ranges and operating point beside the specifications, the design space, the settings."""
    form, limits = st.columns(2, gap="large")
    with form:
        ranges = range_inputs()
        cpps = cpp_inputs()
    with limits:
        specs = spec_inputs()
    return {
        "scenario": {"cpps": cpps, "ranges": ranges, "specs": specs},
        "design": design_space_inputs(),
        "settings": settings_inputs(),
    }


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/science:", intro=INTRO,
    settings=form_inputs, show=lambda report, run_id, _url: show_report(report, run_id),
    job_spec=lambda form, output_dir: job_spec(form["scenario"], form["design"], form["settings"], output_dir),
    parse_scenario=Scenario.parse,
))
