"""Pension's policies answering today's state: the allocation and contribution, its value from today
and its derivatives.

A state is a month ``m`` of the run's horizon, the fund's assets, today's zero rates at the run's key
tenors and the number of members. Today's curve is the run's model curve at the curve factors that
best explain today's move from the run's curve (least squares on the Nelson-Siegel loadings), its
remainder the new base curve, so the model's curve today is today's curve. The members scale the
run's projected liability, payroll and benefits. From there a policy runs on fixed common paths to
the horizon under the hard rules and the run's objective (terminal surplus less contributions' cost
less the shortfall penalty) is counted from today, discounted to today. A state's market paths
(curve factors, liability, asset returns) do not depend on the policy: they are made once and both
policies are valued on them. ``answer`` answers a batch in one compiled call (vmapped in chunks); a
chunk skips the months before its earliest state's month, where every path of every state in it
stands still.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.scans import skip_before
from decisions.finance.pension.curve import nelson_siegel_loadings
from decisions.finance.pension.liabilities import liability_value, survival
from decisions.finance.pension.params import DT, PensionParams
from decisions.finance.pension.policy import N_FEATURES, AllocationNet, decide
from decisions.finance.pension.simulator import Month, World, draw_normals, fund_month, market_month, prepare

PATHS = 64
"""Common paths (antithetic) a state's value and next month's funding ratio are estimated on."""
CHUNK = 128
"""States answered together (vmapped) inside ``answer``'s loop: bounds the reverse passes' memory."""


def common_normals(params: PensionParams) -> Array:
    """The fixed normals ``(PATHS, N, S)`` every state is valued on (same state, same answer)."""
    return draw_normals(jax.random.PRNGKey(0), PATHS, params.months, params.n_shocks, params.key_rates.dtype)


def today_curve(params: PensionParams, key_rates: Array) -> tuple[PensionParams, Array]:
    """``(params on today's base curve, today's factors)``: today's rates ``= base + loadings @ factors``."""
    loadings = nelson_siegel_loadings(jnp.asarray(params.tenors, key_rates.dtype), params.ns_decay)  # (K, 3)
    factors = jnp.linalg.pinv(loadings) @ (key_rates - params.key_rates)
    return params.replace(key_rates=key_rates - loadings @ factors), factors


def members_scale(params: PensionParams, month: Array, members: Array) -> Array:
    """Today's members over the run's projection of them at ``month`` (survivors of its cohorts)."""
    projected = jnp.sum(params.counts * survival(params, params.ages, month * DT))
    return members / projected


def _scaled(world: World, scale: Array) -> World:
    return world._replace(amounts=world.amounts * scale, payroll=world.payroll * scale,
                          benefits=world.benefits * scale)


class Market(NamedTuple):
    """A state's paths as the markets make them, whatever the policy does (leading axis: months)."""

    factors: Array  # (N, P, 3) curve factors at the start of each month
    liability: Array  # (N, P) the liability at the start of each month
    gross: Array  # (N, P, A) gross asset returns over each month
    final: Array  # (P,) the liability at the horizon


class Step(NamedTuple):
    """One month's inputs of the policy's scan."""

    month: Array  # () int
    payroll: Array  # ()
    benefit: Array  # ()
    factors: Array  # (P, 3)
    liability: Array  # (P,)
    gross: Array  # (P, A)


def _month_of(x: Month | Step) -> Array:
    return x.month


def market_paths(
    params: PensionParams, world: World, month: Array, factors: Array, normals: Array, start: Array | int = 0,
) -> Market:
    """The curve factors, liability and asset returns on each path from month ``month`` (factors
    ``factors``) to the horizon (``simulator.market_month``); before ``month`` the factors stand
    still. Months before ``start`` (at most ``month``; unbatched) are not simulated and their outputs
    are zeros."""

    def path_market(now: Array, x: Month) -> tuple[Array, tuple[Array, Array]]:
        liability, nxt, gross = market_month(params, world, now, x)
        return nxt, (liability, gross)

    step = jax.vmap(path_market, in_axes=(0, Month(None, None, None, None, 0)))

    def live_month(now: Array, x: Month) -> tuple[Array, tuple[Array, Array, Array]]:
        nxt, (liability, gross) = step(now, x)
        return jnp.where(x.month >= month, nxt, now), (now, liability, gross)

    n, paths = params.months, normals.shape[0]
    xs = Month(jnp.arange(n), world.amounts[:n], world.payroll, world.benefits, jnp.swapaxes(normals, 0, 1))
    end, (path_factors, liability, gross) = jax.lax.scan(
        skip_before(live_month, start, _month_of, remat=True), jnp.broadcast_to(factors, (paths, 3)), xs)
    final = jax.vmap(lambda f: liability_value(world.amounts[n], world.liability_discount, f))(end)
    return Market(path_factors, liability, gross, final)


