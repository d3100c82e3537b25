"""Bad input gives one-line errors naming the field; good input builds the traced parameters."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from decisions.health.pharma.design_space import DesignSpaceSettings
from decisions.health.pharma.params import (
    CPP_NAMES,
    UNCERTAIN,
    constants,
    cpp_vector,
    spec_limits,
    uncertainty_cv,
)
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.snapo_policy import OptimiseSettings
from tests.helpers import assert_input_error


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"cpps": {"reaction_time": -1.0}}, "scenario.cpps.reaction_time", "greater than 0"),
        ({"cpps": {"dryer_time": 0.0}}, "scenario.cpps.dryer_time", "greater than 0"),
        (
            {"cpps": {"reactor_temperature": 450.0}},
            "scenario.cpps.reactor_temperature",
            "less than or equal to 200",
        ),
        ({"cpps": {"cooling_end_temperature": -300.0}}, "scenario.cpps.cooling_end_temperature", "-40"),
        ({"cpps": {"wash_ratio": -0.5}}, "scenario.cpps.wash_ratio", "greater than or equal to 0"),
        (
            {"specs": {"d50_min": 300.0, "d50_max": 100.0}},
            "scenario.specs",
            "d50_min (300.0) must not exceed",
        ),
        (
            {"ranges": {"dryer_temperature": {"low": 80.0, "high": 30.0}}},
            "scenario.ranges.dryer_temperature",
            "below",
        ),
        ({"physics": {"reactor": {"k_main": 0.0}}}, "scenario.physics.reactor.k_main", "greater than 0"),
        ({"cpps": {"cooling_end_temperature": 70.0}}, "scenario", "crystalliser start temperature"),
        ({"cpps": {"reactor_temp": 70.0}}, "scenario.cpps.reactor_temp", "Extra inputs"),
        ({"discretisation": {"reactor_segments": 0}}, "scenario.discretisation.reactor_segments", "greater"),
    ],
)
def test_bad_scenarios_name_the_field(data: dict, field: str, words: str) -> None:
    assert_input_error(Scenario.parse, data, field=field, words=words)


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"cpp_x": "pressure"}, "design_space.cpp_x", "reactor_temperature"),
        ({"cpp_y": "reactor_temperature"}, "design_space", "must differ"),
        ({"points": 0}, "design_space.points", "greater than or equal to 1"),
        ({"samples": 0}, "design_space.samples", "greater than or equal to 1"),
        ({"x_low": 95.0, "x_high": 60.0}, "design_space", "x_low: 95.0 exceeds x_high"),
        ({"cpp_y": "dryer_time", "y_low": -1.0, "y_high": 5.0}, "design_space", "a time must be positive"),
    ],
)
def test_bad_design_space_settings_name_the_field(data: dict, field: str, words: str) -> None:
    assert_input_error(DesignSpaceSettings.parse, data, field=field, words=words)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"steps": 0}, "optimise.steps"),
        ({"samples_per_step": -1}, "optimise.samples_per_step"),
        ({"temperature_start": 0.01, "temperature_end": 0.1}, "optimise.temperature_end"),
        ({"training_compliance": 1.5}, "optimise.training_compliance"),
        ({"learning_rate": float("nan")}, "optimise.learning_rate"),
    ],
)
def test_bad_optimise_settings_name_the_field(data: dict, field: str) -> None:
    assert_input_error(OptimiseSettings.parse, data, field=field)


def test_scenario_builds_traced_parameters() -> None:
    scenario = Scenario.parse({"cpps": {"reactor_temperature": 72.5}, "specs": {"impurity_max": 0.2}})
    x = cpp_vector(scenario)
    assert x.shape == (len(CPP_NAMES),) and x.dtype == jnp.float32
    assert float(x[CPP_NAMES.index("reactor_temperature")]) == 72.5
    assert float(spec_limits(scenario).impurity_max) == pytest.approx(0.2)
    c, cv = constants(scenario), uncertainty_cv(scenario)
    assert float(c.reactor.k_main) == pytest.approx(1.0)
    assert float(cv.crystalliser.nucleation_rate) == pytest.approx(0.2)
    assert float(cv.reactor.activation_main) == 0.0  # only the UNCERTAIN constants vary
    assert len(UNCERTAIN) == len(Scenario().uncertainty.model_fields)
