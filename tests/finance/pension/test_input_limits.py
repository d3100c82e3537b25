"""Pension inputs beyond float32 or physical range are refused with one line naming the field."""

from __future__ import annotations

import pytest

from decisions.finance.pension.scenario import Scenario
from tests.helpers import assert_input_error

ACTIVE = {"age": 40.0, "count": 10.0, "salary": 50.0, "service": 10.0}


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"population": {"cohorts": [{**ACTIVE, "salary": 1e308}]}}, "scenario.population.cohorts.0.salary"),
        ({"population": {"cohorts": [{**ACTIVE, "count": 1e20}]}}, "scenario.population.cohorts.0.count"),
        ({"funding": {"initial_assets": 1e20}}, "scenario.funding.initial_assets"),
        ({"curve": {"ns_decay": 1e308}}, "scenario.curve.ns_decay"),
        ({"curve": {"speeds": [0.1, 1e20, 0.6]}}, "scenario.curve.speeds.1"),
        ({"curve": {"volatilities": [0.01, 0.01, 1e20]}}, "scenario.curve.volatilities.2"),
        ({"assets": {"bond_durations": [2.0, 1e20]}}, "scenario.assets.bond_durations.1"),
    ],
)
def test_huge_numbers_are_refused(data: dict, field: str) -> None:
    assert_input_error(Scenario.parse, data, field=field, words="out of range")


def test_nan_in_a_curve_list_is_refused() -> None:
    assert_input_error(Scenario.parse, {"curve": {"speeds": [0.1, float("nan"), 0.6]}}, field="scenario.curve.speeds.1",
                       words="nan is not finite")


def test_large_valid_scheme_is_accepted() -> None:
    scenario = Scenario.parse({"population": {"cohorts": [{**ACTIVE, "count": 1e6, "salary": 1e6}]}})
    assert scenario.population.cohorts[0].salary == 1e6
