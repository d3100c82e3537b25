"""Utility weights page: tune each request's utility-weight vector, sweep the engagement-revenue front,
choose the operating point to deploy.

The run goes through ``execute_domain``, so it is recorded in the run store like a
CLI run; the page then reopens the recorded report (``UtilityReport.load``) and draws the front of
every method (exact on the simulator, the learnt points with their off-policy estimates), the
table of the learnt operating points, the choice of the point to deploy with the history of
choices (``decisions.store.deployments``), the per-segment view, the off-policy check, the drift
scenario and the real front on the Open Bandit sample. ``?run=<id>`` opens the report of a
recorded run. The page imports the domain's package API only.
"""

from __future__ import annotations

import app_common
import deploy_form
import page_skeleton
import streamlit as st
import utility_views

from decisions.recsys.utility import DOMAIN, UtilityReport
from decisions.store import deployments

# What the page decides, under its title.
INTRO = (
    "A recommender ranks by a weighted sum of its predicted outcomes (save, hide, revenue). A one-step "
    "RL agent, a Q-network trained offline on exploration logs, chooses that utility-weight vector per "
    "request. Lambda sweeps the trade-off from engagement (0) to revenue (1), and every point of the "
    "sweep is a deployable operating policy. Values are exact on the simulator; off-policy estimates "
    "from held-out logs come with 95% intervals."
)

# Budgets small enough for an interactive run of a minute or two on a CPU (no bare string
# literals at module level here: Streamlit's "magic" would print them).
INTERACTIVE_DEFAULTS = {
    "train_requests": 20_000,
    "validation_requests": 5_000,
    "evaluation_requests": 20_000,
    "steps": 1000,
    "test_requests": 1024,
    "oracle_draws": 8,
    "points": 11,
    "bootstrap": 100,
    "drift_requests": 10_000,
}
DRIFT_DAYS = 4
LOGGERS = {
    "uniform": "Uniform exploration over the weight vectors",
    "production": "Production weights with epsilon-uniform exploration",
}


def settings_inputs() -> dict:
    """Run name, seed, logger and the budgets of logs, training, sweep and drift."""
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Logs and training")
        data = {
            "name": st.text_input("Run name", value="utility-app", key="run_name"),
            "seed": st.number_input("Seed", min_value=0, value=0, key="seed"),
            "logger": st.selectbox("Logging policy", list(LOGGERS), format_func=LOGGERS.__getitem__, key="logger"),
            "train_requests": st.number_input(
                "Training log requests", min_value=0, value=INTERACTIVE_DEFAULTS["train_requests"], step=1000,
                key="train_requests"),
            "validation_requests": st.number_input(
                "Validation log requests", min_value=0, value=INTERACTIVE_DEFAULTS["validation_requests"], step=1000,
                key="validation_requests"),
            "evaluation_requests": st.number_input(
                "Held-out log requests (off-policy estimates)", min_value=0,
                value=INTERACTIVE_DEFAULTS["evaluation_requests"], step=1000, key="evaluation_requests"),
            "steps": st.number_input("Q-network training steps", min_value=0, value=INTERACTIVE_DEFAULTS["steps"],
                                     step=100, key="steps"),
        }
    with right:
        st.subheader("Sweep and evaluation")
        data |= {
            "points": st.number_input("Lambda points on [0, 1]", min_value=0, value=INTERACTIVE_DEFAULTS["points"],
                                      key="points"),
            "test_requests": st.number_input(
                "Test requests (every policy scored exactly)", min_value=0,
                value=INTERACTIVE_DEFAULTS["test_requests"], step=256, key="test_requests"),
            "oracle_draws": st.number_input(
                "Users per context of the per-context oracle", min_value=0,
                value=INTERACTIVE_DEFAULTS["oracle_draws"], key="oracle_draws"),
            "bootstrap": st.number_input("Bootstrap resamples of the intervals", min_value=0,
                                         value=INTERACTIVE_DEFAULTS["bootstrap"], key="bootstrap"),
            "drift": st.checkbox(f"Drifting preferences ({DRIFT_DAYS} days, retrained daily)", value=False,
                                 key="drift"),
            "drift_requests": st.number_input(
                "Logged requests per drift day", min_value=0, value=INTERACTIVE_DEFAULTS["drift_requests"],
                step=1000, key="drift_requests"),
        }
    return data


