"""Streamlit rendering of the building-energy page: the run picker, the new-run form and the run's sections.

The page (``pages/2_Building_energy.py``) stays thin: it calls the ``show_*`` and form functions
here. What they draw comes from ``building_data`` (the recorded run's tables, weeks and hours,
the form's job spec) and ``building_charts`` (Altair charts); the job, its re-simulation and
its explanations come from the domain's package API (``decisions.energy.building``). Reading a
run and explaining an agent seed are cached per run.

Pages import this module by name (``import building_views``), like ``app_common``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import app_common
import app_login
import building_charts as charts
import building_data as data
import pandas as pd
import streamlit as st
from building_data import BuildingRun, ControllerId

import decisions.energy.building as building
from decisions.energy.building import ExplainedSeed
from decisions.errors import InputError
from decisions.store import RunNotFoundError, RunRecord, RunStatus, error_line, get_run, list_runs

SELECT_KEY = "building_run"
QUERY_KEY = "building_query_run"
CLI_COMMAND = "decisions run examples/building.toml"


# ----------------------------------------------------------------------------- cached reads


@st.cache_resource(max_entries=8, show_spinner="Reading the run…")
def cached_run(run_id: int, url: str) -> BuildingRun:
    """``building_data.load_run``, cached per run (a succeeded run does not change)."""
    return data.load_run(run_id, url)


@st.cache_resource(max_entries=4, show_spinner="Re-simulating the agent and explaining its decisions…")
def cached_explanation(run_id: int, url: str, agent: str, seed: int) -> ExplainedSeed:
    """``building_data.explain_seed`` cached per run and agent seed (a few seconds over ~2900 hours)."""
    return data.explain_seed(cached_run(run_id, url), ControllerId(agent, seed))


@st.cache_resource(max_entries=64, show_spinner="Attributing the decision…")
def cached_why(run_id: int, url: str, agent: str, seed: int, index: int) -> tuple[list[str], Any]:
    """``ExplainedSeed.why`` at one visited hour, cached."""
    return cached_explanation(run_id, url, agent, seed).why(index)


# ----------------------------------------------------------------------------- the new-run form


def form_inputs() -> dict[str, Any]:
    """The new-run form's widgets; returns their values."""
    left, middle, right = st.columns(3)
    budget = data.INTERACTIVE
    return {
        "name": left.text_input("Run name", value="building-app", key="b_name"),
        "buildings": middle.text_input(
            "Building id(s)", value="1", key="b_buildings", help='1-17, comma separated, or "district" (all 17)'
        ),
        "tariff": right.selectbox("Tariff", ["tou", "dynamic"], key="b_tariff"),
        "agents": left.multiselect("Agents", list(data.AGENTS), default=["ppo", "sac"], key="b_agents"),
        "seeds": middle.number_input("Seeds per agent", min_value=1, value=budget["seeds"], key="b_seeds"),
        "seed": right.number_input("Job seed", min_value=0, value=0, key="b_seed"),
        "on_policy_steps": left.number_input(
            "PPO / A2C steps per seed", min_value=1, value=budget["on_policy_steps"], step=10_000,
            key="b_on_policy_steps",
        ),
        "off_policy_steps": middle.number_input(
            "SAC / DQN steps per seed", min_value=1, value=budget["off_policy_steps"], step=5_000,
            key="b_off_policy_steps",
        ),
        "explain": right.checkbox("Explain the best continuous agent", value=True, key="b_explain"),
        "include_mpc": right.checkbox("Also run the 24 h MPC baseline (slow)", value=False, key="b_include_mpc"),
    }


def run_job(form: Mapping[str, Any], url: str) -> int | None:
    """Validate the form, run the job in a recorded run with a progress bar per task.

    Returns:
        The new run's id, or None when the form is invalid (one-line ``st.error``) or the run failed.
    """
    return app_common.run_from_form(
        building.DOMAIN, lambda output_dir: data.job_spec(form, output_dir), lambda run_id, url: None, url
    )


