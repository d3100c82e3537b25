"""Data of the building-energy page: a recorded run read back, its tables shaped, weeks and hours chosen.

No Streamlit calls: ``load_run`` reads a succeeded ``building`` run from the store, the other
helpers take its tables and are tested directly. A controller is a ``ControllerId``, the pair
``(controller, seed)`` the run's ``kpis`` and ``hourly`` tables carry as columns: a baseline's
name and no seed, or an agent's name and its seed. Re-simulating and explaining an agent seed is
the domain's ``replay_seed``; ``explain_seed`` only finds the run's job and policy for it.

Pages import this module by name (``import building_data``), like ``app_common``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import app_common
import pandas as pd

import decisions.energy.building as building
from decisions.errors import InputError
from decisions.store import RunRecord, RunStatus, get_run
from decisions.store.artifacts import local_copies

REFERENCE = "no_battery"
LP = "perfect_foresight"
AGENTS = tuple(a.value for a in building.AgentName)
WEEK = pd.Timedelta(days=7)
EVENING_HOURS = range(16, 22)
"""Clock hours (start of the hour) counted as "around 18:00" when picking the default hour to explain."""

INTERACTIVE = {"on_policy_steps": 200_000, "off_policy_steps": 20_000, "seeds": 1}
"""Budgets small enough for an interactive run of a few minutes on a CPU."""
LARGE = {"on_policy_steps": 1_000_000, "off_policy_steps": 200_000, "seeds": 3}
"""Budgets from which the form points to the command line instead."""

_LABELS = {"no_battery": "no battery", "rule_based": "rule-based", "perfect_foresight": "perfect-foresight LP"}
_LABELS["mpc"] = "MPC (24 h)"
KPI_COLUMNS = (
    *("cost", "emissions", "grid", "average_score", "saving_fraction_of_lp", "cost_usd", "saving_usd"),
    *("emissions_kg", "ramping", "one_minus_load_factor", "daily_peak", "annual_peak"),
)
"""KPI table columns in display order (ratios to no battery first, then money and the grid KPIs)."""


# ----------------------------------------------------------------------------- controllers


class ControllerId(NamedTuple):
    """A controller of a run: a baseline (``seed`` None) or one seed of an agent.

    Attributes:
        controller: the baseline's or the agent's name (``"rule_based"``, ``"ppo"``).
        seed: the agent seed, None for a baseline.
    """

    controller: str
    seed: int | None = None

    @property
    def is_agent(self) -> bool:
        """Whether this is an agent seed (not a baseline)."""
        return self.seed is not None and self.controller in AGENTS

    @property
    def is_continuous(self) -> bool:
        """Whether this is a seed of a continuous-action agent (gradient explanations apply)."""
        return self.is_agent and building.is_continuous(self.controller)

    @property
    def name(self) -> str:
        """The run's name of the controller (``"rule_based"``, ``"ppo_seed0"``: the policy file's stem)."""
        return self.controller if self.seed is None else building.seed_name(self.controller, self.seed)


LP_ID = ControllerId(LP)  # the perfect-foresight LP, every controller's yardstick
REFERENCE_ID = ControllerId(REFERENCE)  # no battery, the KPIs' reference


def controller_label(controller: ControllerId) -> str:
    """Readable name of a controller (``("ppo", 0)`` -> ``"PPO seed 0"``)."""
    if controller.is_agent:
        return f"{controller.controller.upper()} seed {controller.seed}"
    return _LABELS.get(controller.controller, controller.controller.replace("_", " "))


def controller_ids(table: pd.DataFrame) -> list[ControllerId]:
    """The ``ControllerId`` of each row of a table with ``controller`` and ``seed`` columns, in order."""
    return [
        ControllerId(str(c), None if pd.isna(s) else int(s))
        for c, s in zip(table["controller"], table["seed"], strict=True)
    ]


def rows_of(table: pd.DataFrame, controller: ControllerId) -> pd.Series:
    """Boolean mask of one controller's rows in a table with ``controller`` and ``seed`` columns."""
    seeds = table["seed"]
    same_seed = seeds.isna() if controller.seed is None else seeds.eq(controller.seed).fillna(False)
    return table["controller"].eq(controller.controller) & same_seed.astype(bool)


