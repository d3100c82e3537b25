"""Control variates of the storage valuation: exactly mean zero, and they shrink the paired noise."""

from __future__ import annotations

from datetime import date

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.evaluate import compare
from decisions.energy.gas_storage.controls import price_surprises, storage_controls
from decisions.energy.gas_storage.intrinsic import solve_intrinsic
from decisions.energy.gas_storage.params import to_params
from decisions.energy.gas_storage.prices import draw_normals, spot_paths
from decisions.energy.gas_storage.rolling import make_grid, rolling_intrinsic
from decisions.energy.gas_storage.scenario import Scenario, seasonal_forward_curve
from decisions.energy.gas_storage.valuation import path_values

DAYS, PATHS = 60, 256  # the shapes of test_lsmc_baselines: its programs are reused
START = date(2026, 9, 1)


def _scenario(prices: dict | None = None) -> Scenario:
    if prices is not None and prices.get("model") == "exponential_ou":
        return Scenario.parse({"prices": prices, "horizon_days": DAYS, "start_date": START})
    return Scenario.parse({"forward_curve": seasonal_forward_curve(DAYS, start=START), "start_date": START,
                           **({"prices": prices} if prices else {})})


@pytest.mark.parametrize("prices", [None, {"model": "exponential_ou", "speed": 5.0, "volatility": 0.8}])
def test_price_surprises_have_mean_zero_on_every_day(prices: dict | None) -> None:
    params = to_params(_scenario(prices))
    x, spots = spot_paths(draw_normals(jax.random.PRNGKey(0), 16_384, DAYS), params)
    surprise = np.asarray(price_surprises(x, spots, params), np.float64)
    assert np.all(surprise[:, 0] == 0.0)
    z = surprise[:, 1:].mean(axis=0) / (surprise[:, 1:].std(axis=0) / np.sqrt(len(surprise)))
    assert np.abs(z).max() < 4.5  # 59 days: a wrong conditional expectation shows as a bias of many s.e.
    assert np.abs(z).mean() < 1.2  # |N(0,1)| averages 0.8


def test_controls_are_zero_for_deterministic_prices_and_have_mean_zero_otherwise() -> None:
    deterministic = to_params(_scenario({"model": "deterministic"}))
    normals = draw_normals(jax.random.PRNGKey(1), PATHS, DAYS)
    lp = solve_intrinsic(deterministic)
    assert np.all(np.asarray(storage_controls(jnp.asarray(lp.net_injection), normals, deterministic)) == 0.0)

    params = to_params(_scenario())
    normals = draw_normals(jax.random.PRNGKey(2), 8_192, DAYS)
    controls = np.asarray(storage_controls(jnp.asarray(solve_intrinsic(params).net_injection), normals, params))
    assert controls.shape == (8_192, 3)
    assert np.all(np.abs(controls.mean(axis=0)) < 4 * controls.std(axis=0) / np.sqrt(8_192))


def test_controls_cut_the_paired_standard_error_of_two_storage_policies() -> None:
    params = to_params(_scenario())
    normals = draw_normals(jax.random.PRNGKey(3), PATHS, DAYS)
    x, spots = spot_paths(normals, params)
    rolling = rolling_intrinsic(x, spots, params, make_grid(params))
    lp = jnp.broadcast_to(jnp.asarray(solve_intrinsic(params).net_injection), spots.shape)
    values = {"rolling": np.asarray(rolling.values), "lp": np.asarray(path_values(lp, spots, params))}
    controls = {"rolling": storage_controls(rolling.actions, normals, params), "lp": storage_controls(lp, normals, params)}
    plain = compare(values, reference="lp")
    table = compare(values, reference="lp", controls=controls)
    # the LP's path value is its expectation plus the forward-hedge control: exact once adjusted
    assert table.loc["lp", "variance_reduction"] > 1e6
    assert table.loc["rolling", "variance_reduction"] > 4  # about 12 here
    assert table.loc["rolling", "diff_stderr"] < plain.loc["rolling", "diff_stderr"] / 2
    # the adjusted difference estimates the same thing: within the plain one's noise
    assert table.loc["rolling", "diff_mean"] == pytest.approx(plain.loc["rolling", "diff_mean"], abs=3 * plain.loc["rolling", "diff_stderr"])
