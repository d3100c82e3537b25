"""Bench helpers: the K-key-rate curves describe the same curve, and (slow) the timing and
finite-difference figures come out with the promised names and values on a small problem."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from decisions.finance.pension import bench
from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.curve import zero_rates
from decisions.finance.pension.policy import init_policy
from decisions.finance.pension.scenario import STANDARD_RATES, STANDARD_TENORS, Scenario


def test_curves_with_more_key_rates_describe_the_default_curve() -> None:
    base = Scenario()
    for k in (10, 50, 200, 1000):
        curve = bench.with_key_rates(base, k).curve
        assert len(curve.tenors) == k and np.all(np.diff(curve.tenors) > 0)
        rates = np.asarray(zero_rates(np.asarray(STANDARD_TENORS), np.asarray(curve.tenors), np.asarray(curve.rates)))
        np.testing.assert_allclose(rates, STANDARD_RATES, atol=2.5e-4 if k == 10 else 6e-5)


@pytest.mark.slow
def test_timing_and_finite_difference_figures_on_a_small_problem() -> None:
    scenario = Scenario(horizon_years=2)
    settings = sp.PensionSnapoSettings(width=8)
    net = settings.network(7)
    policy = sp.TrainedPensionPolicy(
        policy=net, params=init_policy(net, jax.random.PRNGKey(0)), settings=settings, asset_names=()
    )
    normals = jax.random.normal(jax.random.PRNGKey(1), (16, 24, 5))
    figures = bench.key_rate_timing(policy, bench.with_key_rates(scenario, 10), normals, 10)
    assert figures["speedup_K10"] > 0 and figures["n_sensitivities_K10"] > 10
    assert figures["bump_method_K10"] == "loop_of_jitted_calls" or figures["bump_method_K10"].startswith("jitted_vmap_")
    assert figures["bump_seconds_K10"] == pytest.approx(11 * min(v for n, v in figures.items() if n.startswith("seconds_per")))
    errors = bench.fd_errors(policy, scenario, horizon_years=2, paths=16)
    assert errors["fd_max_rel_err"] <= 1e-3