def explained_controller(kpis: pd.DataFrame, agents: pd.DataFrame) -> ControllerId | None:
    """The agent seed a job explained: the best seed of the continuous agent with the best mean share.

    Read from the ``explained_seed`` column of the agent summary; runs recorded before that column
    existed fall back to the job's rule.

    Args:
        kpis: KPI table (``controller``, ``seed``, ``saving_fraction_of_lp``).
        agents: agent summary indexed by agent (``saving_vs_lp_mean``), in training order.

    Returns:
        e.g. ``ControllerId("ppo", 1)``, or None when no continuous agent was trained.
    """
    if "explained_seed" in agents.columns:  # recorded by the job
        chosen = agents[agents["explained_seed"] >= 0]
        if len(chosen):
            return ControllerId(str(chosen.index[0]), int(chosen["explained_seed"].iloc[0]))
    continuous = [a for a in agents.index if a in AGENTS and building.is_continuous(a)]
    if not continuous:
        return None
    best = max(continuous, key=lambda a: agents.loc[a, "saving_vs_lp_mean"])
    seeds = kpis[kpis["controller"].eq(best) & kpis["seed"].notna()]
    if seeds.empty:
        return None
    return ControllerId(best, int(seeds.loc[seeds["saving_fraction_of_lp"].idxmax(), "seed"]))


# ----------------------------------------------------------------------------- a recorded run


@dataclass(frozen=True)
class BuildingRun:
    """A recorded building run read back from the store.

    Attributes:
        record: the run record (config, metrics, artifacts).
        kpis: KPI table, one row per controller (``controller``, ``seed``, KPIs).
        agents: agent summary indexed by agent.
        hourly: long hourly table (``controller``, ``seed``) with a ``time`` column (start of each hour).
        importance: per feature group of the explained seed: IG and permutation importance.
        forecast_sensitivity: per forecast feature of the explained seed.
        rules: the explained seed's surrogate tree rules ("" when not explained).
        artifacts: artifact name -> path (the saved policies among them).
    """

    record: RunRecord
    kpis: pd.DataFrame
    agents: pd.DataFrame
    hourly: pd.DataFrame
    importance: pd.DataFrame
    forecast_sensitivity: pd.DataFrame
    rules: str = ""
    artifacts: dict[str, str] = field(default_factory=dict)

    @property
    def metrics(self) -> dict[str, float]:
        """The run's latest metrics (those with a value)."""
        return {k: v for k, v in self.record.latest_metrics().items() if v is not None}

    @property
    def explained(self) -> ControllerId | None:
        """The agent seed whose explanation was recorded, or None."""
        if self.importance.empty:
            return None
        return explained_controller(self.kpis, self.agents)


def with_time(hourly: pd.DataFrame) -> pd.DataFrame:
    """Add ``time``: the start of each hour (CityLearn hour ``h`` of a date covers ``h-1:00`` to ``h:00``)."""
    frame = hourly.copy()
    frame["time"] = pd.to_datetime(frame["date"]) + pd.to_timedelta(frame["hour"] - 1, unit="h")
    return frame


def with_seed(table: pd.DataFrame, agents: pd.DataFrame) -> pd.DataFrame:
    """The table with ``controller`` and a nullable integer ``seed`` column.

    Runs recorded before the ``seed`` column named an agent seed by ``seed_name`` alone: its rows
    are matched against the names of the seeds the agent summary lists.
    """
    frame = table.copy()
    if "seed" not in frame:
        ids = {building.seed_name(a, s): (a, s) for a, n in agents["seeds"].items() for s in range(int(n))}
        pairs = [ids.get(c, (c, None)) for c in frame["controller"]]
        frame["controller"] = [c for c, _ in pairs]
        frame["seed"] = [s for _, s in pairs]
    frame["seed"] = frame["seed"].astype("Int64")
    return frame


def check_record(record: RunRecord) -> None:
    """Raise ``InputError`` unless the record is a succeeded building run."""
    if record.kind != building.DOMAIN.name:
        raise InputError("run", f"run {record.id} is a {record.kind} run, not {building.DOMAIN.name}")
    if record.status is not RunStatus.SUCCEEDED:
        raise InputError("run", f"run {record.id} has status {record.status.value}, not succeeded")


def load_run(run_id: int, url: str) -> BuildingRun:
    """Read a succeeded building run's tables, rules and artifact paths back from the store.

    Raises:
        RunNotFoundError: no such run.
        InputError: not a succeeded building run, or its tables are gone.
    """
    check_record(get_run(run_id, url=url))
    report, record = app_common.load_report(building.DOMAIN, run_id, url)
    return BuildingRun(
        record=record,
        kpis=with_seed(report.kpis, report.agents),
        agents=report.agents,
        hourly=with_time(with_seed(report.hourly, report.agents)),
        importance=report.importance if len(report.importance.columns) else pd.DataFrame(
            columns=list(building.IMPORTANCE_COLUMNS)),
        forecast_sensitivity=report.forecast_sensitivity,
        rules=report.rules.strip(),
        artifacts={name: str(path) for name, path in local_copies(record).items()},
    )