def new_run_form(url: str, *, expanded: bool) -> None:
    """The "start a new run" expander; a finished run becomes the selected run."""
    with st.expander("Start a new run", expanded=expanded):
        form = form_inputs()
        st.caption(
            "Interactive budgets train in minutes on a CPU. Full budgets (5M on-policy and 200k off-policy "
            f"steps, 3 seeds per agent) took about 7 minutes on 2 cores: run them from the command line with `{CLI_COMMAND}`."
        )
        if data.is_large(form):
            st.warning(f"These budgets are long for an interactive run; consider `{CLI_COMMAND}` instead.")
        if st.button("Run", type="primary", key="b_run", disabled=app_login.blocked("run")):
            run_id = run_job(form, url)
            if run_id is not None:
                st.session_state[SELECT_KEY] = run_id


# ----------------------------------------------------------------------------- run selection


def _run_label(record: RunRecord) -> str:
    started = record.started_at or record.created_at
    when = f"{started.astimezone():%Y-%m-%d %H:%M}" if started else ""
    return f"#{record.id} {record.name} ({when})"


def has_runs(url: str) -> bool:
    """Whether the store holds at least one succeeded building run."""
    return bool(list_runs(kind=building.DOMAIN.name, status=RunStatus.SUCCEEDED, limit=1, url=url))


def open_run(run_id: int, url: str) -> BuildingRun | None:
    """The cached run, or None after a one-line error (its tables are gone, say)."""
    try:
        return cached_run(run_id, url)
    except (RunNotFoundError, InputError) as err:
        st.error(f"run: cannot open run {run_id}: {err}")
        return None


def select_run(url: str) -> int | None:
    """The recorded building run to show: ``?run=<id>`` when given, else the selectbox (newest first).

    Returns:
        The chosen run id, or None when no succeeded building run is recorded.
    """
    runs = {r.id: r for r in list_runs(kind=building.DOMAIN.name, status=RunStatus.SUCCEEDED, limit=200, url=url)}
    requested = st.query_params.get("run")
    if requested and st.session_state.get(QUERY_KEY) != requested:
        st.session_state[QUERY_KEY] = requested
        try:
            record = get_run(int(requested), url=url)
            data.check_record(record)
            runs.setdefault(record.id, record)
            st.session_state[SELECT_KEY] = record.id
        except (ValueError, RunNotFoundError, InputError) as err:
            st.error(f"run: cannot open run {requested!r}: {err}")
    selected = st.session_state.get(SELECT_KEY)
    if selected is not None and selected not in runs:
        try:
            record = get_run(int(selected), url=url)
            data.check_record(record)
            runs[record.id] = record
        except (RunNotFoundError, InputError):
            del st.session_state[SELECT_KEY]
    if not runs:
        st.info(
            f"No building run recorded yet: start one above, or from the command line with `{CLI_COMMAND}`."
        )
        return None
    ids = sorted(runs, reverse=True)
    chosen = st.selectbox("Recorded run", ids, format_func=lambda i: _run_label(runs[i]), key=SELECT_KEY)
    st.session_state[QUERY_KEY] = str(chosen)
    st.query_params["run"] = str(chosen)
    return int(chosen)


# ----------------------------------------------------------------------------- sections


def show_summary(run: BuildingRun) -> None:
    """Headline figures, the KPI table, the cost bars and the per-agent summary."""
    st.header(f"Run #{run.record.id}: {run.record.name}")
    st.caption(data.config_summary(run.record.config))
    metrics = run.metrics
    headline = [
        ("lp_saving_usd", "LP saving on held-out months", "${:,.0f}"),
        ("best_agent_saving_vs_lp", "Best agent: share of LP saving", "{:.3f}"),
        ("best_on_policy_saving_vs_lp", "Best on-policy", "{:.3f}"),
        ("best_off_policy_saving_vs_lp", "Best off-policy", "{:.3f}"),
        ("saving_vs_lp_rule_based", "Rule-based", "{:.3f}"),
    ]
    app_common.metric_row(app_common.format_figures(metrics, headline))

    ratios = dict.fromkeys((c for c in data.KPI_COLUMNS if not c.endswith(("usd", "kg"))), "%.3f")
    money = dict.fromkeys(("cost_usd", "saving_usd", "emissions_kg"), "%.2f")
    app_common.table_section(
        "Controllers on the held-out months", data.kpi_view(run.kpis), charts.cost_bars(run.kpis),
        caption="KPIs divided by no battery (lower is better); share of LP saving: 1 is the perfect-foresight "
                "optimum.",
        column_config=app_common.number_columns({**ratios, **money}),
    )

    if not run.agents.empty:
        st.subheader("Agents over seeds")
        formats = {"best seed": "%.3f", "train seconds": "%.0f"}
        app_common.show_table(data.agent_view(run.agents), app_common.number_columns(formats))
        app_common.show_table(data.family_view(run.agents))