def value_from(
    policy: AllocationNet, policy_params: Any, params: PensionParams, world: World, month: Array,
    assets: Array, market: Market, start: Array | int = 0, fixed: bool = False,
) -> tuple[Array, dict[str, Array]]:
    """The policy's mean objective from month ``month`` (assets) on the market's paths, counted and
    discounted from then; with today's decision (``weights``, ``rate``), today's funding ratio and
    liability and next month's funding ratio on each path (``next_ratio``). Months before ``start``
    (at most ``month``; unbatched) are not simulated: the paths stand still there and nothing of
    them is counted, so the answer is the same. The reverse pass recomputes a month's step instead of
    keeping its intermediates (``jax.checkpoint``): less memory to write and read back. ``fixed``
    (static): the policy sees none of its features (a fixed mix: ``policy.is_fixed_mix``), so it
    decides once for every month and path (its decision on any finite features)."""
    n, paths = params.months, market.final.shape[0]
    held = decide(policy, policy_params, jnp.zeros(N_FEATURES, market.final.dtype), params.contribution_min,
                  params.contribution_max) if fixed else None

    def path_policy(assets_now: Array, x: Step) -> tuple[Array, tuple]:
        return fund_month(policy, policy_params, params, assets_now, x.liability, x.factors, x.month, x.payroll,
                          x.benefit, x.gross, held=held)

    step = jax.vmap(path_policy, in_axes=(0, Step(None, None, None, 0, 0, 0)))

    def live_month(assets_now: Array, x: Step) -> tuple[Array, tuple]:
        nxt, out = step(assets_now, x)
        return jnp.where(x.month >= month, nxt, assets_now), out

    xs = Step(jnp.arange(n), world.payroll, world.benefits, market.factors, market.liability, market.gross)
    end, (ratio, weights, rate, contribution) = jax.lax.scan(
        skip_before(live_month, start, _month_of, remat=True), jnp.broadcast_to(assets, (paths,)), xs)
    ratios = jnp.concatenate([ratio, (end / market.final)[None]])  # (N + 1, P)
    months = jnp.arange(n + 1)
    ahead = months >= month
    discount = world.discount / world.discount[month]
    surplus = discount[n] * (end - market.final)
    cost = params.contribution_cost * jnp.sum(jnp.where(ahead[:n, None], discount[:n, None] * contribution, 0.0), 0)
    shortfall = jnp.where(ahead[:, None], jnp.maximum(params.floor - ratios, 0.0), 0.0)
    penalty = params.penalty_weight * world.initial_liability * jnp.sum(shortfall, 0) / jnp.sum(ahead)
    found = {"weights": weights[month, 0], "rate": rate[month, 0], "ratio": ratio[month, 0],
             "liability": market.liability[month, 0], "next_ratio": ratios[month + 1]}
    return jnp.mean(surplus - cost - penalty), found


def _one(
    policy: AllocationNet, policy_params: Any, other_params: Any, params: PensionParams, month: Array,
    assets: Array, key_rates: Array, members: Array, normals: Array, start: Array | int = 0,
    fixed: tuple[bool, bool] = (False, False),
) -> dict[str, Array]:
    """Everything a decision needs for one state (see ``answer``; ``start`` and ``fixed``, the policy's
    and the alternative's: as ``value_from``'s). The market's paths are made once: the alternative is
    valued on the policy's."""

    def value(assets_now: Array, rates: Array, members_now: Array) -> tuple[Array, tuple]:
        today, factors = today_curve(params, rates)
        world = _scaled(prepare(today), members_scale(today, month, members_now))
        market = market_paths(today, world, month, factors, normals, start)
        found, aux = value_from(policy, policy_params, today, world, month, assets_now, market, start, fixed[0])
        return found, (aux, world, market)

    grad = jax.value_and_grad(value, argnums=(0, 1, 2), has_aux=True)
    (found, (aux, world, market)), (d_assets, d_rates, d_members) = grad(assets, key_rates, members)
    other, other_aux = value_from(policy, other_params, params, world, month, assets, market, start, fixed[1])
    factors = today_curve(params, key_rates)[1]
    next_ratio = aux.pop("next_ratio")
    low, high = jnp.percentile(next_ratio, jnp.array([2.5, 97.5]))
    return {"value": found, **aux, "mean": jnp.mean(next_ratio), "low": low, "high": high,
            "factors": factors, "alt_value": other, "alt_weights": other_aux["weights"], "alt_rate": other_aux["rate"],
            "d_assets": d_assets, "d_rates": d_rates, "d_members": d_members}


@partial(jax.jit, static_argnames=("policy", "fixed"))
def answer(
    policy: AllocationNet, policy_params: Any, other_params: Any, params: PensionParams, month: Array,
    assets: Array, key_rates: Array, members: Array, normals: Array, fixed: tuple[bool, bool] = (False, False),
) -> dict[str, Array]:
    """A batch of states (``month``, ``assets``, ``members``: ``(B,)``; ``key_rates``: ``(B, K)``)
    answered by the policy and the alternative (same network, ``other_params``): the value, today's
    weights and contribution rate, funding ratio, liability and curve factors, next month's funding ratio (mean and
    central 95% of the paths), the alternative's value and decision, and the value's derivatives by
    today's assets, key rates and members (the policy reacting). States of alike months placed
    together answer faster (each chunk of ``CHUNK`` starts at its earliest month). ``fixed``: whether
    the policy and the alternative are fixed mixes (``policy.is_fixed_mix``): faster, the same answers
    to float32 rounding."""
    chunk = math.gcd(CHUNK, month.shape[0])

    def one_chunk(inputs: tuple[Array, Array, Array, Array]) -> dict[str, Array]:
        start = jnp.min(inputs[0])
        one = partial(_one, policy, policy_params, other_params, params, normals=normals, start=start, fixed=fixed)
        return jax.vmap(one)(*inputs)

    chunks = jax.tree_util.tree_map(lambda a: a.reshape((-1, chunk, *a.shape[1:])), (month, assets, key_rates, members))
    found = jax.lax.map(one_chunk, chunks)
    return jax.tree_util.tree_map(lambda a: a.reshape((-1, *a.shape[2:])), found)
