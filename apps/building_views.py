"""Views of the building-energy page: a recorded run's tables, the week view and the explanation panel.

The page (``pages/2_Building_energy.py``) stays thin: it calls the ``show_*`` and form functions
here. Pure helpers (table shaping, week selection, the default "why" hour, Altair charts) take
the recorded tables and are tested directly; ``load_run`` reads a run back from the store and
``explain_seed`` reloads a trained policy from its msgpack artifact, re-simulates the held-out
window and explains it (both cached per run).

Pages import this module by name (``import building_views``), like ``app_common``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import altair as alt
import app_common
import pandas as pd
import streamlit as st

from decisions.errors import InputError, from_validation_error
from decisions.store import RunNotFoundError, RunRecord, RunStatus, error_line, get_run, list_runs

KIND = "building"
REFERENCE = "no_battery"
LP = "perfect_foresight"
BASELINES = ("no_battery", "rule_based", "perfect_foresight", "mpc")
AGENTS = ("ppo", "a2c", "sac", "dqn")
DISCRETE_AGENTS = ("dqn",)
WEEK = pd.Timedelta(days=7)
EVENING_HOURS = range(16, 22)
"""Clock hours (start of the hour) counted as "around 18:00" when picking the default hour to explain."""

SELECT_KEY = "building_run"
QUERY_KEY = "building_query_run"
CLI_COMMAND = "decisions run examples/building.toml"

INTERACTIVE = {"on_policy_steps": 200_000, "off_policy_steps": 20_000, "seeds": 1}
"""Budgets small enough for an interactive run of a few minutes on a CPU."""
LARGE = {"on_policy_steps": 1_000_000, "off_policy_steps": 200_000, "seeds": 3}
"""Budgets from which the form points to the command line instead."""

_AGENT_SEED = re.compile(r"^(?P<agent>[a-z0-9]+)_seed(?P<seed>\d+)$")
_LABELS = {
    "no_battery": "no battery",
    "rule_based": "rule-based",
    "perfect_foresight": "perfect-foresight LP",
    "mpc": "MPC (24 h)",
}
KPI_COLUMNS = (
    "cost",
    "emissions",
    "grid",
    "average_score",
    "saving_fraction_of_lp",
    "cost_usd",
    "saving_usd",
    "emissions_kg",
    "ramping",
    "one_minus_load_factor",
    "daily_peak",
    "annual_peak",
)
"""KPI table columns in display order (ratios to no battery first, then money and the grid KPIs)."""


# ----------------------------------------------------------------------------- names


def parse_agent_seed(controller: str) -> tuple[str, int] | None:
    """``"ppo_seed2"`` -> ``("ppo", 2)``; None for a baseline or any other name."""
    match = _AGENT_SEED.match(controller)
    if match is None or match["agent"] not in AGENTS:
        return None
    return match["agent"], int(match["seed"])


def controller_label(controller: str) -> str:
    """Readable name of a controller (``"ppo_seed0"`` -> ``"PPO seed 0"``)."""
    parsed = parse_agent_seed(controller)
    if parsed is not None:
        return f"{parsed[0].upper()} seed {parsed[1]}"
    return _LABELS.get(controller, controller.replace("_", " "))


def agent_seeds(controllers: Sequence[str]) -> list[str]:
    """The agent seeds among controller names, in their order."""
    return [c for c in controllers if parse_agent_seed(c) is not None]


def is_continuous(controller: str) -> bool:
    """Whether an agent seed acts continuously (gradient explanations apply); False for DQN and baselines."""
    parsed = parse_agent_seed(controller)
    return parsed is not None and parsed[0] not in DISCRETE_AGENTS


def explained_controller(kpis: pd.DataFrame, agents: pd.DataFrame) -> str | None:
    """The agent seed a job explained: the best seed of the continuous agent with the best mean share.

    Read from the ``explained_seed`` column of the agent summary; runs recorded before that column
    existed fall back to ``decisions.energy.building.job.run_job``'s rule.

    Args:
        kpis: KPI table indexed by controller (``saving_fraction_of_lp``).
        agents: agent summary indexed by agent (``saving_vs_lp_mean``), in training order.

    Returns:
        e.g. ``"ppo_seed1"``, or None when no continuous agent was trained.
    """
    if "explained_seed" in agents.columns:  # recorded by the job
        chosen = agents[agents["explained_seed"] >= 0]
        if len(chosen):
            return f"{chosen.index[0]}_seed{int(chosen['explained_seed'].iloc[0])}"
    continuous = [a for a in agents.index if a in AGENTS and a not in DISCRETE_AGENTS]
    if not continuous:
        return None
    best = max(continuous, key=lambda a: agents.loc[a, "saving_vs_lp_mean"])
    seeds = [c for c in agent_seeds(list(kpis.index)) if c.startswith(f"{best}_seed")]
    if not seeds:
        return None
    return max(seeds, key=lambda c: kpis.loc[c, "saving_fraction_of_lp"])


# ----------------------------------------------------------------------------- a recorded run


@dataclass(frozen=True)
class BuildingRun:
    """A recorded building run read back from the store.

    Attributes:
        record: the run record (config, metrics, artifacts).
        kpis: KPI table indexed by controller.
        agents: agent summary indexed by agent.
        hourly: long hourly table with a ``time`` column (start of each hour).
        importance: per feature group of the explained seed: IG and permutation importance.
        forecast_sensitivity: per forecast feature of the explained seed.
        rules: the explained seed's surrogate tree rules ("" when not explained).
        policies: agent seed -> path of its policy msgpack.
    """

    record: RunRecord
    kpis: pd.DataFrame
    agents: pd.DataFrame
    hourly: pd.DataFrame
    importance: pd.DataFrame
    forecast_sensitivity: pd.DataFrame
    rules: str = ""
    policies: dict[str, str] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, float]:
        """The run's latest metrics (those with a value)."""
        return {k: v for k, v in self.record.latest_metrics().items() if v is not None}

    @property
    def explained(self) -> str | None:
        """The agent seed whose explanation was recorded, or None."""
        if self.importance.empty:
            return None
        return explained_controller(self.kpis, self.agents)

    @property
    def controllers(self) -> list[str]:
        """Every controller of the KPI table, in its order."""
        return list(self.kpis.index)