def job_spec(settings: dict, output_dir: str | None) -> dict:
    """The job spec (``[job]``, ``[logs]``, ``[agent]``, ``[frontier]``, ``[drift]``) of the form."""
    steps = int(settings["steps"])
    return {
        "job": app_common.job_table(DOMAIN, settings, output_dir),
        "logs": {
            "logger": settings["logger"],
            "train_requests": int(settings["train_requests"]),
            "validation_requests": int(settings["validation_requests"]),
            "evaluation_requests": int(settings["evaluation_requests"]),
            "seed": int(settings["seed"]),
        },
        "agent": {"steps": steps, "log_every": max(1, min(250, steps)), "seed": int(settings["seed"])},
        "frontier": {
            "points": int(settings["points"]),
            "test_requests": int(settings["test_requests"]),
            "oracle_draws": int(settings["oracle_draws"]),
            "bootstrap": int(settings["bootstrap"]),
        },
        "drift": {"days": DRIFT_DAYS if settings["drift"] else 0,
                  "requests_per_day": int(settings["drift_requests"])},
    }


def show_front(report: UtilityReport, run_id: int) -> None:
    """The frontier chart of every method and the table of the learnt operating points."""
    st.subheader("The engagement-revenue front")
    if utility_views.is_estimated(report.front):
        st.caption(
            "A run on a request log: every point is a deployable operating policy whose values are doubly "
            "robust estimates on the held-out part of the log (hover for the 95% intervals). Lines sweep "
            "lambda from engagement (0) to revenue (1); dashed: Chebyshev scalarisation; the star is the "
            "production weights."
        )
    else:
        st.caption(
            "Every point is a deployable operating policy, scored exactly on the same fresh test requests "
            "of the simulator. Lines sweep lambda from engagement (0) to revenue (1); dashed: Chebyshev "
            "scalarisation; the star is today's production weights. Hover a point for its weights and, on the "
            "learnt points, the doubly robust off-policy estimate from the held-out logs with its 95% interval."
        )
    st.altair_chart(utility_views.frontier_chart(report.front, report.off_policy), width="stretch")
    st.markdown("**The learnt policy's operating points** (linear scalarisation)")
    st.caption("Exact values on the test requests beside the DR estimates from held-out logs (95% intervals)."
               if not utility_views.is_estimated(report.front) else
               "DR estimates on the held-out part of the log, with 95% intervals.")
    st.dataframe(
        utility_views.learnt_points(report.front, report.off_policy), hide_index=True, width="stretch",
        column_config={name: st.column_config.NumberColumn(format="%.4f")
                       for name in ("engagement", "revenue", "success", "hides", "dr_engagement", "dr_revenue")},
    )
    app_common.download_csv(report.front, "front", run_id)
    if not report.off_policy.empty:  # a run on a user's log has no off-policy check
        app_common.download_csv(report.off_policy, "off_policy", run_id)


def show_deployment(report: UtilityReport, run_id: int, url: str) -> None:
    """Choose a learnt operating point and record it as deployed; the deployed policy and the history."""
    st.subheader("Choose an operating point")
    points = utility_views.operating_points(report.front)
    if not points:
        st.info("This run has no learnt operating points to deploy.")
    else:
        point = st.selectbox("Operating point", points, format_func=utility_views.point_label, key="deploy_point")
        label, settings = utility_views.deployment(report.front, report.off_policy, point)
        kind = "Estimated" if utility_views.is_estimated(report.front) else "Exact"
        summary = (f"{kind} engagement {settings['engagement']:.4f}, revenue {settings['revenue']:.4f}, "
                   f"mean weights (save {settings['w_save']:.2f}, hide {settings['w_hide']:.2f}, "
                   f"revenue {settings['w_revenue']:.2f}).")
        st.caption(summary)
        deploy_form.deploy_controls(run_id=run_id, kind=DOMAIN.name, label=label, settings=settings, url=url)
    st.markdown(utility_views.deployed_text(deployments.deployed(DOMAIN.name, url=url)))
    history = utility_views.history_frame(deployments.history(DOMAIN.name, url=url))
    if not history.empty:
        st.markdown("**History of choices** (newest first)")
        st.dataframe(history, hide_index=True, width="stretch")


