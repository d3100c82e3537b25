"""Random client problems, by family, for training the MetaRL planner and for held-out tests.

Families (``FAMILIES``):

``mixed`` (training) draws a family at random for each problem. Held-out problems come from
seeds disjoint from the training seeds (``HELD_OUT_SEED``), and ``problem_key`` lets a caller
check that no held-out problem appears in training (``client_keys``: the keys of many drawn
problems without building them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from decisions.finance.wealth.market import Market
from decisions.finance.wealth.problem import WealthProblem

FAMILIES: tuple[str, ...] = (
    "few_spread",
    "many_spread",
    "bunched",
    "partial",
    "infusions",
    "withdrawals",
    "long_horizon",
    "single_goal",
)
"""The named problem families (``mixed`` draws one of them per problem)."""

MAX_HORIZON = 30
"""Longest horizon drawn (and the planner's padding)."""
MAX_GOALS_PER_YEAR = 2
"""At most two goals share a year, so a year has at most 3 x 3 goal-option combinations."""
TRAIN_SEED = 1_000
"""Base seed of training problems."""
HELD_OUT_SEED = 9_000_000
"""Base seed of held-out problems (far from any training seed)."""


def _goal_years(rng: np.random.Generator, horizon: int, n_goals: int, bunched: bool) -> list[int]:
    """Years of ``n_goals`` goals in ``1 .. horizon``, at most two per year."""
    capacity = MAX_GOALS_PER_YEAR * horizon
    n_goals = min(n_goals, capacity)
    if not bunched:
        if n_goals <= horizon:
            return sorted(rng.choice(np.arange(1, horizon + 1), size=n_goals, replace=False).tolist())
        years = np.concatenate([np.arange(1, horizon + 1), rng.choice(np.arange(1, horizon + 1), n_goals - horizon, replace=False)])
        return sorted(years.tolist())
    runs = int(rng.integers(1, 4))
    years: list[int] = []
    counts = {y: 0 for y in range(1, horizon + 1)}
    while len(years) < n_goals:
        start = int(rng.integers(1, horizon + 1))
        length = int(rng.integers(2, 5))
        for y in range(start, min(start + length, horizon + 1)):
            if len(years) < n_goals and counts[y] < MAX_GOALS_PER_YEAR:
                years.append(y)
                counts[y] += 1
        runs -= 1
        if runs <= 0 and len(years) < n_goals:
            free = [y for y, c in counts.items() if c < MAX_GOALS_PER_YEAR]
            nearest = min(free, key=lambda y: min(abs(y - z) for z in years))
            years.append(nearest)
            counts[nearest] += 1
    return sorted(years)


def _flows(rng: np.random.Generator, horizon: int, kind: str, w0: float) -> list[float] | None:
    """Yearly cash flows: ``None``, early infusions, or later withdrawals."""
    if kind == "none":
        return None
    flows = np.zeros(horizon)
    if kind == "infusions":
        years = int(rng.integers(2, horizon + 1))
        flows[:years] = w0 * rng.uniform(0.03, 0.15)
    else:
        start = int(rng.integers(0, max(horizon - 1, 1)))
        flows[start:] = -w0 * rng.uniform(0.01, 0.05)
    return [float(round(f, 4)) for f in flows]


def sample_problem(rng: np.random.Generator, family: str, market: Market | None = None) -> WealthProblem:
    """Draw one client problem of ``family`` (one of ``FAMILIES`` or ``"mixed"``)."""
    return WealthProblem(**_client(rng, family), market=market or Market())


def _client(rng: np.random.Generator, family: str) -> dict[str, Any]:
    """One client of ``family``, drawn as ``sample_problem`` draws it: the problem's fields but the
    market, as ``problem_key`` reads them (not validated)."""
    if family == "mixed":
        family = str(rng.choice(FAMILIES))
    if family not in FAMILIES:
        raise ValueError(f"family: unknown {family!r}; choose one of {', '.join(FAMILIES)} or mixed")
    w0 = 100.0
    horizon = int(rng.integers(5, MAX_HORIZON + 1))
    n_goals = int(rng.integers(2, 9))
    partial_share, flow_kind, bunched = 0.0, "none", False
    if family == "few_spread":
        horizon, n_goals = int(rng.integers(5, 21)), int(rng.integers(1, 5))
    elif family == "many_spread":
        horizon, n_goals = int(rng.integers(15, MAX_HORIZON + 1)), int(rng.integers(8, 17))
    elif family == "bunched":
        horizon, n_goals, bunched = int(rng.integers(8, MAX_HORIZON + 1)), int(rng.integers(4, 11)), True
    elif family == "partial":
        n_goals, partial_share = int(rng.integers(3, 9)), 1.0
    elif family == "infusions":
        flow_kind = "infusions"
    elif family == "withdrawals":
        flow_kind = "withdrawals"
    elif family == "long_horizon":
        horizon, n_goals = int(rng.integers(25, MAX_HORIZON + 1)), int(rng.integers(4, 13))
        partial_share, flow_kind = 0.5, str(rng.choice(["none", "infusions", "withdrawals"]))
    if family == "single_goal":
        horizon = int(rng.integers(5, MAX_HORIZON + 1))
        growth = float(np.exp(0.07 * horizon))
        target = float(round(w0 * growth * rng.uniform(0.8, 1.4), 2))
        return {"horizon": horizon, "initial_wealth": w0, "cash_flows": None,
                "goals": [{"year": horizon, "options": [{"cost": target, "utility": 1.0}]}]}
    years = _goal_years(rng, horizon, n_goals, bunched)
    flows = _flows(rng, horizon, flow_kind, w0)
    resources = w0 + (sum(f for f in flows if f > 0) if flows else 0.0)
    weights = rng.uniform(0.5, 1.5, len(years))
    # Total cost of the full options, discounted at 6 % a year, relative to the client's resources.
    stretch = rng.uniform(0.5, 2.0)
    discount = np.exp(-0.06 * np.asarray(years))
    full = weights * stretch * resources / np.sum(weights * discount)
    goals = []
    for year, cost in zip(years, full, strict=True):
        utility = float(round(rng.uniform(10.0, 100.0), 2))
        options = [{"cost": float(round(cost, 2)), "utility": utility}]
        if rng.random() < partial_share:
            frac_cost, frac_util = rng.uniform(0.35, 0.7), rng.uniform(0.45, 0.85)
            options.insert(0, {"cost": float(round(cost * frac_cost, 2)), "utility": float(round(utility * frac_util, 2))})
        goals.append({"year": int(year), "options": options})
    return {"horizon": horizon, "initial_wealth": w0, "cash_flows": flows, "goals": goals}


def sample_problems(
    count: int, family: str = "mixed", *, seed: int = TRAIN_SEED, market: Market | None = None
) -> list[WealthProblem]:
    """``count`` problems of ``family``, problem ``i`` drawn from seed ``seed + i``."""
    return [sample_problem(np.random.default_rng(seed + i), family, market) for i in range(count)]


def held_out_problems(per_family: int, families: Sequence[str] = FAMILIES, *, market: Market | None = None) -> dict[str, list[WealthProblem]]:
    """``per_family`` held-out problems of each family (seeds disjoint from training)."""
    return {
        name: sample_problems(per_family, name, seed=HELD_OUT_SEED + 10_000 * k, market=market)
        for k, name in enumerate(families)
    }


def problem_key(problem: WealthProblem) -> str:
    """A digest of the problem's client data (horizon, wealth, flows, goals), market excluded."""
    return _key(problem.model_dump(include={"horizon", "initial_wealth", "cash_flows", "goals"}))


def client_keys(count: int, family: str = "mixed", *, seed: int = TRAIN_SEED) -> list[str]:
    """``problem_key`` of each problem ``sample_problems(count, family, seed=seed)`` draws, without
    building (validating) the problems."""
    return [_key(_client(np.random.default_rng(seed + i), family)) for i in range(count)]


def _key(client: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(client, sort_keys=True).encode()).hexdigest()[:16]