def with_time(hourly: pd.DataFrame) -> pd.DataFrame:
    """Add ``time``: the start of each hour (CityLearn hour ``h`` of a date covers ``h-1:00`` to ``h:00``)."""
    frame = hourly.copy()
    frame["time"] = pd.to_datetime(frame["date"]) + pd.to_timedelta(frame["hour"] - 1, unit="h")
    return frame


def _check_record(record: RunRecord) -> None:
    if record.kind != KIND:
        raise InputError("run", f"run {record.id} is a {record.kind} run, not {KIND}")
    if record.status is not RunStatus.SUCCEEDED:
        raise InputError("run", f"run {record.id} has status {record.status.value}, not succeeded")


def load_run(run_id: int, url: str) -> BuildingRun:
    """Read a succeeded building run's tables, rules and policy paths back from the store.

    Raises:
        RunNotFoundError: no such run.
        InputError: not a succeeded building run, or its tables are gone.
    """
    record = get_run(run_id, url=url)
    _check_record(record)
    tables = app_common.csv_tables(record.artifacts)
    missing = [name for name in ("kpis", "agents", "hourly") if name not in tables]
    if missing:
        raise InputError("run", f"run {run_id} has no {', '.join(missing)} table on disk")
    paths = {a.name: a.path for a in record.artifacts}
    rules_path = Path(paths.get("surrogate_rules", ""))
    rules = rules_path.read_text().strip() if rules_path.is_file() else ""
    policies = {name.removeprefix("policy_"): p for name, p in paths.items() if name.startswith("policy_")}
    empty = pd.DataFrame(columns=["group", "importance", "std", "permutation", "permutation_std"])
    return BuildingRun(
        record=record,
        kpis=tables["kpis"].set_index("controller"),
        agents=tables["agents"].set_index("agent"),
        hourly=with_time(tables["hourly"]),
        importance=tables.get("importance", empty),
        forecast_sensitivity=tables.get("forecast_sensitivity", pd.DataFrame()),
        rules=rules,
        policies=policies,
    )


@st.cache_resource(max_entries=8, show_spinner="Reading the run…")
def cached_run(run_id: int, url: str) -> BuildingRun:
    """``load_run``, cached per run (a succeeded run does not change)."""
    return load_run(run_id, url)


# ----------------------------------------------------------------------------- tables


def kpi_view(kpis: pd.DataFrame) -> pd.DataFrame:
    """The KPI table for display: a readable ``controller`` column, then ``KPI_COLUMNS`` present."""
    columns = [c for c in KPI_COLUMNS if c in kpis]
    frame = kpis[columns].reset_index()
    frame.insert(0, "name", frame["controller"])
    frame["controller"] = frame["controller"].map(controller_label)
    return frame


