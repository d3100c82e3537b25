"""The differentiable pension ALM simulator: monthly ``lax.scan``, paths ``vmap``-ed in each month."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.core.smooth import smooth_relu
from decisions.finance.pension.assets import (
    BondRates,
    bond_queries,
    bond_returns,
    cash_return,
    risky_returns,
    shock_cholesky,
    split_bond_rates,
)
from decisions.finance.pension.curve import affine_rates, ou_coefficients
from decisions.finance.pension.liabilities import (
    DiscountMap,
    benefit_cash_flows,
    discount_map,
    liability_grid,
    liability_value,
    payroll,
)
from decisions.finance.pension.params import DT, PensionParams
from decisions.finance.pension.policy import AllocationNet, decide, features

PyTree = Any


class World(NamedTuple):
    """Path-independent quantities of one rollout (computed once from the params)."""

    amounts: Array  # (N + 1, B) remaining liability cash flows by bucket, seen from month m
    liability_discount: DiscountMap  # (B,) log discount factors of the buckets, affine in the factors
    bonds: BondRates  # cash and bond-bucket rate maps
    payroll: Array  # (N,) monthly payroll
    benefits: Array  # (N,) benefits paid at the end of month m
    chol: Array  # (S, S) Cholesky factor of the shock correlation
    decay: Array  # (3,) OU factor decay over a month
    factor_std: Array  # (3,) OU factor shock std over a month
    discount: Array  # (N + 1,) sponsor discount factors exp(-d t_m)
    initial_liability: Array  # () L_0


def prepare(params: PensionParams) -> World:
    """Compute the path-independent quantities of a rollout."""
    flows = benefit_cash_flows(params)
    grid = liability_grid(params, flows)
    bond_tenors = bond_queries(params)
    queries = np.concatenate([bond_tenors, grid.tenors])  # one interpolation for every tenor needed
    all_rates = affine_rates(queries, params.tenors, params.key_rates, params.ns_decay)
    liability_discount = discount_map(all_rates.take(len(bond_tenors), len(queries)), grid.tenors)
    decay, std = ou_coefficients(params.factor_speed, params.factor_vol, DT)
    times = jnp.asarray(np.arange(params.months + 1) * DT, params.key_rates.dtype)
    zero = jnp.zeros((3,), params.key_rates.dtype)
    return World(
        amounts=grid.amounts,
        liability_discount=liability_discount,
        bonds=split_bond_rates(all_rates.take(0, len(bond_tenors)), len(params.bond_durations)),
        payroll=payroll(params),
        benefits=flows[: params.months],
        chol=shock_cholesky(params),
        decay=decay,
        factor_std=std,
        discount=jnp.exp(-params.discount_rate * times),
        initial_liability=liability_value(grid.amounts[0], liability_discount, zero),
    )


class Trajectory(NamedTuple):
    """What happened along each path (leading axis: paths)."""

    funding_ratio: Array  # (P, N + 1) A_m / L_m at the start of each month, and at the horizon
    assets: Array  # (P, N + 1)
    liabilities: Array  # (P, N + 1)
    factors: Array  # (P, N + 1, 3) level, slope, curvature
    weights: Array  # (P, N, A) portfolio weights chosen each month
    contribution_rate: Array  # (P, N)
    contributions: Array  # (P, N) contributions paid in
    returns: Array  # (P, N, A) gross asset returns over each month


class Outcome(NamedTuple):
    """Per-path objective and its parts (currency)."""

    value: Array  # (P,) the objective
    surplus: Array  # (P,) discounted terminal surplus exp(-d T) (A_N - L_N)
    contribution_cost: Array  # (P,) k sum_m exp(-d t_m) C_m
    penalty: Array  # (P,) p L_0 mean_m h(floor - F_m)


class Carry(NamedTuple):
    """What one path carries from month to month."""

    assets: Array  # ()
    factors: Array  # (3,)


class Month(NamedTuple):
    """One month's inputs (the scan's ``xs``)."""

    month: Array  # () int
    amounts: Array  # (B,)
    payroll: Array  # ()
    benefit: Array  # ()
    normals: Array  # (S,) for one path; (P, S) for the month of all paths


def draw_normals(key: Array, paths: int, months: int, n_shocks: int, dtype: jnp.dtype = jnp.float32) -> Array:
    """Antithetic standard normals ``(paths, months, n_shocks)`` (pairs ``z, -z``)."""
    half = jax.random.normal(key, ((paths + 1) // 2, months, n_shocks), dtype)
    return jnp.concatenate([half, -half])[:paths]


def market_month(params: PensionParams, world: World, factors: Array, x: Month) -> tuple[Array, Array, Array]:
    """One month of one path's markets, whatever the fund does: ``(liability at the month's start,
    next month's curve factors, gross returns of the assets over the month)``."""
    liability = liability_value(x.amounts, world.liability_discount, factors)
    shocks = world.chol @ x.normals
    nxt = world.decay * factors + world.factor_std * shocks[:3]
    gross = jnp.concatenate(
        [
            cash_return(world.bonds, factors)[None],
            bond_returns(params, world.bonds, factors, nxt),
            risky_returns(params, shocks[3:]),
        ]
    )
    return liability, nxt, gross


