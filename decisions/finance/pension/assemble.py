"""A pension problem's traced parameters built from its validated scenario (funded to its ratio)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.finance.pension.liabilities import initial_liability
from decisions.finance.pension.params import OMEGA, PensionParams
from decisions.finance.pension.scenario import Scenario


def projection_months(scenario: Scenario) -> int:
    """Months of benefit projection: up to age ``OMEGA`` of the youngest member, past the horizon."""
    youngest = min(c.age for c in scenario.population.cohorts)
    return max(int(math.ceil(12 * (OMEGA - youngest))), scenario.months + 12)


def to_params(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> PensionParams:
    """Build the traced parameter pytree from a validated scenario.

    Args:
        dtype: float dtype of the leaves (float64 needs x64 enabled).

    Returns:
        The ``PensionParams`` for the simulator, the baselines and the valuation.
    """
    def arr(x: object) -> Array:
        return jnp.asarray(np.asarray(x, dtype=float), dtype=dtype)

    pop, fund, assets = scenario.population, scenario.funding, scenario.assets
    cohorts = pop.cohorts
    corr = assets.correlation_matrix
    upper = corr[np.triu_indices(corr.shape[0], k=1)]
    params = PensionParams(
        key_rates=arr(scenario.curve.rates),
        ns_decay=arr(scenario.curve.ns_decay),
        factor_speed=arr(scenario.curve.speeds),
        factor_vol=arr(scenario.curve.volatilities),
        risky_mean=arr([a.expected_return for a in assets.risky]),
        risky_vol=arr([a.volatility for a in assets.risky]),
        correlation=arr(upper),
        ages=arr([c.age for c in cohorts]),
        counts=arr([c.count for c in cohorts]),
        salaries=arr([c.salary for c in cohorts]),
        service=arr([c.service for c in cohorts]),
        pensions=arr([c.pension for c in cohorts]),
        retirement_age=arr(pop.retirement_age),
        accrual_rate=arr(pop.accrual_rate),
        salary_growth=arr(pop.salary_growth),
        indexation=arr(pop.indexation),
        mortality_a=arr(pop.mortality.a),
        mortality_b=arr(pop.mortality.b),
        mortality_c=arr(pop.mortality.c),
        mortality_scale=arr(pop.mortality.scale),
        initial_assets=arr(fund.initial_assets if fund.initial_assets is not None else 1.0),
        contribution_min=arr(fund.contribution_min),
        contribution_max=arr(fund.contribution_max),
        floor=arr(fund.floor),
        penalty_weight=arr(fund.penalty_weight),
        contribution_cost=arr(fund.contribution_cost),
        discount_rate=arr(fund.discount_rate),
        tenors=tuple(float(t) for t in scenario.curve.tenors),
        bond_durations=tuple(float(d) for d in assets.bond_durations),
        risky_names=tuple(a.name for a in assets.risky),
        months=scenario.months,
        projection_months=projection_months(scenario),
        bucket_months=scenario.liability_bucket_months,
    )
    if fund.initial_assets is None:
        liability = float(initial_liability(params))
        params = params.replace(initial_assets=arr(fund.initial_funding_ratio * liability))
    return params