def agent_view(agents: pd.DataFrame) -> pd.DataFrame:
    """One row per agent: family, share of the LP saving and cost ratio as ``mean ± std`` over seeds."""
    rows = []
    for name, row in agents.iterrows():
        rows.append(
            {
                "agent": str(name).upper(),
                "family": row["family"],
                "share of LP saving": f"{row['saving_vs_lp_mean']:.3f} ± {row['saving_vs_lp_std']:.3f}",
                "best seed": row["saving_vs_lp_best_seed"],
                "cost / no battery": f"{row['cost_mean']:.3f} ± {row['cost_std']:.3f}",
                "seeds": int(row["seeds"]),
                "train seconds": row["train_seconds"],
            }
        )
    return pd.DataFrame(rows)


def family_view(agents: pd.DataFrame) -> pd.DataFrame:
    """On-policy against off-policy: the best agent of each family by mean share of the LP saving."""
    rows = []
    for family, group in agents.groupby("family", sort=True):
        best = group["saving_vs_lp_mean"].idxmax()
        rows.append(
            {
                "family": family,
                "best agent": str(best).upper(),
                "share of LP saving": f"{group.loc[best, 'saving_vs_lp_mean']:.3f} ± "
                f"{group.loc[best, 'saving_vs_lp_std']:.3f}",
            }
        )
    return pd.DataFrame(rows, columns=["family", "best agent", "share of LP saving"])


def config_summary(config: Mapping[str, Any]) -> str:
    """One line describing a run's configuration (buildings, tariff, agents, budgets)."""
    scenario = config.get("scenario", {})
    agents = config.get("agents", {})
    tariff = scenario.get("tariff", {})
    buildings = scenario.get("buildings", [])
    homes = "district (17 homes)" if len(buildings) == 17 else "building " + ", ".join(map(str, buildings))
    names = ", ".join(str(n).upper() for n in agents.get("names", []))
    return (
        f"{homes} · tariff {tariff.get('kind', '?') if isinstance(tariff, Mapping) else tariff} · "
        f"{names} × {agents.get('seeds', '?')} seed(s) · on-policy {agents.get('on_policy_steps', 0):,} / "
        f"off-policy {agents.get('off_policy_steps', 0):,} steps"
    )


# ----------------------------------------------------------------------------- weeks and hours


def week_starts(hourly: pd.DataFrame) -> list[pd.Timestamp]:
    """Midnights starting consecutive 7-day weeks of the held-out window (the last may be partial)."""
    if hourly.empty:
        return []
    times = hourly["time"] if "time" in hourly else with_time(hourly)["time"]
    first, last = times.min().normalize(), times.max()
    return list(pd.date_range(first, last, freq="7D"))


def week_rows(hourly: pd.DataFrame, start: pd.Timestamp, controllers: Sequence[str]) -> pd.DataFrame:
    """Rows of some controllers in the week ``[start, start + 7 days)``, sorted by controller and time."""
    inside = (
        (hourly["time"] >= start) & (hourly["time"] < start + WEEK) & hourly["controller"].isin(controllers)
    )
    return hourly[inside].sort_values(["controller", "time"]).reset_index(drop=True)


def default_why_time(week: pd.DataFrame) -> pd.Timestamp | None:
    """The hour to explain first: the largest discharge around 18:00 of the week.

    Args:
        week: one controller's rows of a week (``time``, ``battery``; negative battery = discharge).

    Returns:
        The start of the evening hour (16:00-21:00) with the largest discharge; failing that the
        week's largest discharge; failing that 18:00 of the first day (or the first hour); None for
        an empty week.
    """
    if week.empty:
        return None
    discharging = week[week["battery"] < 0]
    evening = discharging[discharging["time"].dt.hour.isin(EVENING_HOURS)]
    for candidates in (evening, discharging):
        if not candidates.empty:
            return pd.Timestamp(candidates.loc[candidates["battery"].idxmin(), "time"])
    at_six = week[week["time"].dt.hour == 18]
    return pd.Timestamp((at_six if not at_six.empty else week)["time"].iloc[0])


def hour_index(hourly: pd.DataFrame, controller: str, time: pd.Timestamp) -> int:
    """Position of an hour in a controller's held-out trajectory (the index of its observation).

    Raises:
        InputError: the controller has no row at that time.
    """
    times = hourly.loc[hourly["controller"] == controller, "time"].sort_values().reset_index(drop=True)
    found = times.index[times == time]
    if len(found) == 0:
        raise InputError("hour", f"{controller} has no hour starting {time:%Y-%m-%d %H:%M}")
    return int(found[0])


# ----------------------------------------------------------------------------- charts