def _week_label(start: pd.Timestamp) -> str:
    return f"{start:%a %d %b %Y} – {start + data.WEEK - pd.Timedelta(days=1):%a %d %b}"


def choose_week_and_controller(run: BuildingRun) -> tuple[pd.Timestamp, ControllerId] | None:
    """The week and controller selectors; the controller defaults to the explained agent seed."""
    starts = data.week_starts(run.hourly)
    controllers = data.controller_ids(run.kpis)
    options = [c for c in controllers if c not in (data.LP_ID, data.REFERENCE_ID)] or controllers
    if not starts or not options:
        st.info("This run has no hourly table to show.")
        return None
    default = run.explained or next((c for c in options if c.is_agent), options[0])
    left, right = st.columns(2)
    week = left.selectbox(
        "Week of the held-out months", starts, format_func=_week_label, key=f"b_week_{run.record.id}"
    )
    controller = right.selectbox(
        "Controller (against the perfect-foresight LP)",
        options,
        index=options.index(default),
        format_func=data.controller_label,
        key=f"b_controller_{run.record.id}",
    )
    return pd.Timestamp(week), controller


def show_week(week: pd.DataFrame, controller: ControllerId, marker: pd.Timestamp | None) -> None:
    """Load, PV and price; the controller's battery and state of charge against the LP optimum."""
    own = week[data.rows_of(week, controller)]
    st.altair_chart(charts.site_chart(own), width="stretch")
    st.altair_chart(charts.battery_chart(week, controller, marker), width="stretch")
    st.altair_chart(charts.soc_chart(week, controller, marker), width="stretch")
    if not own.empty:
        own_bill, lp, none = (week.loc[data.rows_of(week, c), "cost"].sum() for c in (controller, data.LP_ID, data.REFERENCE_ID))
        st.caption(
            f"Bill this week: {data.controller_label(controller)} ${own_bill:,.2f}, "
            f"LP ${lp:,.2f}, no battery ${none:,.2f}."
        )


def choose_hour(run: BuildingRun, week: pd.DataFrame, controller: ControllerId) -> pd.Timestamp | None:
    """Day and hour pickers in the chosen week, defaulting to the largest discharge around 18:00."""
    own = week[data.rows_of(week, controller)]
    default = data.default_why_time(own)
    if default is None:
        return None
    days = sorted({t.normalize() for t in own["time"]})
    suffix = f"{run.record.id}_{controller.name}_{days[0]:%Y%m%d}"
    left, right = st.columns(2)
    day = left.selectbox(
        "Day",
        days,
        index=days.index(default.normalize()),
        format_func=lambda d: f"{d:%a %d %b %Y}",
        key=f"b_why_day_{suffix}",
    )
    hour = right.selectbox(
        "Hour",
        list(range(24)),
        index=default.hour,
        format_func=lambda h: f"{h:02d}:00–{(h + 1) % 24:02d}:00",
        key=f"b_why_hour_{suffix}",
    )
    return pd.Timestamp(day) + pd.Timedelta(hours=int(hour))


