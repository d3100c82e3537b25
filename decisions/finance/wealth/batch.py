"""Many clients planned in one run: the planner (loaded or trained once) plans every client, the exact
DP is solved beside it where its grid is small enough, and all are scored on each client's common paths.

Tables: ``clients`` (one row per client: expected utilities, the planner's share of the DP's),
``plans`` (one row per client and year: the planner's wealth percentiles, the portfolio it holds
most often and how often it funds the year's goals), ``goals`` (funding probabilities per client,
goal and option) and ``comparison`` (each policy over all clients).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from decisions.core.progress import Progress, silent
from decisions.finance.wealth.dp import MAX_GRID_NODES, option_sets, solve, wealth_grid
from decisions.finance.wealth.planner import Planner, plan
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.report import goal_probabilities, goal_table
from decisions.finance.wealth.rule import FundingRule, rule_policy
from decisions.finance.wealth.simulate import Paths, dp_policy, draw_normals
from decisions.finance.wealth.spec import Clients, EvaluationSettings, PlannerSettings, RuleSettings
from decisions.finance.wealth.study import PlannerRun, make_planner, score_policies

POLICIES = {"dp": "", "planner": "planner_vs_dp", "funding_rule": "rule_vs_dp"}
"""The policies of a client's comparison in table order (``dp`` where solved), with the ``clients``
column of each one's share of the DP's expected utility."""


@dataclass(frozen=True)
class ClientsStudy(PlannerRun):
    """What planning many clients found (see the module docstring for the tables); its figures: means
    over the clients, the planner's worst share of the DP, timings."""

    clients: pd.DataFrame
    plans: pd.DataFrame
    goals: pd.DataFrame
    comparison: pd.DataFrame


def run_clients(
    clients: Clients, planner_settings: PlannerSettings, rule_settings: RuleSettings,
    evaluation: EvaluationSettings, *, seed: int, progress: Progress = silent,
) -> ClientsStudy:
    """Plan every client with one planner, solve each DP that is small enough, score all policies on
    the client's common paths (drawn from ``seed`` plus the client's index)."""
    figures: dict[str, float] = {}
    planner, training = make_planner(planner_settings, clients.problems[0].market, seed, progress, figures)
    rule = FundingRule(margin=rule_settings.margin, r1=rule_settings.r1, r2=rule_settings.r2)
    rows, plans, goals = [], [], []
    count = len(clients.problems)
    for index, (name, problem) in enumerate(zip(clients.names, clients.problems, strict=True)):
        progress("planning clients", index, count)
        row, paths = _client(problem, planner, rule, evaluation, seed + index)
        rows.append({"client": name, **row})
        plans.append(_plan_rows(problem, paths).assign(client=name))
        sets = option_sets(problem)
        probabilities = {policy: goal_probabilities(problem, sets, p) for policy, p in paths.items()}
        goals.append(goal_table(problem, probabilities).assign(client=name))
    progress("planning clients", count, count)
    table = pd.DataFrame(rows)
    figures.update(_figures(table))
    return ClientsStudy(
        clients=table, plans=_first(pd.concat(plans, ignore_index=True), "client"),
        goals=_first(pd.concat(goals, ignore_index=True), "client"), comparison=_comparison(table),
        figures=figures, trained=None if training is None else (planner, training),
    )


def _client(problem: WealthProblem, planner: Planner, rule: FundingRule, evaluation: EvaluationSettings,
            seed: int) -> tuple[dict[str, float], dict[str, Paths]]:
    """One client's row of the ``clients`` table and each policy's simulated paths."""
    plan(planner, problem)  # compile (once for every client: the padded shapes are shared)
    answer = plan(planner, problem)
    row: dict[str, Any] = {"horizon": problem.horizon, "initial_wealth": problem.initial_wealth,
                           "goals": len(problem.goals), "plan_ms": answer.seconds * 1e3}
    policies = {"planner": answer.policy, "funding_rule": rule_policy(problem, rule)}
    grid = len(wealth_grid(problem))
    row["dp_states"] = grid + 1
    row["dp_solved"] = evaluation.dp and grid + 1 <= evaluation.dp_max_states and grid <= MAX_GRID_NODES
    if row["dp_solved"]:
        start = time.perf_counter()
        result = solve(problem)
        row["dp_ms"], row["dp_value"] = (time.perf_counter() - start) * 1e3, result.value
        policies = {"dp": dp_policy(result), **policies}
    paths, comparison = score_policies(problem, policies, draw_normals(seed, evaluation.paths, problem.horizon))
    for score in comparison.itertuples():
        row[f"expected_utility_{score.policy}"], row[f"stderr_{score.policy}"] = score.expected_utility, score.stderr
    if row["dp_solved"]:
        row["planner_vs_dp"] = row["expected_utility_planner"] / row["expected_utility_dp"]
        row["rule_vs_dp"] = row["expected_utility_funding_rule"] / row["expected_utility_dp"]
    return row, paths