def show_segments(report: UtilityReport, run_id: int) -> None:
    """What the learnt policy changes per user segment at lambda 0.5, against production."""
    if report.segments.empty:
        return
    st.subheader("Per segment")
    lam = float(report.segments["lambda"].iloc[0]) if "lambda" in report.segments else 0.5
    st.caption(f"The learnt policy at lambda {lam:g} against the production weights, per user segment "
               "(exact on the test requests).")
    st.dataframe(utility_views.segment_view(report.segments), hide_index=True, width="stretch")
    st.altair_chart(utility_views.segment_chart(report.segments))
    st.altair_chart(
        utility_views.segment_weights_chart(report.segments, utility_views.production_weights(report.front)),
        width="stretch",
    )
    app_common.download_csv(report.segments, "segments", run_id)


def show_off_policy(report: UtilityReport, run_id: int) -> None:
    """Each estimator's estimate and interval against the exact value at the reference lambda."""
    if report.estimator_errors.empty:
        return
    st.subheader("Off-policy check")
    errors = report.estimator_errors
    lam = float(errors["lambda"].iloc[0]) if "lambda" in errors else 0.5
    st.caption(f"The learnt policy at lambda {lam:g} estimated from held-out logs by each estimator (95% "
               "bootstrap intervals) against its exact value on those requests (dashed red).")
    st.dataframe(utility_views.estimator_view(report.estimator_errors), hide_index=True, width="stretch")
    st.altair_chart(utility_views.estimator_chart(report.estimator_errors), width="stretch")
    app_common.download_csv(report.estimator_errors, "estimator_errors", run_id)


def show_drift(report: UtilityReport, run_id: int) -> None:
    """The drifting-preferences scenario, when the run simulated it."""
    if report.drift.empty:
        return
    page_skeleton.chart_section(
        "Drifting preferences",
        "Lambda utility per day (exact) of the policy trained on day 0 against the one retrained on the "
        "day before, and the same for the best global weights.",
        utility_views.drift_chart(report.drift), download=(report.drift, "drift", run_id),
    )


def show_open_bandit(report: UtilityReport, run_id: int) -> None:
    """The real click-versus-item-value front on the Open Bandit sample, beside the simulated one."""
    if report.obd_front.empty:
        return
    st.subheader("The real front on the Open Bandit sample")
    left_front = ("the front estimated on your log above (DR estimates)" if utility_views.is_estimated(report.front)
                  else "the simulated front above")
    st.caption("Right: ZOZOTOWN's Open Bandit sample (random logs). The click axis is an off-policy estimate "
               "(doubly robust, with 95% bootstrap intervals); item value (item_feature_0) is exact. "
               f"Left: {left_front}, for comparison.")
    left, right = st.columns(2)
    left.altair_chart(utility_views.frontier_chart(report.front, report.off_policy, height=360), width="stretch")
    right.altair_chart(utility_views.obd_chart(report.obd_front, height=360), width="stretch")
    st.dataframe(utility_views.obd_view(report.obd_front), hide_index=True, width="stretch")
    app_common.download_csv(report.obd_front, "obd_front", run_id)


def show_report(report: UtilityReport, run_id: int, url: str) -> None:
    """Draw a report: headline figures, front, deployment, segments, off-policy check, drift, Open Bandit."""
    app_common.results_header(run_id, utility_views.headline(report))
    show_front(report, run_id)
    show_deployment(report, run_id, url)
    show_segments(report, run_id)
    show_off_policy(report, run_id)
    show_drift(report, run_id)
    show_open_bandit(report, run_id)


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/tune:", intro=INTRO,
    settings=settings_inputs, job_spec=job_spec, show=show_report,
))
