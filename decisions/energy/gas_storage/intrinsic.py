"""Intrinsic value of a storage facility: the optimal schedule against a fixed forward curve."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pyomo.environ as pyo
from jax import Array
from numpy.typing import ArrayLike

from decisions.core.optimal import SolveError, SolveStatus, duals, solve
from decisions.energy.gas_storage.params import GasStorageParams
from decisions.energy.gas_storage.prices import discount_factors, implied_forward
from decisions.energy.gas_storage.scenario import Scenario, TerminalRule
from decisions.energy.gas_storage.valuation import path_values

_CONCAVITY_TOL = 1e-9


class Formulation(enum.Enum):
    """How the rate limits enter the optimisation model."""

    LP = "lp"
    """Constant rates or concave ratchets: rate limits are linear constraints (exact LP)."""
    MILP = "milp"
    """Non-concave ratchets: one binary per day and inventory segment (exact MILP)."""


@dataclass(frozen=True)
class IntrinsicResult:
    """Optimal intrinsic schedule and its by-products (numpy, float64)."""

    value: float
    """Optimal discounted intrinsic value."""
    forward: np.ndarray  # (D,) the forward curve the schedule was optimised on
    injection: np.ndarray  # (D,) i_t >= 0
    withdrawal: np.ndarray  # (D,) w_t >= 0
    inventory: np.ndarray  # (D + 1,) V_t, inventory before day t's move (V_D after the last)
    sensitivity: np.ndarray  # (D,) dV*/dF_t by the envelope theorem
    discount: np.ndarray  # (D,) discount factor DF_t
    balance_duals: np.ndarray | None  # (D,) dual of V_{t+1} - V_t - i_t + w_t = 0 (LP only)
    """Marginal value (discounted to day 0) of one more unit in store after day t's move."""
    formulation: Formulation
    """LP or MILP (see the module docstring)."""
    status: SolveStatus
    """OPTIMAL, or FEASIBLE when a time limit stopped the solver."""
    solve_seconds: float
    """Solver wall time."""

    @property
    def net_injection(self) -> np.ndarray:
        """Schedule as net injection ``i_t - w_t`` (negative = withdrawal): shape ``(D,)``."""
        return self.injection - self.withdrawal

    def to_frame(self, scenario: Scenario) -> pd.DataFrame:
        """One tidy row per day.

        Args:
            scenario: the scenario the result was computed for (supplies the dates).

        Returns:
            DataFrame with columns ``date, forward, discount, injection, withdrawal,
            net_injection, inventory_start, inventory`` (after the move),
            ``sensitivity`` and ``balance_dual`` (NaN for a MILP).
        """
        horizon = self.forward.shape[0]
        dual = self.balance_duals if self.balance_duals is not None else np.full(horizon, np.nan)
        return pd.DataFrame(
            {
                "date": pd.to_datetime(scenario.dates[:horizon]),
                "forward": self.forward,
                "discount": self.discount,
                "injection": self.injection,
                "withdrawal": self.withdrawal,
                "net_injection": self.net_injection,
                "inventory_start": self.inventory[:-1],
                "inventory": self.inventory[1:],
                "sensitivity": self.sensitivity,
                "balance_dual": dual,
            }
        )


@dataclass(frozen=True)
class _Segments:
    """A rate restricted to ``[min, max]`` as consecutive linear pieces ``rate = a + b V``."""

    lower: np.ndarray  # (K,) left end of each segment
    upper: np.ndarray  # (K,) right end of each segment
    intercept: np.ndarray  # (K,) a_k
    slope: np.ndarray  # (K,) b_k

    @property
    def constant(self) -> bool:
        return bool(np.all(np.abs(self.slope) <= _CONCAVITY_TOL))

    @property
    def concave(self) -> bool:
        return bool(np.all(np.diff(self.slope) <= _CONCAVITY_TOL))


def _segments(knots: np.ndarray, rates: np.ndarray, breaks: np.ndarray) -> _Segments:
    """Pieces of ``interp(V, knots, rates)`` between consecutive ``breaks``."""
    values = np.interp(breaks, knots, rates)
    slope = np.diff(values) / np.diff(breaks)
    return _Segments(breaks[:-1], breaks[1:], values[:-1] - slope * breaks[:-1], slope)