def cost_bars(kpis: pd.DataFrame) -> alt.Chart:
    """Cost / no battery per controller (lower is better; 1 is no battery), baselines and agents apart."""
    frame = kpis.reset_index()[["controller", "cost", "saving_fraction_of_lp"]].copy()
    frame["label"] = frame["controller"].map(controller_label)
    frame["kind"] = ["agent" if parse_agent_seed(c) else "baseline" for c in frame["controller"]]
    order = frame.sort_values("cost")["label"].tolist()
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", sort=order, title=None),
            x=alt.X("cost:Q", title="cost / no battery on the held-out months (lower is better)"),
            color=alt.Color("kind:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=[
                alt.Tooltip("label:N", title="controller"),
                alt.Tooltip("cost:Q", format=".4f"),
                alt.Tooltip("saving_fraction_of_lp:Q", title="share of LP saving", format=".3f"),
            ],
        )
        .properties(height=alt.Step(26))
    )


def _time_x() -> alt.X:
    return alt.X("time:T", title=None, axis=alt.Axis(format="%a %d %b %H:%M"))


def site_chart(week: pd.DataFrame) -> alt.LayerChart:
    """Load and PV (kWh, left axis) and the import price ($/kWh, right axis, steps) over a week.

    Args:
        week: one controller's rows of the week (load, PV and price do not depend on the controller).
    """
    energy = week[["time", "load", "pv"]].melt("time", var_name="series", value_name="kWh")
    energy["series"] = energy["series"].map({"load": "load", "pv": "PV"})
    lines = (
        alt.Chart(energy)
        .mark_line(strokeWidth=1.2)
        .encode(
            x=_time_x(),
            y=alt.Y("kWh:Q", title="kWh per hour"),
            color=alt.Color("series:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["time:T", "series:N", alt.Tooltip("kWh:Q", format=".3f")],
        )
    )
    price = (
        alt.Chart(week)
        .mark_line(interpolate="step-after", color="#e45756", strokeDash=[4, 2])
        .encode(
            x="time:T",
            y=alt.Y("price:Q", title="price $/kWh", scale=alt.Scale(zero=False)),
            tooltip=["time:T", alt.Tooltip("price:Q", format=".4f")],
        )
    )
    return alt.layer(lines, price).resolve_scale(y="independent").properties(height=220)


def _against_lp(
    week: pd.DataFrame, controller: str, column: str, title: str, marker: pd.Timestamp | None
) -> alt.Chart:
    frame = week[week["controller"].isin([controller, LP])][["time", "controller", column]].copy()
    frame["series"] = frame["controller"].map(controller_label)
    chart = (
        alt.Chart(frame)
        .mark_line(interpolate="step-after" if column == "battery" else "linear", strokeWidth=1.3)
        .encode(
            x=_time_x(),
            y=alt.Y(f"{column}:Q", title=title),
            color=alt.Color("series:N", title=None, legend=alt.Legend(orient="top")),
            strokeDash=alt.StrokeDash("series:N", legend=None),
            tooltip=["time:T", "series:N", alt.Tooltip(f"{column}:Q", format=".3f")],
        )
    )
    if marker is not None:
        rule = (
            alt.Chart(pd.DataFrame({"time": [marker]}))
            .mark_rule(color="grey", strokeDash=[2, 2])
            .encode(x="time:T")
        )
        chart = chart + rule
    return chart.properties(height=200)


def battery_chart(week: pd.DataFrame, controller: str, marker: pd.Timestamp | None = None) -> alt.Chart:
    """Battery energy per hour (+ charge, - discharge, kWh) of a controller and of the LP optimum."""
    return _against_lp(week, controller, "battery", "battery kWh (+ charge)", marker)


def soc_chart(week: pd.DataFrame, controller: str, marker: pd.Timestamp | None = None) -> alt.Chart:
    """State of charge after each hour of a controller and of the LP optimum."""
    return _against_lp(week, controller, "soc", "state of charge", marker)


def importance_chart(importance: pd.DataFrame) -> alt.Chart:
    """Per feature group: mean |integrated gradients| and permutation importance, side by side."""
    measures = {"importance": "integrated gradients", "permutation": "permutation"}
    present = [m for m in measures if m in importance]
    frame = importance[["group", *present]].melt("group", var_name="measure", value_name="value")
    frame["measure"] = frame["measure"].map(measures)
    order = importance.sort_values("importance", ascending=False)["group"].tolist()
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            y=alt.Y("group:N", sort=order, title=None),
            yOffset="measure:N",
            x=alt.X("value:Q", title="mean |effect on the action|"),
            color=alt.Color("measure:N", title=None, legend=alt.Legend(orient="top")),
            tooltip=["group:N", "measure:N", alt.Tooltip("value:Q", format=".4f")],
        )
        .properties(height=alt.Step(12))  # per bar: two bars per group
    )


