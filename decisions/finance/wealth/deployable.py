"""What deciding a client's year needs from a wealth run, and reading it back.

A run whose DP was solved saves ``deployment.msgpack``: the client's problem, the funding rule's
parameters, the DP's wealth grid, its policy tables and its action values (``WealthResult.q``: the expected utility
of each goal option and portfolio, then optimal play) and, per candidate, its exact value-to-go on
the grid (``policy_values``); and its planner as ``deployed_planner.msgpack``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from flax import serialization
from pydantic import ValidationError

from decisions.errors import InputError
from decisions.finance.wealth.dp import WealthResult, option_sets, transitions
from decisions.finance.wealth.planner import Planner, load_planner, write_planner
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.rule import FundingRule
from decisions.finance.wealth.simulate import Policy, affordable_choice

FILE_STEM = "deployment"
"""The run's file of what deciding needs (``deployment.msgpack``)."""
PLANNER_STEM = "deployed_planner"
"""The run's planner, as deployed (``deployed_planner.msgpack``)."""

CANDIDATES = {"planner": "MetaRL planner (PPO, one network for every client)",
              "dp": "exact dynamic programming on the wealth grid",
              "funding_rule": "funding-ratio rule"}
"""The policies a run offers, by their name in its comparison table."""


def policy_values(problem: WealthProblem, wealth: np.ndarray, policy: Policy) -> np.ndarray:
    """The exact expected utility to go of ``policy`` from each year ``0 .. T`` and grid state
    (``wealth``: the DP's states, 0 bankrupt), played as ``simulate`` plays it: ``(T + 1, S)``."""
    mu, sigma = problem.market.frontier()
    flows, sets, horizon = problem.flows() + [0.0], option_sets(problem), problem.horizon
    log_grid = np.log(wealth[1:])
    values = np.zeros((horizon + 1, len(wealth)))
    for t in range(horizon, -1, -1):
        cash = wealth + flows[t]
        alive = (wealth > 0) & (cash >= 0)
        choice, port = policy(t, cash, wealth)
        choice = affordable_choice(sets[t], cash, choice)
        post = np.where(alive, cash - sets[t].costs[choice], 0.0)
        value = sets[t].utilities[choice].astype(float)
        if t == horizon and problem.target is not None:
            value = value + (post >= problem.target)
        elif t < horizon:
            k = np.clip(np.asarray(port, np.int64), 0, len(mu) - 1)
            for chosen in np.unique(k):
                rows = np.flatnonzero(k == chosen)
                moves = transitions(post[rows], log_grid, mu[chosen : chosen + 1], sigma[chosen : chosen + 1])[0]
                value[rows] += moves @ values[t + 1]
        values[t] = np.where(alive, value, 0.0)
    return values


def deployment(problem: WealthProblem, rule: FundingRule, planner: Planner, solved: WealthResult,
               policies: Mapping[str, Policy]) -> dict[str, Any]:
    """What a run saves for deciding (see the module's docstring): ``solved`` is the problem's DP,
    ``policies`` the candidates by name."""
    return {
        "problem": problem.model_dump(mode="json"),
        "rule": {"margin": rule.margin, "r1": rule.r1, "r2": rule.r2},
        "wealth": solved.wealth,
        "dp_option": solved.goal_option,
        "dp_portfolio": solved.portfolio,
        "q": {str(t): np.asarray(q, np.float32) for t, q in enumerate(solved.q)},
        "values": {name: policy_values(problem, solved.wealth, p) for name, p in policies.items()},
        "planner": planner,
    }


def save_deployment(directory: Path, found: dict[str, Any]) -> dict[str, Path]:
    """Write ``deployment(...)``: the planner with its own writer, the rest as msgpack (no pickle)."""
    planner = directory / f"{PLANNER_STEM}.msgpack"
    write_planner(planner, found["planner"], {})
    path = directory / f"{FILE_STEM}.msgpack"
    path.write_bytes(serialization.msgpack_serialize({k: v for k, v in found.items() if k != "planner"}))
    return {FILE_STEM: path, PLANNER_STEM: planner}


@dataclass(frozen=True)
class Deployment:
    """A run's deployment read back: the problem, the rule, the grid, the DP's tables (``WealthResult``'s
    ``goal_option`` and ``portfolio``) and action values per year (``(G_t, K, S)``, ``-inf`` where not
    allowed), each candidate's value-to-go and the planner."""

    problem: WealthProblem
    rule: FundingRule
    wealth: np.ndarray
    dp_option: np.ndarray
    dp_portfolio: np.ndarray
    q: tuple[np.ndarray, ...]
    values: Mapping[str, np.ndarray]
    planner: Planner


def load_deployment(folder: Path) -> Deployment:
    """Read back what ``save_deployment`` wrote into a run's folder.

    Raises:
        InputError: (``run``) the run saved none (recorded before decisions could be taken, or its
            DP was not solved), or it is unreadable.
    """
    path, planner = folder / f"{FILE_STEM}.msgpack", folder / f"{PLANNER_STEM}.msgpack"
    if not path.is_file() or not planner.is_file():
        raise InputError("run", "it saved no deployment (recorded before decisions could be taken, "
                                "or its DP grid was too large to solve)")
    try:
        saved = serialization.msgpack_restore(path.read_bytes())
        problem = WealthProblem.model_validate(saved["problem"])
        q = tuple(np.asarray(saved["q"][str(t)]) for t in range(problem.horizon + 1))
        tables = (np.asarray(saved[k]) for k in ("wealth", "dp_option", "dp_portfolio"))
        return Deployment(problem, FundingRule(**saved["rule"]), *tables, q,
                          {k: np.asarray(v) for k, v in saved["values"].items()}, load_planner(planner))
    except (ValidationError, KeyError, ValueError, TypeError) as exc:
        raise InputError("run", f"its saved deployment is unreadable ({type(exc).__name__})") from None