def _plan_rows(problem: WealthProblem, paths: dict[str, Paths]) -> pd.DataFrame:
    """The planner's plan by year: cash flow, dearest goal cost due, wealth percentiles at the start of
    the year, its most frequent portfolio (-1 at the horizon), the share of paths that fund a goal of
    the year and the mean utility it gains that year (and the DP's portfolio, when solved)."""
    sets = option_sets(problem)
    flows = [*problem.flows(), 0.0]
    due = [0.0] * (problem.horizon + 1)
    for goal in problem.goals:
        due[goal.year] += max(o.cost for o in goal.options)
    planner = paths["planner"]
    wealth = np.percentile(planner.wealth, (5, 50, 95), axis=0)
    rows = []
    for t, opts in enumerate(sets):
        taken = planner.option[:, t]
        alive, chosen = taken >= 0, np.maximum(taken, 0)
        funds = np.array([any(option > 0 for option in choice) for choice in opts.choices])
        gained = np.where(alive, opts.utilities[chosen], 0.0)
        row = {"year": t, "cash_flow": flows[t], "goal_cost_due": due[t], "wealth_p5": wealth[0, t],
               "wealth_p50": wealth[1, t], "wealth_p95": wealth[2, t], "portfolio": _most_held(planner, t),
               "funded": float(np.mean(alive & funds[chosen])) if opts.goals else np.nan,
               "expected_utility": float(gained.mean())}
        if "dp" in paths:
            row["dp_portfolio"] = _most_held(paths["dp"], t)
        rows.append(row)
    return pd.DataFrame(rows)


def _most_held(paths: Paths, t: int) -> int:
    """The portfolio most paths hold in year ``t`` (-1 at the horizon or when every path is bankrupt)."""
    if t >= paths.portfolio.shape[1]:
        return -1
    held = paths.portfolio[:, t]
    held = held[held >= 0]
    return int(np.bincount(held).argmax()) if len(held) else -1


def _first(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """``frame`` with ``column`` moved to the front."""
    return frame[[column, *(c for c in frame.columns if c != column)]]


def _comparison(clients: pd.DataFrame) -> pd.DataFrame:
    """Each policy over the clients it was scored for: mean expected utility, the standard error of
    that mean, the number of clients and the mean share of the DP's expected utility."""
    rows = []
    for policy, share in POLICIES.items():
        column = f"expected_utility_{policy}"
        if column not in clients or clients[column].isna().all():
            continue
        scored = clients[clients[column].notna()]
        ratio = clients[share].mean() if share in clients else 1.0 if policy == "dp" else np.nan
        rows.append({
            "policy": policy, "expected_utility": float(scored[column].mean()),
            "stderr": float(np.sqrt((scored[f"stderr_{policy}"] ** 2).sum()) / len(scored)), "clients": len(scored),
            "vs_dp": float(ratio),
        })
    return pd.DataFrame(rows)


def _figures(clients: pd.DataFrame) -> dict[str, float]:
    """Means over the clients (the DP's over those it solved), the planner's worst share of the DP."""
    figures = {"clients": float(len(clients)), "clients_dp": float(clients["dp_solved"].sum()),
               "plan_ms": float(clients["plan_ms"].mean())}
    for policy in POLICIES:
        column = f"expected_utility_{policy}"
        if column in clients and clients[column].notna().any():
            figures[column] = float(clients[column].mean())
    if "planner_vs_dp" in clients and clients["planner_vs_dp"].notna().any():
        figures["planner_vs_dp"] = float(clients["planner_vs_dp"].mean())
        figures["planner_vs_dp_min"] = float(clients["planner_vs_dp"].min())
        figures["rule_vs_dp"] = float(clients["rule_vs_dp"].mean())
    return figures