def sensitivity_bars(sensitivity: pd.DataFrame) -> alt.Chart:
    """Per forecast feature: mean |d action / d feature| (bars), the signed mean gradient as a tooltip."""
    order = sensitivity.sort_values("importance", ascending=False)["feature"].tolist()
    return (
        alt.Chart(sensitivity)
        .mark_bar(color="#4c78a8")
        .encode(
            y=alt.Y("feature:N", sort=order, title=None, axis=alt.Axis(labelLimit=240)),
            x=alt.X("importance:Q", title="mean |d action / d forecast|"),
            tooltip=[
                "feature:N",
                alt.Tooltip("importance:Q", format=".4f"),
                alt.Tooltip("mean_gradient:Q", format=".4f"),
            ],
        )
        .properties(height=alt.Step(20))
    )


# ----------------------------------------------------------------------------- explanations


@dataclass(frozen=True)
class SeedExplanation:
    """A reloaded agent seed explained over the states it visited on the held-out window.

    Attributes:
        controller: the agent seed, e.g. ``"ppo_seed0"``.
        explanation: ``BuildingExplanation`` (importance, surrogate, observations, actions).
        action_fn: its scalar action function (first home's battery).
        num_buildings: homes of the scenario (the first home's action is explained).
    """

    controller: str
    explanation: Any
    action_fn: Callable[[Any], Any]
    num_buildings: int

    def importance(self) -> pd.DataFrame:
        """IG and permutation importance per feature group, as the job records them."""
        ex = self.explanation
        permutation = ex.permutation.rename(
            columns={"feature": "group", "importance": "permutation", "std": "permutation_std"}
        )[["group", "permutation", "permutation_std"]]
        return ex.importance.rename(columns={"feature": "group"}).merge(permutation, on="group")


def explain_seed(record: RunRecord, controller: str, policies: Mapping[str, str]) -> SeedExplanation:
    """Reload an agent seed, re-simulate the held-out window and explain its decisions there.

    Args:
        record: the run (its config rebuilds the job and scenario).
        controller: a continuous agent seed, e.g. ``"ppo_seed0"``.
        policies: agent seed -> policy msgpack path.

    Raises:
        InputError: not a continuous agent seed, or its policy file is gone.
    """
    import jax
    from pydantic import ValidationError

    from decisions.energy.building.agents import AgentName, agent_env
    from decisions.energy.building.explain import explain_controller
    from decisions.energy.building.job import BuildingJob
    from decisions.energy.building.scenario import Split
    from decisions.energy.building.simulate import agent_controller, simulate

    if not is_continuous(controller):
        raise InputError("controller", f"{controller} is not a continuous-action agent seed")
    path = policies.get(controller)
    if path is None or not Path(path).is_file():
        raise InputError(
            "policy", f"the policy file of {controller} is not on disk ({path or 'not recorded'})"
        )
    try:
        job = BuildingJob.model_validate(record.config)
    except ValidationError as exc:
        raise from_validation_error(exc, data=record.config) from None
    name = AgentName(parse_agent_seed(controller)[0])  # type: ignore[index]
    policy, params = name.module.load_policy(path)
    env, env_params = agent_env(job.scenario, name, Split.EVAL)
    trajectory = simulate(env, env_params, agent_controller(policy, params), job.scenario.eval_window())
    key = jax.random.PRNGKey(0)

    def action_fn(obs: jax.Array) -> jax.Array:
        return policy(params, obs, key)[0]

    explanation = explain_controller(
        action_fn,
        trajectory.observations,
        env.feature_names(),
        seed=job.seed,
        max_depth=job.evaluation.tree_depth,
    )
    return SeedExplanation(controller, explanation, action_fn, job.scenario.num_buildings)


@st.cache_resource(max_entries=4, show_spinner="Re-simulating the agent and explaining its decisions…")
def cached_explanation(run_id: int, url: str, controller: str) -> SeedExplanation:
    """``explain_seed`` cached per run and agent seed (a few seconds over ~2900 hours)."""
    run = cached_run(run_id, url)
    return explain_seed(run.record, controller, run.policies)


