"""Scenario validation (one-line errors naming the field), parameter building, and the liability
projection against hand-computed survival and cash flows."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from decisions.errors import InputError
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.baselines import FixedMixSpec
from decisions.finance.pension.liabilities import benefit_cash_flows, initial_liability, payroll, survival
from decisions.finance.pension.params import DT
from decisions.finance.pension.scenario import Scenario, default_correlation
from decisions.finance.pension.snapo_policy import PensionSnapoSettings
from tests.helpers import assert_input_error

NOT_PSD = [
    [1.0, 0.9, 0.9, 0.0, 0.0],
    [0.9, 1.0, -0.9, 0.0, 0.0],
    [0.9, -0.9, 1.0, 0.0, 0.0],
    [0.0, 0.0, 0.0, 1.0, 0.5],
    [0.0, 0.0, 0.0, 0.5, 1.0],
]


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"horizon_years": -5}, "scenario.horizon_years"),
        ({"horizon_years": 0}, "scenario.horizon_years"),
        ({"curve": {"tenors": [1.0, 0.5, 2.0], "rates": [0.01, 0.02, 0.03]}}, "scenario.curve.tenors"),
        ({"curve": {"tenors": [1.0, 1.0], "rates": [0.01, 0.02]}}, "scenario.curve.tenors"),
        ({"curve": {"tenors": [1.0, 2.0], "rates": [0.01]}}, "scenario.curve.rates"),
        ({"curve": {"volatilities": [0.01, -0.01, 0.01]}}, "scenario.curve.volatilities"),
        ({"assets": {"correlation": NOT_PSD}}, "scenario.assets.correlation"),
        ({"assets": {"correlation": [[1.0, 0.1], [0.1, 1.0]]}}, "scenario.assets.correlation"),
        ({"assets": {"bond_durations": [5.0, 2.0]}}, "scenario.assets.bond_durations"),
        ({"assets": {"risky": [{"name": "eq", "expected_return": 0.05, "volatility": -0.1}]}},
         "scenario.assets.risky.0.volatility"),
        ({"funding": {"contribution_min": 0.2, "contribution_max": 0.1}}, "scenario.funding.contribution_max"),
        ({"funding": {"penalty_weight": -1.0}}, "scenario.funding.penalty_weight"),
        ({"funding": {"initial_assets": -10.0}}, "scenario.funding.initial_assets"),
        ({"population": {"cohorts": [{"age": 40, "count": 10}]}}, "scenario.population.cohorts"),
        ({"population": {"mortality": {"scale": 0.0}}}, "scenario.population.mortality.scale"),
        ({"horizon": 10}, "scenario.horizon"),
    ],
)
def test_bad_inputs_raise_one_line_errors_naming_the_field(data: dict, field: str) -> None:
    error = assert_input_error(Scenario.parse, data, field=field)
    assert str(error).startswith(f"{field}: ")


def test_bad_settings_and_fixed_mixes_name_the_field() -> None:
    with pytest.raises(InputError) as err:
        PensionSnapoSettings.parse({"temperature_start": 0.01, "temperature_end": 0.1})
    assert err.value.field == "snapo.temperature_end"
    from decisions.errors import validate_input

    for weights, problem in (({"cash": -0.5, "equities": 1.5}, "weight"), ({"cash": 0.5}, "sum to 1")):
        with pytest.raises(InputError) as err:
            validate_input(FixedMixSpec, {"weights": weights, "contribution_rate": 0.1}, prefix="fixed_mix")
        assert err.value.field == "fixed_mix.weights" and problem in err.value.problem
    spec = FixedMixSpec(weights={"gold": 1.0}, contribution_rate=0.1)
    with pytest.raises(InputError) as err:
        spec.to_policy(to_params(Scenario(horizon_years=1)), PensionSnapoSettings())
    assert err.value.field == "fixed_mix.weights"


def test_default_correlation_is_positive_definite_and_parameters_have_the_right_shapes() -> None:
    for r in (0, 1, 2, 5):
        assert np.linalg.eigvalsh(np.asarray(default_correlation(r))).min() > 0
    scenario = Scenario()
    params = to_params(scenario)
    assert params.n_assets == 7 and params.asset_names[0] == "cash" and params.asset_names[-1] == "real_estate"
    assert params.key_rates.shape == (11,) and params.correlation.shape == (10,)
    assert params.months == 240 and params.projection_months >= 12 * (115 - 25)
    # default initial assets: the requested funding ratio of the simulator's L_0
    assert float(params.initial_assets) == pytest.approx(float(initial_liability(params)), rel=1e-6)
    richer = to_params(Scenario.parse({"funding": {"initial_funding_ratio": 1.2}}))
    assert float(richer.initial_assets) == pytest.approx(1.2 * float(params.initial_assets), rel=1e-6)


def test_survival_matches_the_integrated_force_of_mortality() -> None:
    params = to_params(Scenario(horizon_years=1))
    a, b, c = 0.00022, 2.7e-6, 1.124
    ages = np.linspace(50.0, 60.0, 100_001)
    mu = a + b * c**ages
    integral = float(np.sum(0.5 * (mu[1:] + mu[:-1]) * np.diff(ages)))
    assert float(survival(params, jnp.asarray(50.0), jnp.asarray(10.0))) == pytest.approx(math.exp(-integral), rel=1e-5)
    lighter = params.replace(mortality_scale=jnp.asarray(0.8))
    s1 = float(survival(params, jnp.asarray(70.0), jnp.asarray(15.0)))
    assert float(survival(lighter, jnp.asarray(70.0), jnp.asarray(15.0))) == pytest.approx(s1**0.8, rel=1e-5)


def test_cash_flows_of_one_pensioner_and_one_active() -> None:
    pensioner = Scenario.parse(
        {"horizon_years": 1, "population": {"indexation": 0.0, "cohorts": [{"age": 70, "count": 2, "pension": 12.0}]}}
    )
    params = to_params(pensioner)
    flows = np.asarray(benefit_cash_flows(params))
    t = np.arange(1, params.projection_months + 1) * DT
    alive = np.asarray(survival(params, jnp.asarray(70.0), jnp.asarray(t)))
    np.testing.assert_allclose(flows, 2 * 12.0 * DT * alive, rtol=1e-5)
    assert float(payroll(params).sum()) == 0.0

    active = Scenario.parse(
        {
            "horizon_years": 2,
            "population": {
                "salary_growth": 0.0,
                "indexation": 0.0,
                "cohorts": [{"age": 63.5, "count": 1, "salary": 60.0, "service": 20.0}],
            },
        }
    )
    params = to_params(active)
    flows = np.asarray(benefit_cash_flows(params))
    assert np.all(flows[:18] == 0.0) and flows[18] > 0  # retires after 1.5 years = 18 months
    pension = 60.0 * 21.5 / 60.0  # accrual 1/60 x (20 + 1.5) years x salary
    alive = float(survival(params, jnp.asarray(63.5), jnp.asarray(19 * DT)))
    assert flows[18] == pytest.approx(pension * DT * alive, rel=1e-5)
    pay = np.asarray(payroll(params))
    assert np.all(pay[18:] == 0.0) and pay[0] == pytest.approx(60.0 * DT, rel=1e-6)
