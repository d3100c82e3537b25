"""Exponential OU scenarios: the forward curve is the one the process implies, set up in one call."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.prices import implied_forward
from decisions.energy.gas_storage.scenario import ExponentialOU, Scenario
from tests.helpers import assert_input_error

PROCESS = {"model": "exponential_ou", "speed": 5.0, "level": float(np.log(25.0)), "volatility": 0.6, "initial": 20.0}


def test_the_curve_is_the_process_expectation_and_the_horizon_a_year_by_default() -> None:
    scenario = Scenario.parse({"prices": PROCESS})
    assert scenario.horizon == 365 and scenario.forward_curve[0] == pytest.approx(20.0, rel=1e-12)
    with jax.enable_x64(True):
        simulated_view = np.asarray(implied_forward(to_params(scenario, jnp.float64)))
    np.testing.assert_allclose(scenario.forward_curve, simulated_view, rtol=1e-12)
    # far ahead the forward tends to exp(level + s^2 / 4k), the stationary mean
    far = ExponentialOU.model_validate(PROCESS).forward_curve(3_650)[-1]
    assert far == pytest.approx(np.exp(np.log(25.0) + 0.6**2 / (4 * 5.0)), rel=1e-9)


def test_horizon_days_sets_the_length_and_the_scenario_round_trips() -> None:
    scenario = Scenario.parse({"prices": PROCESS, "horizon_days": 90})
    assert scenario.horizon == 90
    assert Scenario.parse(scenario.model_dump(mode="json")) == scenario  # a stored config parses back


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        # a check across fields names the scenario, and the field first in its message (as elsewhere)
        ({"prices": PROCESS, "forward_curve": [20.0, 21.0, 22.0]}, "scenario", "forward_curve: with prices.model"),
        ({"prices": PROCESS, "horizon_days": 10, "forward_curve": [20.0, 21.0]}, "scenario", "horizon_days: 10 days"),
        ({"horizon_days": 30}, "scenario", "horizon_days: only with prices.model = 'exponential_ou'"),
        ({"prices": PROCESS, "horizon_days": 1}, "scenario.horizon_days", ""),
    ],
)
def test_a_curve_the_process_does_not_imply_or_a_stray_horizon_is_refused(spec: dict, field: str, words: str) -> None:
    assert_input_error(Scenario.parse, spec, field=field, words=words)
