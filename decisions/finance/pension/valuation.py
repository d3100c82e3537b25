"""Cash-flow valuation on a key-rate zero curve, for analysts: PV, key-rate durations, DV01, duration, convexity."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.curve import zero_rates
from decisions.finance.pension.liabilities import benefit_cash_flows, payment_times
from decisions.finance.pension.scenario import Scenario

ArrayLike = Array | np.ndarray | list[float]


def present_value(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """Present value of cash flows on the interpolated zero curve.

    Args:
        cash_flows: ``(n,)`` amounts.
        times: ``(n,)`` payment times in years (>= 0).
        tenors: ``(K,)`` increasing key tenors.
        rates: ``(K,)`` zero rates at the key tenors (continuous compounding).
    """
    rates = jnp.asarray(rates)
    t = jnp.asarray(times, rates.dtype)
    z = zero_rates(t, tenors, rates)
    return jnp.sum(jnp.asarray(cash_flows, rates.dtype) * jnp.exp(-z * t))


def _shifted_pv(shift: Array, cash_flows: Array, times: Array, tenors: Array, rates: Array) -> Array:
    return present_value(cash_flows, times, tenors, rates + shift)


def key_rate_deltas(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """``dPV / dr_k`` for every key rate ``(K,)`` (currency per unit of rate)."""
    return jax.grad(present_value, argnums=3)(cash_flows, times, tenors, jnp.asarray(rates))


def key_rate_durations(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """Key-rate durations ``-dPV / dr_k / PV`` ``(K,)``; they sum to the modified duration."""
    pv = present_value(cash_flows, times, tenors, rates)
    return -key_rate_deltas(cash_flows, times, tenors, rates) / pv


def modified_duration(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """``-dPV/ds / PV`` for a parallel shift ``s`` of the curve (years)."""
    rates = jnp.asarray(rates)
    zero = jnp.zeros((), rates.dtype)
    pv, slope = jax.value_and_grad(_shifted_pv)(zero, cash_flows, times, tenors, rates)
    return -slope / pv


def macaulay_duration(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """PV-weighted mean payment time ``sum t CF DF / PV`` (years)."""
    rates = jnp.asarray(rates)
    t = jnp.asarray(times, rates.dtype)
    pvs = jnp.asarray(cash_flows, rates.dtype) * jnp.exp(-zero_rates(t, tenors, rates) * t)
    return jnp.sum(t * pvs) / jnp.sum(pvs)


def dv01(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """PV gain for a one-basis-point parallel fall of the curve: ``modified duration x PV x 1e-4``."""
    rates = jnp.asarray(rates)
    zero = jnp.zeros((), rates.dtype)
    return -jax.grad(_shifted_pv)(zero, cash_flows, times, tenors, rates) * 1e-4


def convexity(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """``d^2 PV / ds^2 / PV`` for a parallel shift (years^2), by ``jax.jvp`` of ``jax.grad``."""
    rates = jnp.asarray(rates)
    zero = jnp.zeros((), rates.dtype)
    first = jax.grad(_shifted_pv)

    def slope(s: Array) -> Array:
        return first(s, cash_flows, times, tenors, rates)

    _, second = jax.jvp(slope, (zero,), (jnp.ones((), rates.dtype),))
    return second / present_value(cash_flows, times, tenors, rates)


def key_rate_convexity(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> Array:
    """``d^2 PV / dr_i dr_j / PV`` ``(K, K)`` by ``jax.hessian``; its total sum is ``convexity``."""
    rates = jnp.asarray(rates)
    hess = jax.hessian(present_value, argnums=3)(cash_flows, times, tenors, rates)
    return hess / present_value(cash_flows, times, tenors, rates)


@dataclass(frozen=True)
class CurveRisk:
    """Present value and interest-rate risk of a cash-flow vector.

    Attributes:
        present_value: PV on the curve.
        dv01: PV gain for a 1 bp parallel fall.
        modified_duration: ``-dPV/ds / PV`` (years).
        macaulay_duration: PV-weighted mean time (years; equals the modified duration here).
        convexity: ``d^2 PV/ds^2 / PV`` (years^2).
        key_rate_durations: ``(K,)`` ``-dPV/dr_k / PV``.
        tenors: ``(K,)`` key tenors.
    """

    present_value: float
    dv01: float
    modified_duration: float
    macaulay_duration: float
    convexity: float
    key_rate_durations: np.ndarray
    tenors: np.ndarray

    def key_rate_table(self) -> pd.DataFrame:
        """Columns ``tenor, key_rate_duration, dv01`` (the PV gain for a 1 bp fall of that key rate)."""
        return pd.DataFrame(
            {
                "tenor": self.tenors,
                "key_rate_duration": self.key_rate_durations,
                "dv01": self.key_rate_durations * self.present_value * 1e-4,
            }
        )

    def summary(self) -> dict[str, float]:
        """The scalar measures by name."""
        return {
            "present_value": self.present_value,
            "dv01": self.dv01,
            "modified_duration": self.modified_duration,
            "macaulay_duration": self.macaulay_duration,
            "convexity": self.convexity,
        }


@partial(jax.jit)
def _risk(cash_flows: Array, times: Array, tenors: Array, rates: Array) -> tuple[Array, ...]:
    return (
        present_value(cash_flows, times, tenors, rates),
        dv01(cash_flows, times, tenors, rates),
        modified_duration(cash_flows, times, tenors, rates),
        macaulay_duration(cash_flows, times, tenors, rates),
        convexity(cash_flows, times, tenors, rates),
        key_rate_durations(cash_flows, times, tenors, rates),
    )


def curve_risk(cash_flows: ArrayLike, times: ArrayLike, tenors: ArrayLike, rates: ArrayLike) -> CurveRisk:
    """Every risk measure of a cash-flow vector in one jitted call.

    Args:
        cash_flows: ``(n,)`` amounts.
        times: ``(n,)`` payment times (years).
        tenors: ``(K,)`` key tenors.
        rates: ``(K,)`` key zero rates.
    """
    rates = jnp.asarray(rates)
    dtype = rates.dtype
    out = _risk(
        jnp.asarray(cash_flows, dtype), jnp.asarray(times, dtype), jnp.asarray(tenors, dtype), rates
    )
    pv, d01, mod, mac, conv, krd = (np.asarray(x) for x in out)
    return CurveRisk(
        present_value=float(pv), dv01=float(d01), modified_duration=float(mod), macaulay_duration=float(mac),
        convexity=float(conv), key_rate_durations=krd, tenors=np.asarray(tenors, dtype=float),
    )


def liability_cash_flows(scenario: Scenario) -> pd.DataFrame:
    """The scheme's projected benefit cash flows (exact monthly grid).

    Returns:
        Columns ``time`` (years) and ``cash_flow``.
    """
    params = to_params(scenario)
    return pd.DataFrame(
        {"time": payment_times(params), "cash_flow": np.asarray(benefit_cash_flows(params), dtype=float)}
    )


def liability_risk(scenario: Scenario) -> CurveRisk:
    """PV, DV01, durations, convexity and key-rate durations of the scheme's liability today.

    Args:
        scenario: validated scenario (population, mortality, curve).

    Returns:
        The ``CurveRisk`` of the projected benefit cash flows on today's curve.
    """
    flows = liability_cash_flows(scenario)
    return curve_risk(flows["cash_flow"].to_numpy(), flows["time"].to_numpy(), scenario.curve.tenors, scenario.curve.rates)