def fund_month(
    policy: AllocationNet, policy_params: PyTree, params: PensionParams, assets: Array, liability: Array,
    factors: Array, month: Array, payroll_now: Array, benefit: Array, gross: Array, *,
    policy_reacts: bool = True, held: tuple[Array, Array] | None = None,
) -> tuple[Array, tuple[Array, Array, Array, Array]]:
    """One month of one path's fund: the policy decides on the fund's state (``held``: this decision
    instead), the contribution and the month's returns and benefit move the assets. Returns the next
    assets and the month's ``(ratio, weights, rate, contribution)``."""
    ratio = assets / liability
    if held is None:
        view = features(ratio, month / params.months, factors)
        if not policy_reacts:
            view = jax.lax.stop_gradient(view)
        weights, rate = decide(policy, policy_params, view, params.contribution_min, params.contribution_max)
    else:
        weights, rate = held
    contribution = rate * payroll_now
    nxt = (assets + contribution) * jnp.dot(weights, gross) - benefit
    return nxt, (ratio, weights, rate, contribution)


def path_month(
    policy: AllocationNet, policy_params: PyTree, params: PensionParams, world: World, carry: Carry, x: Month,
    *, policy_reacts: bool = True,
) -> tuple[Carry, tuple]:
    """One month of one path: the policy decides on the fund's state, the month's returns and cash
    flows move the assets, the curve factors step (``market_month`` then ``fund_month``). Returns the
    next carry and the month's ``(ratio, assets, liability, factors, weights, rate, contribution, gross
    returns)``."""
    liability, factors, gross = market_month(params, world, carry.factors, x)
    assets, (ratio, weights, rate, contribution) = fund_month(
        policy, policy_params, params, carry.assets, liability, carry.factors, x.month, x.payroll, x.benefit, gross,
        policy_reacts=policy_reacts)
    out = (ratio, carry.assets, liability, carry.factors, weights, rate, contribution, gross)
    return Carry(assets, factors), out


def rollout(
    policy: AllocationNet,
    policy_params: PyTree,
    params: PensionParams,
    normals: Array,
    *,
    tau: Array | float = 0.0,
    smooth: bool = False,
    policy_reacts: bool = True,
) -> tuple[Outcome, Trajectory]:
    """Simulate the fund along every path.

    Args:
        params: problem parameters (the inputs of every sensitivity).
        normals: ``(P, N, S)`` independent standard normals of the paths.
        tau: temperature of the smooth shortfall hinge (funding-ratio units).
        smooth: softplus hinge (training surrogate) or the exact hinge.
        policy_reacts: False holds the policy's features fixed under differentiation
            (``stop_gradient``): the decisions do not react to the inputs.
    """
    world = prepare(params)
    months = params.months

    def hinge(funding_ratio: Array) -> Array:
        gap = params.floor - funding_ratio
        return smooth_relu(gap, tau) if smooth else jnp.maximum(gap, 0.0)

    path_step = partial(path_month, policy, policy_params, params, world, policy_reacts=policy_reacts)

    # The scan runs over months with every path vmapped inside each step (not a vmap of
    # per-path scans): the reverse pass then sums the cotangents of the shared inputs
    # (curve maps, Cholesky factor, policy weights) over paths inside each step instead
    # of carrying one accumulator per path.
    month_step = jax.checkpoint(jax.vmap(path_step, in_axes=(0, Month(None, None, None, None, 0))))
    paths = normals.shape[0]
    dtype = params.key_rates.dtype
    init = Carry(jnp.broadcast_to(params.initial_assets, (paths,)), jnp.zeros((paths, 3), dtype))
    xs = Month(jnp.arange(months), world.amounts[:months], world.payroll, world.benefits, jnp.swapaxes(normals, 0, 1))
    end, out = jax.lax.scan(month_step, init, xs)
    return _outcome(params, world, end, out, hinge)

def _outcome(
    params: PensionParams, world: World, end: Carry, out: tuple, hinge: Callable[[Array], Array]
) -> tuple[Outcome, Trajectory]:
    """The per-path objective and the trajectory from the monthly scan's final carry and outputs."""
    months = params.months
    ratio, assets, liabilities, factors, weights, rate, contributions, gross = (jnp.swapaxes(o, 0, 1) for o in out)

    def terminal_liability(f: Array) -> Array:
        return liability_value(world.amounts[months], world.liability_discount, f)

    liability = jax.vmap(terminal_liability)(end.factors)  # (P,)
    trajectory = Trajectory(
        funding_ratio=jnp.concatenate([ratio, (end.assets / liability)[:, None]], axis=1),
        assets=jnp.concatenate([assets, end.assets[:, None]], axis=1),
        liabilities=jnp.concatenate([liabilities, liability[:, None]], axis=1),
        factors=jnp.concatenate([factors, end.factors[:, None]], axis=1),
        weights=weights,
        contribution_rate=rate,
        contributions=contributions,
        returns=gross,
    )
    surplus = world.discount[months] * (end.assets - liability)
    cost = params.contribution_cost * jnp.sum(world.discount[:months] * contributions, axis=1)
    penalty = params.penalty_weight * world.initial_liability * jnp.mean(hinge(trajectory.funding_ratio), axis=1)
    return Outcome(value=surplus - cost - penalty, surplus=surplus, contribution_cost=cost, penalty=penalty), trajectory


def objective_value(
    policy: AllocationNet, policy_params: PyTree, params: PensionParams, normals: Array, *, tau: Array | float, smooth: bool
) -> Array:
    """Mean per-path objective (currency): the scalar SNAPO differentiates."""
    outcome, _ = rollout(policy, policy_params, params, normals, tau=tau, smooth=smooth)
    return jnp.mean(outcome.value)
