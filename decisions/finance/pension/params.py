"""Traced parameters of a pension ALM problem: the ``inputs`` pytree of every sensitivity.

Every economic, actuarial and market number is a traced array leaf, so one
reverse pass gives the derivative of the objective with respect to all of them
(all K key rates, asset means, volatilities and correlations, mortality, the
population, initial assets, contribution bounds). Only shapes and labels are
static: the key tenors, bond durations, asset names, the horizon in months and
the liability projection grid (they change the program, not its numbers).
"""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.finance.pension.scenario import N_FACTORS, Scenario

DT = 1.0 / 12.0
"""One simulation step: a month, in years."""

OMEGA = 115.0
"""Age at which the liability projection stops (survival beyond is negligible)."""

FACTOR_NAMES: tuple[str, ...] = ("level", "slope", "curvature")


@struct.dataclass
class PensionParams:
    """All inputs of the simulator; differentiable leaves unless marked static."""

    # yield curve
    key_rates: Array  # (K,) zero rates at the key tenors (continuous compounding)
    ns_decay: Array  # () Nelson-Siegel decay, years
    factor_speed: Array  # (3,) OU mean-reversion speeds of level, slope, curvature (per year)
    factor_vol: Array  # (3,) OU volatilities (per sqrt(year))
    # lognormal assets
    risky_mean: Array  # (R,) expected returns mu (annual, continuous)
    risky_vol: Array  # (R,) volatilities (annual)
    correlation: Array  # (S (S - 1) / 2,) upper-triangle shock correlations, S = 3 + R, row-major
    # population and benefit rules
    ages: Array  # (C,) cohort ages today
    counts: Array  # (C,) members per cohort
    salaries: Array  # (C,) annual salaries today (actives)
    service: Array  # (C,) past service years (actives)
    pensions: Array  # (C,) annual pensions today (pensioners)
    retirement_age: Array  # ()
    accrual_rate: Array  # () pension per service year, fraction of final salary
    salary_growth: Array  # () annual, continuous
    indexation: Array  # () annual pension indexation, continuous
    mortality_a: Array  # () Makeham constant
    mortality_b: Array  # () Gompertz level
    mortality_c: Array  # () Gompertz growth per year of age
    mortality_scale: Array  # () multiplies the force of mortality
    # funding and objective
    initial_assets: Array  # ()
    contribution_min: Array  # () rate x payroll
    contribution_max: Array  # () rate x payroll
    floor: Array  # () funding-ratio floor
    penalty_weight: Array  # () weight of the funding shortfall (x L_0)
    contribution_cost: Array  # () sponsor cost per unit contributed
    discount_rate: Array  # () sponsor discount rate (annual, continuous)
    # static structure
    tenors: tuple[float, ...] = struct.field(pytree_node=False, default=())
    bond_durations: tuple[float, ...] = struct.field(pytree_node=False, default=())
    risky_names: tuple[str, ...] = struct.field(pytree_node=False, default=())
    months: int = struct.field(pytree_node=False, default=240)
    projection_months: int = struct.field(pytree_node=False, default=1080)
    bucket_months: int = struct.field(pytree_node=False, default=12)

    @property
    def asset_names(self) -> tuple[str, ...]:
        """Portfolio order: cash, bond buckets, risky assets."""
        return ("cash",) + tuple(f"bond_{d:g}y" for d in self.bond_durations) + self.risky_names

    @property
    def n_assets(self) -> int:
        """Number of asset classes (static)."""
        return 1 + len(self.bond_durations) + len(self.risky_names)

    @property
    def shock_names(self) -> tuple[str, ...]:
        """The correlated monthly shocks: curve factors then risky assets."""
        return FACTOR_NAMES + self.risky_names

    @property
    def n_shocks(self) -> int:
        """Number of correlated shocks S = 3 + R (static)."""
        return N_FACTORS + len(self.risky_names)

    @property
    def correlation_pairs(self) -> list[tuple[str, str]]:
        """Labels of the ``correlation`` entries, in order."""
        names = self.shock_names
        i, j = np.triu_indices(len(names), k=1)
        return [(names[a], names[b]) for a, b in zip(i, j, strict=True)]

    @property
    def horizon_years(self) -> float:
        """Horizon in years."""
        return self.months * DT


def projection_months(scenario: Scenario) -> int:
    """Months of benefit projection: up to age ``OMEGA`` of the youngest member, past the horizon."""
    youngest = min(c.age for c in scenario.population.cohorts)
    return max(int(math.ceil(12 * (OMEGA - youngest))), scenario.months + 12)


def to_params(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> PensionParams:
    """Build the traced parameter pytree from a validated scenario.

    When ``scenario.funding.initial_assets`` is not given, the initial assets are
    ``initial_funding_ratio x L_0`` with ``L_0`` the simulator's liability today.

    Args:
        scenario: validated scenario.
        dtype: float dtype of the leaves (float64 needs x64 enabled).

    Returns:
        The ``PensionParams`` for the simulator, the baselines and the valuation.
    """
    from decisions.finance.pension.liabilities import initial_liability  # needs PensionParams

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
