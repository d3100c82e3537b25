"""Wealth inputs beyond float32 or physical range are refused with one line naming the field."""

from __future__ import annotations

import pytest

from decisions.finance.wealth.problem import WealthProblem
from tests.helpers import assert_input_error

BASE = {"horizon": 10, "initial_wealth": 100.0, "target": 200.0}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"initial_wealth": 1e308}, "problem.initial_wealth"),
        ({"initial_wealth": 1e20}, "problem.initial_wealth"),
        ({"target": 1e20}, "problem.target"),
        ({"cash_flows": [0.0] * 9 + [-1e20]}, "problem.cash_flows.9"),
        ({"goals": [{"year": 3, "options": [{"cost": 1e20, "utility": 1.0}]}]}, "problem.goals.0.options.0.cost"),
        ({"goals": [{"year": 3, "options": [{"cost": 1.0, "utility": 1e308}]}]}, "problem.goals.0.options.0.utility"),
        ({"market": {"means": [0.05, 1e20]}}, "problem.market.means.1"),
    ],
)
def test_huge_numbers_are_refused(data: dict, field: str) -> None:
    assert_input_error(WealthProblem.parse, {**BASE, **data}, field=field, words="out of range")


def test_nan_cash_flow_is_refused() -> None:
    assert_input_error(
        WealthProblem.parse, {**BASE, "cash_flows": [0.0] * 9 + [float("nan")]}, field="problem.cash_flows.9"
    )


def test_large_valid_problem_is_accepted() -> None:
    problem = WealthProblem.parse({**BASE, "initial_wealth": 1e12, "target": 1e12})
    assert problem.initial_wealth == 1e12