def _breaks(params: GasStorageParams) -> np.ndarray:
    """Union of both rates' knots inside ``[min, max]``, with the two ends: shape ``(K + 1,)``."""
    lo, hi = float(params.min_inventory), float(params.max_inventory)
    knots = np.concatenate([np.asarray(params.injection_knots), np.asarray(params.withdrawal_knots)])
    inner = knots[(knots > lo) & (knots < hi)].astype(float)
    return np.unique(np.concatenate([[lo, hi], inner]))


def choose_formulation(params: GasStorageParams) -> Formulation:
    """LP when every rate is constant or a concave ratchet on ``[min, max]``, else MILP."""
    rates = _rate_segments(params, _breaks(params))
    return Formulation.LP if all(s.concave for s in rates.values()) else Formulation.MILP


def _rate_segments(params: GasStorageParams, breaks: np.ndarray) -> dict[str, _Segments]:
    """The injection (``inj``) and withdrawal (``wd``) rate curves as segments between ``breaks``."""
    return {
        "inj": _segments(
            np.asarray(params.injection_knots, float), np.asarray(params.injection_rates, float), breaks
        ),
        "wd": _segments(
            np.asarray(params.withdrawal_knots, float), np.asarray(params.withdrawal_rates, float), breaks
        ),
    }


def build_model(params: GasStorageParams, forward: np.ndarray, formulation: Formulation) -> pyo.ConcreteModel:
    """The intrinsic LP/MILP as a pyomo model (not solved).

    Args:
        params: problem parameters (rates, bounds, costs, terminal rule).
        forward: ``(D,)`` forward curve to optimise against.
        formulation: LP (rates must be constant or concave) or MILP.

    Returns:
        A ``ConcreteModel`` with variables ``inj, wd`` (days) and ``inv`` (days + 1), the
        indexed constraint ``balance`` (one per day) and the objective ``value``.
    """
    horizon = forward.shape[0]
    df = np.asarray(discount_factors(params), float)
    lo, hi = float(params.min_inventory), float(params.max_inventory)
    ci, cw = float(params.injection_cost), float(params.withdrawal_cost)
    breaks = _breaks(params)
    rates = _rate_segments(params, breaks)

    m = pyo.ConcreteModel(name="gas_storage_intrinsic")
    m.T = pyo.RangeSet(0, horizon - 1)
    m.V = pyo.RangeSet(0, horizon)
    m.inj = pyo.Var(m.T, within=pyo.NonNegativeReals)
    m.wd = pyo.Var(m.T, within=pyo.NonNegativeReals)
    m.inv = pyo.Var(m.V, bounds=(lo, hi))
    m.inv[0].fix(float(params.start_inventory))
    if params.terminal is TerminalRule.REQUIRED:
        m.inv[horizon].fix(float(params.end_inventory))

    m.balance = pyo.Constraint(m.T, rule=lambda b, t: b.inv[t + 1] - b.inv[t] - b.inj[t] + b.wd[t] == 0)

    use_milp = formulation is Formulation.MILP
    if formulation is Formulation.LP and not all(s.concave for s in rates.values()):
        raise ValueError("formulation: LP needs constant or concave rates; use Formulation.MILP")
    if use_milp:
        m.K = pyo.RangeSet(0, breaks.shape[0] - 2)
        m.seg = pyo.Var(m.T, m.K, within=pyo.Binary)
        m.part = pyo.Var(m.T, m.K, within=pyo.NonNegativeReals)
        m.one_seg = pyo.Constraint(m.T, rule=lambda b, t: sum(b.seg[t, k] for k in b.K) == 1)
        m.split = pyo.Constraint(m.T, rule=lambda b, t: b.inv[t] == sum(b.part[t, k] for k in b.K))
        m.part_lo = pyo.Constraint(m.T, m.K, rule=lambda b, t, k: b.part[t, k] >= breaks[k] * b.seg[t, k])
        m.part_hi = pyo.Constraint(m.T, m.K, rule=lambda b, t, k: b.part[t, k] <= breaks[k + 1] * b.seg[t, k])

    _add_rate_limits(m, rates, use_milp)

    cash = sum(
        df[t] * (forward[t] * (m.wd[t] - m.inj[t]) - ci * m.inj[t] - cw * m.wd[t]) for t in range(horizon)
    )
    if params.terminal is TerminalRule.SPOT_VALUE:
        cash = cash + df[-1] * forward[-1] * m.inv[horizon]
    m.value = pyo.Objective(expr=cash, sense=pyo.maximize)
    return m