def explain_seed(run: BuildingRun, controller: ControllerId) -> building.ExplainedSeed:
    """Reload an agent seed of the run, re-simulate the held-out window and explain it there.

    Raises:
        InputError: not a continuous agent seed, its policy file is gone, or the run's
            configuration no longer validates.
    """
    if controller.seed is None or not controller.is_continuous:
        raise InputError("controller", f"{controller.name} is not a continuous-action agent seed")
    job = building.recorded_job(run.record.config)
    return building.replay_seed(job, controller.controller, controller.seed, run.artifacts)


def kpi_view(kpis: pd.DataFrame) -> pd.DataFrame:
    """The KPI table for display: ``name`` and ``seed``, a readable ``controller``, then ``KPI_COLUMNS`` present."""
    frame = kpis[["controller", "seed", *(c for c in KPI_COLUMNS if c in kpis)]].reset_index(drop=True)
    frame.insert(0, "name", frame.pop("controller"))
    frame.insert(2, "controller", [controller_label(c) for c in controller_ids(kpis)])
    return frame


def agent_view(agents: pd.DataFrame) -> pd.DataFrame:
    """One row per agent: family, share of the LP saving and cost ratio as ``mean ± std`` over seeds."""
    rows = [
        {
            "agent": str(name).upper(),
            "family": row["family"],
            "share of LP saving": f"{row['saving_vs_lp_mean']:.3f} ± {row['saving_vs_lp_std']:.3f}",
            "best seed": row["saving_vs_lp_best_seed"],
            "cost / no battery": f"{row['cost_mean']:.3f} ± {row['cost_std']:.3f}",
            "seeds": int(row["seeds"]),
            "train seconds": row["train_seconds"],
        }
        for name, row in agents.iterrows()
    ]
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


def week_rows(hourly: pd.DataFrame, start: pd.Timestamp, controllers: Sequence[ControllerId]) -> pd.DataFrame:
    """Rows of some controllers in the week ``[start, start + 7 days)``, sorted by controller, seed and time."""
    chosen = pd.Series(False, index=hourly.index)
    for controller in controllers:
        chosen |= rows_of(hourly, controller)
    inside = (hourly["time"] >= start) & (hourly["time"] < start + WEEK) & chosen
    return hourly[inside].sort_values(["controller", "seed", "time"]).reset_index(drop=True)


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


def hour_index(hourly: pd.DataFrame, controller: ControllerId, time: pd.Timestamp) -> int:
    """Position of an hour in a controller's held-out trajectory (the index of its observation).

    Raises:
        InputError: the controller has no row at that time.
    """
    times = hourly.loc[rows_of(hourly, controller), "time"].sort_values().reset_index(drop=True)
    found = times.index[times == time]
    if len(found) == 0:
        raise InputError("hour", f"{controller.name} has no hour starting {time:%Y-%m-%d %H:%M}")
    return int(found[0])


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
    """The job spec (``[job]``, ``[scenario]``, ``[agents]``, ``[evaluation]``) of the form's values.

    Only the settings the chosen agents use are sent (``prepare`` refuses the others): the steps
    of on-policy (PPO, A2C) and off-policy (SAC, DQN) agents each only when one is chosen, and
    ``explain`` true only with a continuous-action agent.
    """
    agents = [building.AgentName(a) for a in form["agents"]]
    table: dict[str, Any] = {"names": list(form["agents"]), "seeds": int(form["seeds"])}
    if any(a.on_policy for a in agents):
        table["on_policy_steps"] = int(form["on_policy_steps"])
    if not all(a.on_policy for a in agents):
        table["off_policy_steps"] = int(form["off_policy_steps"])
    return {
        "job": app_common.job_table(building.DOMAIN, form, output_dir),
        "scenario": {
            "buildings": parse_buildings(form["buildings"]),
            "tariff": form["tariff"],
            "relative_reward": True,
        },
        "agents": table,
        "evaluation": {
            "explain": bool(form["explain"]) and any(a.continuous for a in agents),
            "include_mpc": bool(form["include_mpc"]),
        },
    }


def is_large(form: Mapping[str, Any]) -> bool:
    """Whether the form's budgets are beyond an interactive run (the CLI is the way for those)."""
    return any(int(form[k]) > LARGE[k] for k in LARGE)
