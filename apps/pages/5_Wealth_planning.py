"""Wealth planning page: a client's wealth, savings and goals; the MetaRL planner's plan beside the DP.

An adviser enters the horizon, the initial wealth, a yearly saving (or withdrawal) over a span
of years and the client's goals (each with a full and optionally a partial funding option). The
run goes through ``execute_domain``, so it is recorded in the run store like a CLI
run; the page then reopens the recorded report (``WealthReport.load``) and shows the expected utility of
the planner, the exact DP and the funding-ratio rule on common paths, each goal's funding
probability, the wealth fan and the plan (portfolio and goal option by year and wealth).
``?run=<id>`` opens the report of a recorded run.
"""

from __future__ import annotations

import app_common
import page_skeleton
import streamlit as st
import wealth_form
import wealth_views

from decisions.finance.wealth import DOMAIN

# What the page decides, under its title.
INTRO = (
    "Plan a client's savings and investments towards their goals: each year, which portfolio on the "
    "efficient frontier to hold and which goals to fund (fully, partly or not at all). The MetaRL "
    "planner plans in milliseconds; it is scored against the exact dynamic programme and a "
    "funding-ratio rule on the same Monte Carlo paths."
)

# The example client prefills the form (no bare string literals at module level here:
# Streamlit's "magic" would print them).
CLIENT = wealth_form.example_client()


def form_inputs() -> dict:
    """The client and evaluation inputs; returns the form for ``wealth_form.job_spec``."""
    left, right = st.columns(2, gap="large")
    with left:
        st.subheader("Client")
        data = {
            "horizon": st.number_input("Horizon (years)", min_value=1, max_value=200, value=CLIENT["horizon"],
                                       key="horizon"),
            "initial_wealth": st.number_input("Initial wealth", min_value=0.0, value=CLIENT["initial_wealth"],
                                              step=10_000.0, format="%.0f", key="initial_wealth"),
            "savings": st.number_input(
                "Yearly savings (negative: withdrawal)", value=CLIENT["savings"], step=1_000.0, format="%.0f",
                key="savings", help="Added at the start of each year from the first to the last year below.",
            ),
        }
        first, last = st.columns(2)
        data["savings_first"] = first.number_input("Savings from year", min_value=0, value=CLIENT["savings_first"],
                                                   key="savings_first")
        data["savings_last"] = last.number_input("Savings to year", min_value=0, value=CLIENT["savings_last"],
                                                 key="savings_last")
    with right:
        st.subheader("Planning and evaluation")
        data["name"] = st.text_input("Run name", value="wealth-app", key="run_name")
        data["seed"] = st.number_input("Seed", min_value=0, value=0, key="seed")
        data["paths"] = st.number_input("Monte Carlo paths", min_value=2, max_value=1_000_000, value=10_000,
                                        step=1_000, key="paths")
        data["dp"] = st.checkbox("Compare with the exact DP", value=True, key="dp",
                                 help="Solves the dynamic programme beside the planner (seconds; skipped when "
                                      "its grid is too large).")
    st.subheader("Goals")
    st.caption("One row per goal: the year it is due, the cost and utility of funding it fully and, "
               "optionally, of funding it partly (leave both partial cells blank for no partial option). "
               "Not funding a goal is always possible.")
    data["goals"] = st.data_editor(
        CLIENT["goals"],
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        key="goals",
        column_config={
            "year": st.column_config.NumberColumn("year", min_value=0, step=1, format="%d", required=True),
            "cost": st.column_config.NumberColumn("cost", min_value=0.0, format="%.0f", required=True),
            "utility": st.column_config.NumberColumn("utility", min_value=0.0, format="%.4g", required=True),
            "partial_cost": st.column_config.NumberColumn("partial cost", min_value=0.0, format="%.0f"),
            "partial_utility": st.column_config.NumberColumn("partial utility", min_value=0.0, format="%.4g"),
        },
    )
    return data


def show_comparison(report: wealth_views.RecordedWealthRun) -> None:
    """Expected utility of each policy on the same paths, with its standard error."""
    comparison = report.table("comparison")
    app_common.table_section(
        "Planner, exact DP and funding-ratio rule", wealth_views.comparison_view(comparison),
        wealth_views.comparison_chart(comparison),
        caption="Expected total utility of the goals funded, over common Monte Carlo paths; "
                "vs_dp is the share of the DP's expected utility.",
        download=(comparison, "comparison", report.run_id),
    )


