"""Liabilities: Gompertz-Makeham survival, projected benefit cash flows, payroll, bucketed discounting."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.finance.pension.curve import AffineRates, affine_rates
from decisions.finance.pension.params import DT, PensionParams


def survival(params: PensionParams, age: Array, years: Array) -> Array:
    """Probability that a member aged ``age`` survives ``years`` more years (Gompertz-Makeham).

    Args:
        age: ages (broadcasts with ``years``).
    """
    log_c = jnp.log(params.mortality_c)
    gompertz = params.mortality_b * jnp.exp(age * log_c) * jnp.expm1(years * log_c) / log_c
    return jnp.exp(-params.mortality_scale * (params.mortality_a * years + gompertz))


def payment_times(params: PensionParams) -> np.ndarray:
    """Payment times ``t_j = j / 12`` (years), ``j = 1 .. projection_months``."""
    return np.arange(1, params.projection_months + 1) * DT


def _years_to_retirement(params: PensionParams) -> Array:
    return jnp.maximum(params.retirement_age - params.ages, 0.0)  # (C,)


def benefit_cash_flows(params: PensionParams) -> Array:
    """Expected benefit payments of the scheme, month by month.

    Returns:
        ``(J,)`` expected payments, entry ``j - 1`` paid at ``j / 12`` years.
    """
    t = jnp.asarray(payment_times(params), params.ages.dtype)[None, :]  # (1, J)
    to_retire = _years_to_retirement(params)[:, None]  # (C, 1)
    active = (params.ages < params.retirement_age)[:, None]
    final_salary = params.salaries[:, None] * jnp.exp(params.salary_growth * to_retire)
    accrued = params.accrual_rate * (params.service[:, None] + to_retire) * final_salary
    at_retirement = jnp.where(active, accrued, params.pensions[:, None])  # (C, 1) annual pension
    indexed = at_retirement * jnp.exp(params.indexation * (t - to_retire))
    paying = t > to_retire
    alive = survival(params, params.ages[:, None], t)
    flows = params.counts[:, None] * alive * jnp.where(paying, indexed, 0.0) * DT
    return jnp.sum(flows, axis=0)


def payroll(params: PensionParams) -> Array:
    """Expected monthly payroll of active members at the start of each simulated month.

    Returns:
        ``(N,)``: salaries / 12 of the members alive and not retired at ``t_m = m / 12``.
    """
    t = jnp.asarray(np.arange(params.months) * DT, params.ages.dtype)[None, :]
    to_retire = _years_to_retirement(params)[:, None]
    salary = params.salaries[:, None] * jnp.exp(params.salary_growth * t)
    alive = survival(params, params.ages[:, None], t)
    working = t < to_retire
    return jnp.sum(params.counts[:, None] * alive * jnp.where(working, salary, 0.0) * DT, axis=0)


class LiabilityGrid(NamedTuple):
    """Remaining cash flows by bucket at every month, and the buckets' relative tenors."""

    amounts: Array  # (N + 1, B) cash flows in bucket b still to be paid, seen from month m
    tenors: np.ndarray  # (B,) mean payment time of bucket b after the valuation month (years, static)


def bucket_count(params: PensionParams) -> int:
    """Number of discounting buckets (static)."""
    return -(-params.projection_months // params.bucket_months)


def liability_grid(params: PensionParams, cash_flows: Array) -> LiabilityGrid:
    """Group the cash flows still to be paid after each month ``m = 0 .. N`` into buckets.

    Args:
        params: problem parameters (static grid sizes).
        cash_flows: ``(J,)`` monthly benefit payments.
    """
    width, total = params.bucket_months, params.projection_months
    buckets = bucket_count(params)
    cumulative = jnp.concatenate([jnp.zeros((1,), cash_flows.dtype), jnp.cumsum(cash_flows)])  # (J + 1,)
    m = np.arange(params.months + 1)[:, None]
    b = np.arange(buckets)[None, :]
    lo = np.minimum(m + b * width, total)
    hi = np.minimum(m + (b + 1) * width, total)
    amounts = cumulative[hi] - cumulative[lo]
    tenors = (np.arange(buckets) * width + (width + 1) / 2.0) * DT
    return LiabilityGrid(amounts=amounts, tenors=tenors)


def bucket_rates(params: PensionParams, grid: LiabilityGrid) -> AffineRates:
    """Affine factor map of the zero rates at the buckets' relative tenors."""
    return affine_rates(grid.tenors, params.tenors, params.key_rates, params.ns_decay)


class DiscountMap(NamedTuple):
    """Log discount factors of the buckets as affine functions of the factors: ``log DF = log_df + slope @ f``."""

    log_df: Array  # (B,) -z(tau) tau on today's curve
    slope: Array  # (B, 3) -load(tau) tau


def discount_map(rates: AffineRates, tenors: np.ndarray) -> DiscountMap:
    """The buckets' log discount factors from their affine rate maps (computed once per rollout)."""
    tau = jnp.asarray(tenors, rates.base.dtype)
    return DiscountMap(log_df=-rates.base * tau, slope=-rates.load * tau[:, None])


def liability_value(amounts: Array, discount: DiscountMap, factors: Array) -> Array:
    """Value of bucketed cash flows on the curve of ``factors``.

    Args:
        amounts: ``(B,)`` bucket amounts.
        discount: the buckets' ``DiscountMap``.
        factors: ``(..., 3)`` curve factors.

    Returns:
        ``(...)`` present values ``exp(log_df + slope @ f) @ amounts`` (two matrix products,
        so the reverse pass is matrix products too).
    """
    return jnp.exp(discount.log_df + factors @ discount.slope.T) @ amounts


def initial_liability(params: PensionParams) -> Array:
    """``L_0``: the simulator's liability today (bucketed, on today's curve)."""
    grid = liability_grid(params, benefit_cash_flows(params))
    rates = bucket_rates(params, grid)
    zero = jnp.zeros((3,), params.key_rates.dtype)
    return liability_value(grid.amounts[0], discount_map(rates, grid.tenors), zero)