@st.cache_resource(max_entries=64, show_spinner="Attributing the decision…")
def cached_why(run_id: int, url: str, controller: str, index: int) -> tuple[list[str], Any]:
    """``BuildingExplanation.why`` at one visited hour, cached."""
    seed = cached_explanation(run_id, url, controller)
    return seed.explanation.why(seed.action_fn, index)


# ----------------------------------------------------------------------------- the new-run form


def parse_buildings(text: str) -> list[int] | str:
    """Building ids from the form: ``"1"``, ``"1, 4"`` or ``"district"``; anything else is passed on raw.

    The scenario validates the result, so a bad entry gets its one-line error naming
    ``scenario.buildings``.
    """
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    if parts and all(re.fullmatch(r"-?\d+", p) for p in parts):
        return [int(p) for p in parts]
    return text.strip()


def job_spec(form: Mapping[str, Any], output_dir: str | None) -> dict[str, Any]:
    """The job spec (``[job]``, ``[scenario]``, ``[agents]``, ``[evaluation]``) of the form's values."""
    job_table: dict[str, Any] = {"name": form["name"], "seed": int(form["seed"])}
    if output_dir is not None:
        job_table["output_dir"] = output_dir
    return {
        "job": job_table,
        "scenario": {
            "buildings": parse_buildings(form["buildings"]),
            "tariff": form["tariff"],
            "relative_reward": True,
        },
        "agents": {
            "names": list(form["agents"]),
            "seeds": int(form["seeds"]),
            "on_policy_steps": int(form["on_policy_steps"]),
            "off_policy_steps": int(form["off_policy_steps"]),
        },
        "evaluation": {"explain": bool(form["explain"]), "include_mpc": bool(form["include_mpc"])},
    }


def is_large(form: Mapping[str, Any]) -> bool:
    """Whether the form's budgets are beyond an interactive run (the CLI is the way for those)."""
    return any(int(form[k]) > LARGE[k] for k in LARGE)


def form_inputs() -> dict[str, Any]:
    """The new-run form's widgets; returns their values."""
    left, middle, right = st.columns(3)
    return {
        "name": left.text_input("Run name", value="building-app", key="b_name"),
        "buildings": middle.text_input(
            "Building id(s)",
            value="1",
            key="b_buildings",
            help='1-17, comma separated, or "district" (all 17)',
        ),
        "tariff": right.selectbox("Tariff", ["tou", "dynamic"], key="b_tariff"),
        "agents": left.multiselect("Agents", list(AGENTS), default=["ppo", "sac"], key="b_agents"),
        "seeds": middle.number_input(
            "Seeds per agent", min_value=1, value=INTERACTIVE["seeds"], key="b_seeds"
        ),
        "seed": right.number_input("Job seed", min_value=0, value=0, key="b_seed"),
        "on_policy_steps": left.number_input(
            "PPO / A2C steps per seed",
            min_value=1,
            value=INTERACTIVE["on_policy_steps"],
            step=10_000,
            key="b_on_policy_steps",
        ),
        "off_policy_steps": middle.number_input(
            "SAC / DQN steps per seed",
            min_value=1,
            value=INTERACTIVE["off_policy_steps"],
            step=5_000,
            key="b_off_policy_steps",
        ),
        "explain": right.checkbox("Explain the best continuous agent", value=True, key="b_explain"),
        "include_mpc": right.checkbox(
            "Also run the 24 h MPC baseline (slow)", value=False, key="b_include_mpc"
        ),
    }


def run_job(form: Mapping[str, Any], url: str) -> int | None:
    """Validate the form, run the job in a recorded run with a progress bar per task.

    Returns:
        The new run's id, or None when the form is invalid (one-line ``st.error``) or the run failed.
    """
    try:
        from decisions.energy.building import job as building_job

        job = building_job.prepare(job_spec(form, app_common.artifacts_dir(url)))
    except InputError as err:
        st.error(str(err))
        return None
    outcome = app_common.execute_with_status(job, building_job.execute, lambda run_id, url: None, url)
    return None if outcome is None else outcome[0]