def show_goals(report: wealth_views.RecordedWealthRun) -> None:
    """Each goal's probability of being funded at all, and by option, under each policy."""
    goals = report.table("goals")
    st.subheader("Goals funded")
    st.caption("Per goal, one bar per policy: the probability of funding the goal at all (1 - P(not funded)), "
               "split into its partial and full options; bankrupt paths fund nothing.")
    st.altair_chart(wealth_views.goal_chart(goals))
    st.dataframe(wealth_views.goal_summary(goals), hide_index=True, width="stretch",
                 column_config={label: st.column_config.ProgressColumn(label, min_value=0.0, max_value=1.0,
                                                                       format="percent")
                                for label in wealth_views.goal_summary(goals).columns[2:]})
    app_common.download_csv(goals, "goals", report.run_id)


def show_fan(report: wealth_views.RecordedWealthRun, goal_years: list[int]) -> None:
    """The wealth fan of a chosen policy, and the medians of all policies."""
    fan = report.table("wealth_fan")
    st.subheader("Wealth over the years")
    policies = wealth_views.fan_policies(fan)
    policy = st.selectbox("Policy", policies, format_func=wealth_views.policy_label, key="fan_policy")
    st.caption("Bands: 5th-95th and 25th-75th percentiles over the paths; line: median, dashed: mean; "
               "dotted: goal years (wealth at the start of the year, before goals are paid).")
    left, right = st.columns(2)
    left.altair_chart(wealth_views.fan_chart(fan, policy, goal_years), width="stretch")
    right.altair_chart(wealth_views.median_chart(fan, goal_years), width="stretch")
    app_common.download_csv(fan, "wealth_fan", report.run_id)


def show_plan(report: wealth_views.RecordedWealthRun, goal_years: list[int]) -> None:
    """The plan as year x wealth heat maps: portfolio, then goal option (planner beside the DP)."""
    plan = report.table("plan")
    span = wealth_views.wealth_range(report.table("wealth_fan"))
    st.subheader("The plan: portfolio by year and wealth")
    st.caption("Which frontier portfolio to hold at each year and wealth (0 safest, 14 riskiest), "
               "over the wealth the paths reach.")
    st.altair_chart(wealth_views.plan_heatmaps(plan, "portfolio", span))
    st.subheader("The plan: goal option by year and wealth")
    st.caption("Which of the year's goal options to take (ranked by cost: 0 funds nothing), in the goal years.")
    st.altair_chart(wealth_views.plan_heatmaps(plan, "option", span, years=goal_years or None))
    app_common.download_csv(plan, "plan", report.run_id)


def show_clients(report: wealth_views.RecordedWealthRun) -> None:
    """A many-clients run: each client's planner against the exact DP, and every client's plan to download."""
    clients, plans = report.table("clients"), report.table("plans")
    st.subheader("Clients")
    st.caption("One row per client: the planner's and the rule's share of the exact DP's expected utility "
               "(where the DP fits), planned in one run.")
    app_common.show_table(clients)
    app_common.download_csv(clients, "clients", report.run_id)
    if not plans.empty:
        st.caption("Each client's plan by year (wealth percentiles, the portfolio most held, goals funded).")
        app_common.download_csv(plans, "plans", report.run_id)


def show_report(report: wealth_views.RecordedWealthRun) -> None:
    """Draw a recorded run: headline figures, comparison, then the clients (many clients) or the
    goals, wealth fan and plan (one client)."""
    app_common.results_header(report.run_id, wealth_views.headline(report.metrics, report.table("comparison")))
    if not report.table("clients").empty:
        show_comparison(report)
        show_clients(report)
        return
    goals = report.table("goals")
    goal_years = sorted(set(int(y) for y in goals["year"])) if "year" in goals else []
    show_comparison(report)
    show_goals(report)
    show_fan(report, goal_years)
    show_plan(report, goal_years)


page_skeleton.run_page(page_skeleton.DomainPage(
    domain=DOMAIN, icon=":material/account_balance:", intro=INTRO,
    settings=form_inputs, job_spec=wealth_form.job_spec, show=lambda report, _run_id, _url: show_report(report),
    loader=wealth_views.load_run, button="Plan", button_key="plan",
))
