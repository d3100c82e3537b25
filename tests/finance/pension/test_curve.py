"""The zero curve and the asset returns priced on it: interpolation exact at the knots, the affine
factor map equal to interpolating shocked key rates, OU moments, and bond-bucket returns equal to the
zero-coupon price ratios on the simulated curves (with the carry / duration / convexity reading)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.curve import (
    affine_rates,
    nelson_siegel_loadings,
    ou_coefficients,
    shocked_key_rates,
    zero_coupon_price,
    zero_rates,
)
from decisions.finance.pension.params import DT
from decisions.finance.pension.policy import AllocationNet, fixed_mix_params
from decisions.finance.pension.scenario import STANDARD_RATES, STANDARD_TENORS, Scenario
from decisions.finance.pension.simulator import draw_normals

TENORS = np.asarray(STANDARD_TENORS)
RATES = jnp.asarray(STANDARD_RATES, jnp.float32)


def test_interpolation_is_exact_at_the_knots_linear_between_and_flat_outside() -> None:
    np.testing.assert_array_equal(np.asarray(zero_rates(TENORS, TENORS, RATES)), np.asarray(RATES))
    mid = 0.5 * (TENORS[:-1] + TENORS[1:])
    expected = 0.5 * (np.asarray(RATES)[:-1] + np.asarray(RATES)[1:])
    np.testing.assert_allclose(np.asarray(zero_rates(mid, TENORS, RATES)), expected, rtol=1e-6)
    outside = np.asarray(zero_rates(np.array([1.0 / 12.0, 45.0, 90.0]), TENORS, RATES))
    np.testing.assert_allclose(outside, [RATES[0], RATES[-1], RATES[-1]], rtol=1e-7)


def test_nelson_siegel_loadings_and_the_affine_factor_map() -> None:
    loads = np.asarray(nelson_siegel_loadings(np.array([1e-6, 2.0, 200.0]), 2.0))
    np.testing.assert_allclose(loads[:, 0], 1.0)
    np.testing.assert_allclose(loads[0, 1:], [1.0, 0.0], atol=1e-5)  # short end: slope 1, curvature 0
    np.testing.assert_allclose(loads[1, 1:], [1 - math.exp(-1), 1 - 2 * math.exp(-1)], rtol=1e-6)
    assert abs(loads[2, 1]) < 0.011 and abs(loads[2, 2]) < 0.011  # long end: only the level
    query = np.array([1.0 / 12.0, 0.7, 4.0, 12.5, 29.9, 60.0])
    factors = jnp.asarray([0.004, -0.01, 0.02])
    aff = affine_rates(query, TENORS, RATES, jnp.asarray(2.0))
    direct = zero_rates(query, TENORS, shocked_key_rates(TENORS, RATES, factors, 2.0))
    np.testing.assert_allclose(np.asarray(aff.base + aff.load @ factors), np.asarray(direct), rtol=1e-6, atol=1e-8)


def test_ou_coefficients_give_the_exact_stationary_variance() -> None:
    speed, vol = jnp.asarray([0.1, 0.3, 0.6]), jnp.asarray([0.01, 0.012, 0.015])
    decay, std = ou_coefficients(speed, vol, DT)
    np.testing.assert_allclose(np.asarray(decay), np.exp(-np.asarray(speed) / 12), rtol=1e-6)
    stationary = np.asarray(vol) ** 2 / (2 * np.asarray(speed))
    np.testing.assert_allclose(np.asarray(std) ** 2 / (1 - np.asarray(decay) ** 2), stationary, rtol=1e-4)


@pytest.fixture(scope="module")
def simulated() -> tuple:
    with jax.enable_x64(True):
        scenario = Scenario(horizon_years=2)
        params = to_params(scenario, dtype=jnp.float64)
        net = AllocationNet(n_assets=params.n_assets, hidden=(8,))
        mix = sp.TrainedPensionPolicy(
            policy=net,
            params=fixed_mix_params(net, np.full(params.n_assets, 1.0 / params.n_assets), 0.5),
            settings=sp.PensionSnapoSettings(),
            asset_names=params.asset_names,
        )
        normals = draw_normals(jax.random.PRNGKey(0), 4, params.months, params.n_shocks, jnp.float64)
        _, traj = sp.simulate(mix, params, normals)
        return params, jax.device_get(traj)


def test_bond_returns_are_zero_coupon_price_ratios_on_the_simulated_curves(simulated: tuple) -> None:
    params, traj = simulated
    with jax.enable_x64(True):
        for path, month in ((0, 0), (1, 5), (3, 17), (2, 23)):
            now = shocked_key_rates(params.tenors, params.key_rates, jnp.asarray(traj.factors[path, month]), params.ns_decay)
            later = shocked_key_rates(
                params.tenors, params.key_rates, jnp.asarray(traj.factors[path, month + 1]), params.ns_decay
            )
            cash = 1.0 / float(zero_coupon_price(DT, params.tenors, now))
            assert traj.returns[path, month, 0] == pytest.approx(cash, rel=1e-13)
            for b, duration in enumerate(params.bond_durations):
                price_now = float(zero_coupon_price(duration, params.tenors, now))
                price_later = float(zero_coupon_price(duration - DT, params.tenors, later))
                gross = traj.returns[path, month, 1 + b]
                assert gross == pytest.approx(price_later / price_now, rel=1e-13)
                # carry - duration x yield change (roll-down included), plus convexity
                z_now = float(zero_rates(np.array([duration]), params.tenors, now)[0])
                z_later = float(zero_rates(np.array([duration - DT]), params.tenors, later)[0])
                first = z_now * DT - (duration - DT) * (z_later - z_now)
                assert math.log(gross) == pytest.approx(first, rel=1e-12, abs=1e-15)
                assert gross - 1.0 == pytest.approx(first + first**2 / 2, abs=abs(first) ** 3)


def test_fund_accounting_balances_every_month(simulated: tuple) -> None:
    params, traj = simulated
    from decisions.finance.pension.liabilities import benefit_cash_flows, payroll

    with jax.enable_x64(True):
        benefits = np.asarray(benefit_cash_flows(params))[: params.months]
        pay = np.asarray(payroll(params))
    growth = np.sum(traj.weights * traj.returns, axis=-1)  # (P, N)
    np.testing.assert_allclose(traj.contributions, traj.contribution_rate * pay, rtol=1e-12)
    expected = (traj.assets[:, :-1] + traj.contributions) * growth - benefits
    np.testing.assert_allclose(traj.assets[:, 1:], expected, rtol=1e-12)
    np.testing.assert_allclose(traj.funding_ratio, traj.assets / traj.liabilities, rtol=1e-12)
