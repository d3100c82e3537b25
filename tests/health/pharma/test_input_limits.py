"""Pharma inputs beyond float32 or physical range are refused with one line naming the field."""

from __future__ import annotations

import pytest

from decisions.health.pharma.design_space import DesignSpaceSettings
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.snapo_policy import OptimiseSettings
from tests.helpers import assert_input_error


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"physics": {"reactor": {"k_main": 1e308}}}, "scenario.physics.reactor.k_main"),
        ({"physics": {"reactor": {"activation_main": 1e20}}}, "scenario.physics.reactor.activation_main"),
        ({"physics": {"crystalliser": {"nucleation_rate": 1e30}}}, "scenario.physics.crystalliser.nucleation_rate"),
        ({"physics": {"dryer": {"solvent_density": 1e20}}}, "scenario.physics.dryer.solvent_density"),
        ({"uncertainty": {"k_side": 1e20}}, "scenario.uncertainty.k_side"),
        ({"specs": {"residual_solvent_max": 1e20}}, "scenario.specs.residual_solvent_max"),
    ],
)
def test_huge_numbers_are_refused(data: dict, field: str) -> None:
    assert_input_error(Scenario.parse, data, field=field, words="out of range")


def test_tiny_rate_constant_that_rounds_to_zero_is_refused() -> None:
    assert_input_error(
        Scenario.parse, {"physics": {"reactor": {"k_side": 1e-60}}}, field="scenario.physics.reactor.k_side",
        words="rounds to 0",
    )


def test_settings_numbers_are_range_checked() -> None:
    assert_input_error(DesignSpaceSettings.parse, {"x_high": 1e308}, field="design_space.x_high", words="out of range")
    assert_input_error(OptimiseSettings.parse, {"penalty": 1e20}, field="optimise.penalty", words="out of range")
    assert_input_error(
        OptimiseSettings.parse, {"temperature_start": 1e308}, field="optimise.temperature_start", words="out of range"
    )


def test_defaults_are_within_the_limits() -> None:
    assert Scenario.parse({}).physics.crystalliser.nucleation_rate == 3.0e13
