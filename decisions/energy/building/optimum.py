"""Perfect-foresight optimum: the LP schedule that minimises the bill over a window."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import pyomo.environ as pyo

from decisions.core.optimal import SolveStatus, solve
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.windows import Window

TIE_BREAK = 1e-6
"""$/kWh charged or discharged added to the LP objective to rule out simultaneous charge and discharge."""


@dataclass(frozen=True, eq=False)
class OptimumResult:
    """The optimal schedule over a window (numpy float64; ``T`` hours, ``N`` homes)."""

    window: Window
    """The optimised window."""
    objective: float
    """Cost + carbon_price x emissions of the schedule, $ (without the tie-break term)."""
    cost: float
    """Bill of the schedule, $."""
    emissions: float
    """Emissions of the schedule, kg CO2."""
    charge: np.ndarray  # (T, N) kWh drawn to charge
    discharge: np.ndarray  # (T, N) kWh delivered by discharging
    energy: np.ndarray  # (T + 1, N) kWh stored before each hour (last: after the window)
    imports: np.ndarray  # (T,) kWh
    exports: np.ndarray  # (T,) kWh
    status: SolveStatus
    """OPTIMAL (an LP that a time limit stops raises ``SolveError`` instead)."""
    solve_seconds: float
    """Model build + solver wall time."""

    def actions(self, params: BuildingParams) -> np.ndarray:
        """The schedule as environment actions, ``(charge - discharge) / power``: ``(T, N)`` float32."""
        power = np.asarray(params.power, dtype=np.float64)
        return ((self.charge - self.discharge) / power[None, :]).astype(np.float32)


def window_data(params: BuildingParams, window: Window) -> dict[str, np.ndarray]:
    """The window's series and the battery constants as float64 numpy arrays.

    Returns:
        ``base`` (T, N) = load - pv, ``price``, ``carbon`` (T,), and the ``(N,)`` battery constants.
    """
    rows = window.rows

    def arr(x: object) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)

    return {
        "base": arr(params.load)[rows] - arr(params.pv)[rows],
        "price": arr(params.price)[rows],
        "carbon": arr(params.carbon)[rows],
        **{
            name: arr(getattr(params, name))
            for name in (
                "capacity",
                "power",
                "charge_efficiency",
                "discharge_efficiency",
                "soc_min",
                "soc_max",
                "initial_soc",
            )
        },
        "feed_in_price": arr(params.feed_in_price),
        "carbon_price": arr(params.carbon_price),
    }


def schedule_lp(
    data: dict[str, np.ndarray], initial_energy: np.ndarray, *, tie_break: float = TIE_BREAK
) -> pyo.ConcreteModel:
    """Build the LP of the module docstring for ``data`` (``window_data``, or with forecasts for MPC),
    from ``initial_energy`` (``(N,)`` kWh), with ``tie_break`` $/kWh of throughput in the objective.
    Variables ``c, d, e, imp, exp``, indexed ``[b, t]`` / ``[t]``.
    """
    base = data["base"]
    hours, homes = base.shape
    m = pyo.ConcreteModel(name="building_perfect_foresight")
    m.T = pyo.RangeSet(0, hours - 1)
    m.S = pyo.RangeSet(0, hours)
    m.B = pyo.RangeSet(0, homes - 1)
    power, cap = data["power"], data["capacity"]
    m.c = pyo.Var(m.B, m.T, bounds=lambda _, b, t: (0.0, power[b]))
    m.d = pyo.Var(m.B, m.T, bounds=lambda _, b, t: (0.0, power[b]))
    m.e = pyo.Var(m.B, m.S, bounds=lambda _, b, s: (data["soc_min"][b] * cap[b], data["soc_max"][b] * cap[b]))
    m.imp = pyo.Var(m.T, within=pyo.NonNegativeReals)
    m.exp = pyo.Var(m.T, within=pyo.NonNegativeReals)
    for b in range(homes):
        m.e[b, 0].fix(float(initial_energy[b]))
    eta_c, eta_d = data["charge_efficiency"], data["discharge_efficiency"]
    m.balance = pyo.Constraint(
        m.B,
        m.T,
        rule=lambda m, b, t: m.e[b, t + 1] == m.e[b, t] + eta_c[b] * m.c[b, t] - m.d[b, t] / eta_d[b],
    )
    m.meter = pyo.Constraint(
        m.T,
        rule=lambda m, t: (
            m.imp[t] - m.exp[t] == float(base[t].sum()) + sum(m.c[b, t] - m.d[b, t] for b in range(homes))
        ),
    )
    unit = data["price"] + float(data["carbon_price"]) * data["carbon"]
    feed_in = float(data["feed_in_price"])
    m.objective = pyo.Objective(
        expr=sum(unit[t] * m.imp[t] - feed_in * m.exp[t] for t in range(hours))
        + tie_break * sum(m.c[b, t] + m.d[b, t] for b in range(homes) for t in range(hours)),
        sense=pyo.minimize,
    )
    return m


def _values(var: pyo.Var, homes: int, steps: int) -> np.ndarray:
    return np.array([[pyo.value(var[b, t]) for b in range(homes)] for t in range(steps)], dtype=np.float64)


def perfect_foresight(
    params: BuildingParams, window: Window, *, time_limit: float | None = None
) -> OptimumResult:
    """Solve the perfect-foresight LP over ``window`` (pyomo + HiGHS via ``core.optimal.solve``).

    The battery starts at ``initial_soc``; an LP stopped by ``time_limit`` (seconds; None:
    ``core.optimal.DEFAULT_TIME_LIMIT``) raises ``SolveError``. ``actions(params)`` of the result
    replays it in the environment.
    """
    started = time.perf_counter()
    data = window_data(params, window)
    model = schedule_lp(data, data["initial_soc"] * data["capacity"])
    result = solve(model, time_limit=time_limit)
    hours, homes = data["base"].shape
    charge, discharge = _values(model.c, homes, hours), _values(model.d, homes, hours)
    charge, discharge = np.maximum(charge, 0.0), np.maximum(discharge, 0.0)
    imports = np.array([pyo.value(model.imp[t]) for t in range(hours)])
    exports = np.array([pyo.value(model.exp[t]) for t in range(hours)])
    cost = float(np.sum(data["price"] * imports) - float(data["feed_in_price"]) * np.sum(exports))
    emissions = float(np.sum(data["carbon"] * imports))
    return OptimumResult(
        window=window,
        objective=cost + float(data["carbon_price"]) * emissions,
        cost=cost,
        emissions=emissions,
        charge=charge,
        discharge=discharge,
        energy=_values(model.e, homes, hours + 1),
        imports=imports,
        exports=exports,
        status=result.status,
        solve_seconds=time.perf_counter() - started,
    )
