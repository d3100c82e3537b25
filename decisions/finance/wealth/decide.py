"""Wealth's decide contract (``kit.decide.DecideModule``): a client's year and wealth in, the goal
options to fund this year and the portfolio to hold out, from the policies a run saved
(``deployable``), without retraining or re-solving.

The planner answers a batch in compiled calls of ``CHUNK`` states; the DP plays its
tables at the nearest grid node (as ``simulate.dp_policy`` does); the funding
rule is its own vectorised function. A choice is made affordable as the simulation makes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.finance.wealth.deployable import CANDIDATES, Deployment, load_deployment
from decisions.finance.wealth.dp import OptionSet, option_sets
from decisions.finance.wealth.meta_env import encode, on_device
from decisions.finance.wealth.planner import decide as planner_decide
from decisions.finance.wealth.planner import target_options
from decisions.finance.wealth.problem import Money
from decisions.finance.wealth.rule import rule_policy
from decisions.finance.wealth.simulate import affordable_choice, nearest_state
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative

OUTCOME = ("the client's wealth at the start of next year, after this year's cash flow, goals and a year of "
           "returns (at the horizon: what is left after the last goals), in the run's money")
"""What an outcome's number is."""

CHUNK = 256
"""States of one compiled call of the planner (a batch is padded to a multiple)."""
Z95 = 1.959964
"""The standard normal's 97.5% quantile (the central 95% interval of next year's log wealth)."""


class ClientState(Settings):
    """The run's client at the start of a year, before the year's cash flow and goals."""

    section = "state"

    year: int = Field(ge=0, le=200, description="The year, 0 first (at most the run's horizon).")
    wealth: Money = Field(ge=0.0, description="Wealth now, before this year's cash flow, in the run's money.")


STATE_MODEL = ClientState


@dataclass(frozen=True)
class WealthPolicy:
    """A run's deployment with candidate ``name`` deployed and the best other one, ``alternative``."""

    saved: Deployment
    name: str
    alternative: str
    sets: tuple[OptionSet, ...]
    planner_arrays: Any
    at_horizon: np.ndarray


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's policies with their expected total utility on the run's common Monte Carlo paths."""
    del metrics
    comparison = pd.read_csv(run_folder / "comparison.csv").set_index("policy")
    return [Candidate(name, label, float(comparison.loc[name, "expected_utility"]), "expected_utility",
                      learnt=name == "planner", network=name == "planner") for name, label in CANDIDATES.items() if name in comparison.index]


def load(run_folder: Path, candidate: str) -> WealthPolicy:
    """The run's deployment, ``candidate`` deployed, warmed up on the example state.

    Raises:
        InputError: the candidate is not one the run offers, or the run saved no deployment.
    """
    candidate, alternative = deployed_and_alternative(candidates(run_folder, {}), candidate)
    saved = load_deployment(run_folder)
    encoded, _, _ = encode(saved.problem)
    policy = WealthPolicy(saved, candidate, alternative, option_sets(saved.problem), on_device(encoded),
                          target_options(saved.problem))
    decide(policy, [ClientState.parse(_example(saved))])
    return policy


def _planner(policy: WealthPolicy, years: np.ndarray, cash: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The planner's option and portfolio of each state, ``CHUNK`` states a compiled call (one shape)."""
    problem, planner = policy.saved.problem, policy.saved.planner
    mu_safe = float(problem.market.frontier()[0][0])
    parts = [planner_decide(planner, policy.planner_arrays, years[i : i + CHUNK],
                            cash[i : i + CHUNK] / problem.initial_wealth, mu_safe, min_batch=CHUNK)
             for i in range(0, len(years), CHUNK)]
    option, port = (np.concatenate(p) for p in zip(*parts, strict=True))
    last = policy.at_horizon[np.minimum(option, len(policy.at_horizon) - 1)]
    return np.where(years == problem.horizon, last, option), np.minimum(port, problem.market.n_portfolios - 1)


