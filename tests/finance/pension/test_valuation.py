"""Cash-flow valuation against closed forms: zero-coupon bond and level annuity on a flat curve,
key-rate durations from linear interpolation weights, second order through JAX, and the scheme's
liability against the simulator's bucketed value."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.finance.pension import valuation as val
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.liabilities import initial_liability
from decisions.finance.pension.scenario import Scenario

FLAT_TENORS = [1.0, 10.0, 30.0]
R = 0.03


def _flat(rate: float = R) -> list[float]:
    return [rate] * len(FLAT_TENORS)


def test_zero_coupon_bond_closed_forms() -> None:
    with jax.enable_x64(True):
        cf, t = np.array([100.0]), np.array([7.0])
        risk = val.curve_risk(cf, t, FLAT_TENORS, jnp.asarray(_flat(), jnp.float64))
        pv = 100.0 * math.exp(-R * 7.0)
        assert risk.present_value == pytest.approx(pv, rel=1e-12)
        assert risk.modified_duration == pytest.approx(7.0, rel=1e-12)
        assert risk.macaulay_duration == pytest.approx(7.0, rel=1e-12)
        assert risk.convexity == pytest.approx(49.0, rel=1e-12)
        assert risk.dv01 == pytest.approx(7.0 * pv * 1e-4, rel=1e-12)
        # 7y lies between the 1y and 10y knots with weights 1/3 and 2/3
        np.testing.assert_allclose(risk.key_rate_durations, [7.0 / 3.0, 14.0 / 3.0, 0.0], rtol=1e-12, atol=1e-14)
    assert jnp.zeros(1).dtype == jnp.float32  # x64 did not leak


def test_level_annuity_closed_forms() -> None:
    n, c = 240, 5.0  # monthly payments for 20 years
    times = np.arange(1, n + 1) / 12.0
    v = math.exp(-R / 12.0)
    pv = c * v * (1 - v**n) / (1 - v)
    sum_j_vj = v * (1 - (n + 1) * v**n + n * v ** (n + 1)) / (1 - v) ** 2
    duration = sum_j_vj / (v * (1 - v**n) / (1 - v)) / 12.0
    conv = float(np.sum(times**2 * np.exp(-R * times)) / np.sum(np.exp(-R * times)))
    with jax.enable_x64(True):
        risk = val.curve_risk(np.full(n, c), times, FLAT_TENORS, jnp.asarray(_flat(), jnp.float64))
    assert risk.present_value == pytest.approx(pv, rel=1e-12)
    assert risk.macaulay_duration == pytest.approx(duration, rel=1e-12)
    assert risk.modified_duration == pytest.approx(duration, rel=1e-12)
    assert risk.convexity == pytest.approx(conv, rel=1e-12)
    assert risk.dv01 == pytest.approx(duration * pv * 1e-4, rel=1e-12)
    assert float(np.sum(risk.key_rate_durations)) == pytest.approx(duration, rel=1e-12)


def test_second_order_matches_the_key_rate_hessian_and_a_shifted_revaluation() -> None:
    tenors = [0.5, 2.0, 5.0, 10.0, 30.0]
    with jax.enable_x64(True):
        rates = jnp.asarray([0.02, 0.025, 0.03, 0.032, 0.033], jnp.float64)
        times = np.array([0.3, 1.0, 4.0, 8.0, 12.0, 25.0, 40.0])
        flows = np.array([10.0, 10.0, 20.0, 30.0, 10.0, 50.0, 5.0])
        pv = float(val.present_value(flows, times, tenors, rates))
        conv = float(val.convexity(flows, times, tenors, rates))
        hess = np.asarray(val.key_rate_convexity(flows, times, tenors, rates))
        assert float(hess.sum()) == pytest.approx(conv, rel=1e-10)
        np.testing.assert_allclose(hess, hess.T, rtol=1e-12)
        h = 1e-4
        up = float(val.present_value(flows, times, tenors, rates + h))
        down = float(val.present_value(flows, times, tenors, rates - h))
        assert (up - 2 * pv + down) / h**2 / pv == pytest.approx(conv, rel=1e-6)
        assert float(val.dv01(flows, times, tenors, rates)) == pytest.approx((down - up) / 2 * 1e-4 / h, rel=1e-5)


def test_liability_risk_matches_the_simulator_liability() -> None:
    scenario = Scenario()
    risk = val.liability_risk(scenario)
    exact = to_params(scenario.model_copy(update={"liability_bucket_months": 1}))
    bucketed = to_params(scenario)
    assert float(initial_liability(exact)) == pytest.approx(risk.present_value, rel=1e-5)
    assert float(initial_liability(bucketed)) == pytest.approx(risk.present_value, rel=1e-3)
    assert 5.0 < risk.modified_duration < 30.0 and risk.convexity > risk.modified_duration**2
    table = risk.key_rate_table()
    assert list(table.columns) == ["tenor", "key_rate_duration", "dv01"] and len(table) == len(scenario.curve.tenors)
    assert table["dv01"].sum() == pytest.approx(risk.dv01, rel=1e-4)
