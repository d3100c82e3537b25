"""Asset returns: cash and bond buckets priced on the simulated curve, correlated lognormal assets."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.finance.pension.curve import AffineRates, affine_rates
from decisions.finance.pension.params import DT, PensionParams


def correlation_matrix(params: PensionParams) -> Array:
    """The ``(S, S)`` shock correlation matrix from its upper-triangle entries."""
    s = params.n_shocks
    i, j = np.triu_indices(s, k=1)
    m = jnp.zeros((s, s), params.correlation.dtype).at[i, j].set(params.correlation)
    return m + m.T + jnp.eye(s, dtype=params.correlation.dtype)


def shock_cholesky(params: PensionParams) -> Array:
    """Lower Cholesky factor ``L`` of the correlation matrix: ``L @ eps`` has that correlation."""
    return jnp.linalg.cholesky(correlation_matrix(params))


class BondRates(NamedTuple):
    """Affine rate maps of the tenors the returns need."""

    cash: AffineRates  # (1,) the one-month rate
    now: AffineRates  # (B,) rates at the bucket durations D
    later: AffineRates  # (B,) rates at D - dt


def bond_queries(params: PensionParams) -> np.ndarray:
    """The static tenors the returns need: ``[dt, D_1 .. D_B, D_1 - dt .. D_B - dt]``."""
    durations = np.asarray(params.bond_durations, dtype=float)
    return np.concatenate([[DT], durations, durations - DT])


def split_bond_rates(rates: AffineRates, n_bonds: int) -> BondRates:
    """Split the affine maps at ``bond_queries`` into cash, ``D`` and ``D - dt`` parts."""
    return BondRates(
        cash=rates.take(0, 1), now=rates.take(1, 1 + n_bonds), later=rates.take(1 + n_bonds, 1 + 2 * n_bonds)
    )


def bond_rates(params: PensionParams) -> BondRates:
    """The affine maps (computed once per rollout) for cash and the bond buckets."""
    rates = affine_rates(bond_queries(params), params.tenors, params.key_rates, params.ns_decay)
    return split_bond_rates(rates, len(params.bond_durations))


def cash_return(rates: BondRates, factors: Array) -> Array:
    """Gross monthly return of cash, ``exp(z_m(dt) dt)``, shape ``(...)`` for factors ``(..., 3)``."""
    z = rates.cash.base[0] + factors @ rates.cash.load[0]
    return jnp.exp(z * DT)


def bond_returns(params: PensionParams, rates: BondRates, factors: Array, next_factors: Array) -> Array:
    """Gross monthly returns of the bond buckets, ``P_{m+1}(D - dt) / P_m(D)``.

    Args:
        params: problem parameters (static bucket durations).
        rates: ``bond_rates(params)``.
        factors: ``(..., 3)`` factors at the start of the month.
        next_factors: ``(..., 3)`` factors at the end of the month.
    """
    durations = jnp.asarray(params.bond_durations, factors.dtype)
    z_now = rates.now.base + factors @ rates.now.load.T
    z_later = rates.later.base + next_factors @ rates.later.load.T
    return jnp.exp(z_now * durations - z_later * (durations - DT))


def risky_returns(params: PensionParams, shocks: Array) -> Array:
    """Gross monthly returns of the lognormal assets.

    Args:
        shocks: ``(..., R)`` correlated standard normal shocks of the risky assets.

    Returns:
        ``(..., R)`` gross returns ``exp((mu - vol^2 / 2) dt + vol sqrt(dt) shock)``.
    """
    vol = params.risky_vol
    return jnp.exp((params.risky_mean - 0.5 * vol**2) * DT + vol * np.sqrt(DT) * shocks)