def new_run_form(url: str, *, expanded: bool) -> None:
    """The "start a new run" expander; a finished run becomes the selected run."""
    with st.expander("Start a new run", expanded=expanded):
        form = form_inputs()
        st.caption(
            "Interactive budgets train in minutes on a CPU. Full budgets (5M on-policy and 200k off-policy "
            f"steps, 3 seeds per agent) took about 7 minutes on 2 cores: run them from the command line with `{CLI_COMMAND}`."
        )
        if is_large(form):
            st.warning(f"These budgets are long for an interactive run; consider `{CLI_COMMAND}` instead.")
        if st.button("Run", type="primary", key="b_run"):
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
    return bool(list_runs(kind=KIND, status=RunStatus.SUCCEEDED, limit=1, url=url))


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
    runs = {r.id: r for r in list_runs(kind=KIND, status=RunStatus.SUCCEEDED, limit=200, url=url)}
    requested = st.query_params.get("run")
    if requested and st.session_state.get(QUERY_KEY) != requested:
        st.session_state[QUERY_KEY] = requested
        try:
            record = get_run(int(requested), url=url)
            _check_record(record)
            runs.setdefault(record.id, record)
            st.session_state[SELECT_KEY] = record.id
        except (ValueError, RunNotFoundError, InputError) as err:
            st.error(f"run: cannot open run {requested!r}: {err}")
    selected = st.session_state.get(SELECT_KEY)
    if selected is not None and selected not in runs:
        try:
            record = get_run(int(selected), url=url)
            _check_record(record)
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
    st.caption(config_summary(run.record.config))
    metrics = run.metrics
    headline = [
        ("lp_saving_usd", "LP saving on held-out months", "${:,.0f}"),
        ("best_agent_saving_vs_lp", "Best agent: share of LP saving", "{:.3f}"),
        ("best_on_policy_saving_vs_lp", "Best on-policy", "{:.3f}"),
        ("best_off_policy_saving_vs_lp", "Best off-policy", "{:.3f}"),
        ("saving_vs_lp_rule_based", "Rule-based", "{:.3f}"),
    ]
    shown = [h for h in headline if h[0] in metrics]
    for col, (name, label, fmt) in zip(st.columns(max(len(shown), 1)), shown, strict=False):
        col.metric(label, fmt.format(metrics[name]))

    st.subheader("Controllers on the held-out months")
    st.caption(
        "KPIs divided by no battery (lower is better); share of LP saving: 1 is the perfect-foresight "
        "optimum."
    )
    ratios = {
        c: st.column_config.NumberColumn(c, format="%.3f")
        for c in KPI_COLUMNS
        if not c.endswith(("usd", "kg"))
    }
    money = {
        c: st.column_config.NumberColumn(c, format="%.2f") for c in ("cost_usd", "saving_usd", "emissions_kg")
    }
    st.dataframe(kpi_view(run.kpis), hide_index=True, width="stretch", column_config={**ratios, **money})
    st.altair_chart(cost_bars(run.kpis), width="stretch")

    if not run.agents.empty:
        st.subheader("Agents over seeds")
        st.dataframe(
            agent_view(run.agents),
            hide_index=True,
            width="stretch",
            column_config={
                "best seed": st.column_config.NumberColumn("best seed", format="%.3f"),
                "train seconds": st.column_config.NumberColumn("train seconds", format="%.0f"),
            },
        )
        st.dataframe(family_view(run.agents), hide_index=True, width="stretch")


def _week_label(start: pd.Timestamp) -> str:
    return f"{start:%a %d %b %Y} – {start + WEEK - pd.Timedelta(days=1):%a %d %b}"


def choose_week_and_controller(run: BuildingRun) -> tuple[pd.Timestamp, str] | None:
    """The week and controller selectors; the controller defaults to the explained agent seed."""
    starts = week_starts(run.hourly)
    options = [c for c in run.controllers if c != LP and c != REFERENCE] or run.controllers
    if not starts or not options:
        st.info("This run has no hourly table to show.")
        return None
    default = run.explained or next(iter(agent_seeds(options)), options[0])
    left, right = st.columns(2)
    week = left.selectbox(
        "Week of the held-out months", starts, format_func=_week_label, key=f"b_week_{run.record.id}"
    )
    controller = right.selectbox(
        "Controller (against the perfect-foresight LP)",
        options,
        index=options.index(default),
        format_func=controller_label,
        key=f"b_controller_{run.record.id}",
    )
    return pd.Timestamp(week), controller


def show_week(week: pd.DataFrame, controller: str, marker: pd.Timestamp | None) -> None:
    """Load, PV and price; the controller's battery and state of charge against the LP optimum."""
    own = week[week["controller"] == controller]
    st.altair_chart(site_chart(own), width="stretch")
    st.altair_chart(battery_chart(week, controller, marker), width="stretch")
    st.altair_chart(soc_chart(week, controller, marker), width="stretch")
    if not own.empty:
        bills = week.groupby("controller")["cost"].sum()
        st.caption(
            f"Bill this week: {controller_label(controller)} ${bills.get(controller, 0.0):,.2f}, "
            f"LP ${bills.get(LP, 0.0):,.2f}, no battery ${bills.get(REFERENCE, 0.0):,.2f}."
        )