def show_global(run: BuildingRun, controller: ControllerId, seed: ExplainedSeed | None) -> None:
    """Global importance, forecast sensitivity and surrogate rules: recorded ones for the explained seed."""
    if controller == run.explained:
        importance, sensitivity, rules = run.importance, run.forecast_sensitivity, run.rules
        agreement = run.metrics.get("surrogate_fidelity_agreement")
        r2 = run.metrics.get("surrogate_fidelity_r2")
        st.caption(f"Recorded by the run for {data.controller_label(controller)}, the explained agent seed.")
    elif seed is not None:
        ex = seed.explanation
        importance, sensitivity, rules = (
            seed.importance(),
            ex.forecast_sensitivity,
            ex.surrogate.rules.strip(),
        )
        agreement, r2 = ex.surrogate.fidelity.agreement, ex.surrogate.fidelity.r2
        st.caption(f"Computed here for {data.controller_label(controller)} over the states it visited.")
    else:
        return
    left, right = st.columns(2)
    with left:
        st.markdown("**Global importance per feature group**")
        if not importance.empty:
            st.altair_chart(charts.importance_chart(importance), width="stretch")
    with right:
        st.markdown("**Sensitivity to the forecasts**")
        if not sensitivity.empty:
            st.altair_chart(charts.sensitivity_bars(sensitivity), width="stretch")
    st.markdown("**Surrogate decision tree**")
    cols = st.columns(2)
    if agreement is not None:
        cols[0].metric("Fidelity: same decision (held-out states)", f"{agreement:.1%}")
    if r2 is not None:
        cols[1].metric("Fidelity: R² of the action", f"{r2:.3f}")
    with st.expander("Rules of the surrogate tree", expanded=False):
        st.code(rules or "(no rules recorded)", language=None)


def show_why(run: BuildingRun, url: str, seed: ExplainedSeed, time: pd.Timestamp) -> None:
    """The "Why?" box: the surrogate's rule path and the local attributions at one hour."""
    from decisions.core.explain.plots import plot_attribution

    controller = ControllerId(seed.agent, seed.seed)
    index = data.hour_index(run.hourly, controller, time)
    lines, local = cached_why(run.record.id, url, seed.agent, seed.seed, index)
    row = run.hourly[data.rows_of(run.hourly, controller) & (run.hourly["time"] == time)].iloc[0]
    st.markdown(
        f"**Why did {data.controller_label(controller)} do this on {time:%a %d %b} at {time:%H:%M}?** "
        f"(battery {row['battery']:+.2f} kWh, SoC {row['soc']:.2f}, price ${row['price']:.3f}/kWh)"
    )
    text, chart = st.columns([3, 2])
    text.markdown("\n".join(f"- {line}" for line in lines))
    chart.pyplot(plot_attribution(local, top=10), width="stretch")


def show_explanation(
    run: BuildingRun, url: str, controller: ControllerId, week: pd.DataFrame
) -> pd.Timestamp | None:
    """The explanation panel of an agent seed (continuous agents; DQN and baselines get a note).

    Returns:
        The hour explained in the "Why?" box (to mark on the week's charts), or None.
    """
    st.subheader("Explanation")
    if controller.seed is None or not controller.is_agent:
        st.info("Pick an agent seed above to explain its decisions (baselines follow fixed rules or the LP).")
        return None
    if not controller.is_continuous:
        st.info(
            "Gradient explanations (integrated gradients, forecast sensitivity, the 'why' box) are for "
            "continuous-action agents (PPO, A2C, SAC); DQN picks one of 11 discrete levels."
        )
        return None
    seed = None
    try:
        seed = cached_explanation(run.record.id, url, controller.controller, controller.seed)
    except Exception as exc:  # a missing policy file or a config that no longer validates: one line
        reason = str(exc) if isinstance(exc, InputError) else error_line(exc)
        st.warning(f"Cannot re-simulate {data.controller_label(controller)}: {reason}")
    show_global(run, controller, seed)
    if seed is None:
        return None
    st.markdown("**Why?** Pick an hour of the week (default: the largest discharge around 18:00).")
    time = choose_hour(run, week, controller)
    if time is None:
        return None
    if seed.num_buildings > 1:
        st.caption("The scenario has several homes: the first home's battery action is explained.")
    try:
        show_why(run, url, seed, time)
    except InputError as err:
        st.error(str(err))
    return time


def show_run(run: BuildingRun, url: str) -> None:
    """Every section of a recorded run: summary, week view, explanation panel."""
    show_summary(run)
    st.subheader("A week of the held-out months")
    chosen = choose_week_and_controller(run)
    if chosen is None:
        return
    start, controller = chosen
    week = data.week_rows(run.hourly, start, [controller, data.LP_ID, data.REFERENCE_ID])
    area = st.container()  # drawn after the panel, to mark the explained hour
    time = show_explanation(run, url, controller, week)
    with area:
        show_week(week, controller, time)