def _add_rate_limits(m: pyo.ConcreteModel, rates: dict[str, _Segments], use_milp: bool) -> None:
    """Bound each day's injection and withdrawal by its rate curve: a bound when constant, one
    cut per segment when concave (LP), else through the MILP's segment binaries."""
    for name, seg in rates.items():
        var = getattr(m, name)
        if seg.constant:
            for t in m.T:
                var[t].setub(float(seg.intercept[0]))
        elif seg.concave and not use_milp:
            keys = pyo.RangeSet(0, seg.slope.shape[0] - 1)
            m.add_component(f"{name}_ratchet_index", keys)
            m.add_component(
                f"{name}_ratchet",
                pyo.Constraint(
                    m.T,
                    keys,
                    rule=lambda b, t, k, v=var, s=seg: v[t] <= s.intercept[k] + s.slope[k] * b.inv[t],
                ),
            )
        else:
            m.add_component(
                f"{name}_ratchet",
                pyo.Constraint(
                    m.T,
                    rule=lambda b, t, v=var, s=seg: (
                        v[t] <= sum(s.intercept[k] * b.seg[t, k] + s.slope[k] * b.part[t, k] for k in b.K)
                    ),
                ),
            )


def solve_intrinsic(
    params: GasStorageParams,
    forward: ArrayLike | None = None,
    *,
    formulation: Formulation | None = None,
    time_limit: float | None = None,
) -> IntrinsicResult:
    """Solve the intrinsic problem with pyomo + HiGHS.

    Args:
        forward: ``(D,)`` forward curve; default the day-0 curve ``prices.implied_forward(params)``.
        formulation: LP or MILP; default ``choose_formulation(params)``.
        time_limit: solver wall-clock limit in seconds (None: ``core.optimal.DEFAULT_TIME_LIMIT``,
            ``math.inf``: none).

    Returns:
        The ``IntrinsicResult`` (value, schedule, inventory, sensitivities, duals).

    Raises:
        decisions.core.optimal.SolveError: (or a subclass) the solver found no schedule (infeasible,
            stopped at the time limit, or a NaN / huge number in the model), naming the scenario.
    """
    curve = np.asarray(implied_forward(params) if forward is None else forward, dtype=float)
    chosen = choose_formulation(params) if formulation is None else formulation
    model = build_model(params, curve, chosen)
    try:
        result = solve(model, time_limit=time_limit)
    except SolveError as exc:
        raise type(exc)(
            f"intrinsic {chosen.value.upper()} of the gas storage scenario ({curve.shape[0]} days, "
            f"inventory {float(params.min_inventory):g}-{float(params.max_inventory):g}): {exc}"
        ) from None
    horizon = curve.shape[0]
    inj = np.array([pyo.value(model.inj[t]) for t in range(horizon)], float)
    wd = np.array([pyo.value(model.wd[t]) for t in range(horizon)], float)
    inv = np.array([pyo.value(model.inv[t]) for t in range(horizon + 1)], float)
    df = np.asarray(discount_factors(params), float)
    sensitivity = df * (wd - inj) + 0.0
    if params.terminal is TerminalRule.SPOT_VALUE:
        sensitivity[-1] += df[-1] * inv[-1]
    is_lp = model.component("seg") is None
    balance = duals(model, model.balance) if is_lp else None
    return IntrinsicResult(
        value=result.objective, status=result.status, solve_seconds=result.solve_seconds,
        formulation=Formulation.LP if is_lp else Formulation.MILP,
        forward=curve, discount=df, injection=inj, withdrawal=wd, inventory=inv,
        sensitivity=sensitivity, balance_duals=balance,
    )


def intrinsic_values_on_paths(result: IntrinsicResult, spots: Array, params: GasStorageParams) -> Array:
    """Value of the fixed intrinsic schedule on simulated paths (the "static intrinsic" baseline).

    Args:
        spots: ``(P, D)`` spot prices.

    Returns:
        ``(P,)`` discounted path values via ``valuation.path_values``.
    """
    schedule = jnp.broadcast_to(jnp.asarray(result.net_injection, spots.dtype), spots.shape)
    return path_values(schedule, spots, params)
