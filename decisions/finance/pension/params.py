"""Traced parameters of a pension ALM problem: the ``inputs`` pytree of every sensitivity."""

from __future__ import annotations

import numpy as np
from flax import struct
from jax import Array

from decisions.finance.pension.scenario import N_FACTORS

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