def choose_hour(run: BuildingRun, week: pd.DataFrame, controller: str) -> pd.Timestamp | None:
    """Day and hour pickers in the chosen week, defaulting to the largest discharge around 18:00."""
    own = week[week["controller"] == controller]
    default = default_why_time(own)
    if default is None:
        return None
    days = sorted({t.normalize() for t in own["time"]})
    suffix = f"{run.record.id}_{controller}_{days[0]:%Y%m%d}"
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


def show_global(run: BuildingRun, controller: str, seed: SeedExplanation | None) -> None:
    """Global importance, forecast sensitivity and surrogate rules: recorded ones for the explained seed."""
    if controller == run.explained:
        importance, sensitivity, rules = run.importance, run.forecast_sensitivity, run.rules
        agreement = run.metrics.get("surrogate_fidelity_agreement")
        r2 = run.metrics.get("surrogate_fidelity_r2")
        st.caption(f"Recorded by the run for {controller_label(controller)}, the explained agent seed.")
    elif seed is not None:
        ex = seed.explanation
        importance, sensitivity, rules = (
            seed.importance(),
            ex.forecast_sensitivity,
            ex.surrogate.rules.strip(),
        )
        agreement, r2 = ex.surrogate.fidelity.agreement, ex.surrogate.fidelity.r2
        st.caption(f"Computed here for {controller_label(controller)} over the states it visited.")
    else:
        return
    left, right = st.columns(2)
    with left:
        st.markdown("**Global importance per feature group**")
        if not importance.empty:
            st.altair_chart(importance_chart(importance), width="stretch")
    with right:
        st.markdown("**Sensitivity to the forecasts**")
        if not sensitivity.empty:
            st.altair_chart(sensitivity_bars(sensitivity), width="stretch")
    st.markdown("**Surrogate decision tree**")
    cols = st.columns(2)
    if agreement is not None:
        cols[0].metric("Fidelity: same decision (held-out states)", f"{agreement:.1%}")
    if r2 is not None:
        cols[1].metric("Fidelity: R² of the action", f"{r2:.3f}")
    with st.expander("Rules of the surrogate tree", expanded=False):
        st.code(rules or "(no rules recorded)", language=None)


def show_why(run: BuildingRun, url: str, controller: str, time: pd.Timestamp) -> None:
    """The "Why?" box: the surrogate's rule path and the local attributions at one hour."""
    from decisions.core.explain.plots import plot_attribution

    index = hour_index(run.hourly, controller, time)
    lines, local = cached_why(run.record.id, url, controller, index)
    row = run.hourly[(run.hourly["controller"] == controller) & (run.hourly["time"] == time)].iloc[0]
    st.markdown(
        f"**Why did {controller_label(controller)} do this on {time:%a %d %b} at {time:%H:%M}?** "
        f"(battery {row['battery']:+.2f} kWh, SoC {row['soc']:.2f}, price ${row['price']:.3f}/kWh)"
    )
    text, chart = st.columns([3, 2])
    text.markdown("\n".join(f"- {line}" for line in lines))
    chart.pyplot(plot_attribution(local, top=10), width="stretch")


def show_explanation(run: BuildingRun, url: str, controller: str, week: pd.DataFrame) -> pd.Timestamp | None:
    """The explanation panel of an agent seed (continuous agents; DQN and baselines get a note).

    Returns:
        The hour explained in the "Why?" box (to mark on the week's charts), or None.
    """
    st.subheader("Explanation")
    if parse_agent_seed(controller) is None:
        st.info("Pick an agent seed above to explain its decisions (baselines follow fixed rules or the LP).")
        return None
    if not is_continuous(controller):
        st.info(
            "Gradient explanations (integrated gradients, forecast sensitivity, the 'why' box) are for "
            "continuous-action agents (PPO, A2C, SAC); DQN picks one of 11 discrete levels."
        )
        return None
    seed = None
    try:
        seed = cached_explanation(run.record.id, url, controller)
    except Exception as exc:  # a missing policy file or a config that no longer validates: one line
        reason = str(exc) if isinstance(exc, InputError) else error_line(exc)
        st.warning(f"Cannot re-simulate {controller_label(controller)}: {reason}")
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
        show_why(run, url, controller, time)
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
    week = week_rows(run.hourly, start, [controller, LP, REFERENCE])
    charts = st.container()  # drawn after the panel, to mark the explained hour
    time = show_explanation(run, url, controller, week)
    with charts:
        show_week(week, controller, time)