def _dp(policy: WealthPolicy, years: np.ndarray, states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The DP's tables at each state's grid node, as ``simulate.dp_policy`` plays them."""
    saved, horizon = policy.saved, policy.saved.problem.horizon
    port = np.where(years < horizon, saved.dp_portfolio[np.minimum(years, horizon - 1), states], 0)
    return np.maximum(saved.dp_option[years, states], 0), np.maximum(port, 0)


def _choices(policy: WealthPolicy, name: str, years: np.ndarray, wealth: np.ndarray, cash: np.ndarray,
             states: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Candidate ``name``'s affordable option and portfolio of each state."""
    if name == "planner":
        option, port = _planner(policy, years, cash)
    elif name == "dp":
        option, port = _dp(policy, years, states)
    else:
        option, port = np.zeros(len(years), np.int64), np.zeros(len(years), np.int64)
        rule = rule_policy(policy.saved.problem, policy.saved.rule)
        for t in np.unique(years):
            rows = np.flatnonzero(years == t)
            option[rows], port[rows] = rule(int(t), cash[rows], wealth[rows])
    for t in np.unique(years):
        rows = np.flatnonzero(years == t)
        option[rows] = affordable_choice(policy.sets[t], cash[rows], option[rows])
    return option, port


def _action(policy: WealthPolicy, t: int, option: int, port: int, alive: bool) -> dict[str, Any]:
    """The choice in plain JSON: each goal due this year with the option funded (0: not), the portfolio."""
    problem, opts = policy.saved.problem, policy.sets[t]
    goals = [] if not alive else [
        {"goal": g + 1, "option": k, "cost": problem.goals[g].options[k - 1].cost if k else 0.0,
         "utility": problem.goals[g].options[k - 1].utility if k else 0.0}
        for g, k in zip(opts.goals, opts.choices[option], strict=True) if g < len(problem.goals)]
    invest = alive and t < problem.horizon
    return {"goals": goals, "spend": float(opts.costs[option]) if alive else 0.0,
            "portfolio": int(port) if invest else None, "alive": bool(alive)}


def _option_labels(opts: OptionSet) -> list[str]:
    """Words for each option of a year: the goals funded and with which of their options."""
    return ["; ".join(f"goal {goal + 1} option {k}" for goal, k in zip(opts.goals, choice, strict=True) if k)
            or "fund nothing" for choice in opts.choices]


def _reasons(policy: WealthPolicy, years: np.ndarray, nodes: np.ndarray, option: np.ndarray) -> list[dict[str, Any]]:
    """Per state, the DP's expected utility to go after each allowed option (its best portfolio) and
    after each portfolio with the chosen option, at the state's grid node."""
    reasons: list[dict[str, Any]] = [{}] * len(years)
    ports = [f"portfolio {k}" for k in range(policy.saved.problem.market.n_portfolios)]
    for t in np.unique(years):
        rows = np.flatnonzero(years == t)
        q = policy.saved.q[t][:, :, nodes[rows]]
        labels = _option_labels(policy.sets[t])
        held = ports if t < policy.saved.problem.horizon else []
        best, chosen = q.max(axis=1).T.tolist(), q[option[rows], :, np.arange(len(rows))].tolist()
        for row, by_option, by_port in zip(rows.tolist(), best, chosen, strict=True):
            reasons[row] = {"option_values": {k: v for k, v in zip(labels, by_option, strict=True) if v > -math.inf},
                            "portfolio_values": {k: v for k, v in zip(held, by_port, strict=False) if v > -math.inf}}
    return reasons


def decide(policy: WealthPolicy, states: Sequence[ClientState]) -> list[Decision]:
    """The deployed policy's choice for each state, next year's expected wealth with its 95% interval,
    the policy's exact expected utility to go (``value``), the alternative's, and the DP's action values."""
    if not states:
        return []
    problem = policy.saved.problem
    years = np.asarray([s.year for s in states], np.int64)
    if years.max() > problem.horizon:
        raise InputError("state.year", f"must be at most the run's horizon of {problem.horizon} years")
    wealth = np.asarray([s.wealth for s in states], np.float64)
    cash = wealth + np.asarray(problem.flows() + [0.0])[years]
    alive = (wealth > 0) & (cash >= 0)
    nodes = nearest_state(policy.saved.wealth, wealth)
    option, port = _choices(policy, policy.name, years, wealth, cash, nodes)
    other, other_port = _choices(policy, policy.alternative, years, wealth, cash, nodes)
    mu, sigma = problem.market.frontier()
    costs = np.asarray([policy.sets[t].costs[g] for t, g in zip(years, option, strict=True)])
    post = np.where(alive, cash - costs, 0.0)
    invest = alive & (years < problem.horizon)
    drift, spread = np.where(invest, mu[port] - sigma[port] ** 2 / 2, 0.0), np.where(invest, sigma[port], 0.0)
    expected = post * np.exp(drift + spread**2 / 2)
    low, high = post * np.exp(drift - Z95 * spread), post * np.exp(drift + Z95 * spread)
    value = np.where(alive, policy.saved.values[policy.name][years, nodes], 0.0)
    other_value = np.where(alive, policy.saved.values[policy.alternative][years, nodes], 0.0)
    reasons = _reasons(policy, years, nodes, option)
    return [Decision(action=_action(policy, t, g, k, a), expected=float(expected[i]), value=float(value[i]),
                     interval=(float(low[i]), float(high[i])),
                     alternative={"policy": policy.alternative, "action": _action(policy, t, og, ok, a),
                                  "value": float(other_value[i])},
                     reasons=reasons[i])
            for i, (t, g, k, og, ok, a) in enumerate(zip(years.tolist(), option.tolist(), port.tolist(),
                                                         other.tolist(), other_port.tolist(), alive.tolist(),
                                                         strict=True))]


def _example(saved: Deployment) -> dict[str, Any]:
    return {"year": 0, "wealth": float(saved.problem.initial_wealth)}


def example_state(run_folder: Path) -> dict[str, Any]:
    """The run's client at the start: year 0 with the initial wealth (plain JSON)."""
    return json.loads(json.dumps(_example(load_deployment(run_folder))))
