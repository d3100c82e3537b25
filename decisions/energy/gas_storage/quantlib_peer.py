"""QuantLib's finite-difference storage engine on our problem: the peer of the gas storage bench."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from decisions.energy.gas_storage.scenario import DAYS_PER_YEAR, ExponentialOU, Scenario, TerminalRule
from decisions.errors import InputError

PUBLISHED_TEST_VALUE = 69.5755
"""QuantLib's cached value of its simple-storage test (``vpp.cpp``), checked to 5e-2 there."""

QUANTLIB_INSTANCE: dict[str, Any] = {
    "prices": {"model": "exponential_ou", "speed": 1.0, "volatility": 0.5, "level": 3.0, "initial": math.exp(3.0)},
    "horizon_days": 366,
    "facility": {
        "max_inventory": 50.0, "max_injection": 1.0, "max_withdrawal": 1.0, "injection_cost": 0.0,
        "withdrawal_cost": 0.0, "terminal": "spot_value", "discount_rate": 0.1,
    },
}
"""QuantLib's storage test on our daily grid:"""


@dataclass(frozen=True)
class FdGrid:
    """Resolution of the finite-difference solve."""

    x_points: int = 200
    """Log-price grid points (QuantLib's test: 25)."""
    steps_per_day: int = 4
    """Time steps between two exercise dates (QuantLib's test: 1)."""


COARSE_GRID = FdGrid(x_points=25, steps_per_day=1)
"""The grid of QuantLib's own test."""


def available() -> bool:
    """Whether QuantLib is importable (the ``peers`` extra)."""
    try:
        import QuantLib  # noqa: F401
    except ImportError:
        return False
    return True


def _check_scenario(scenario: Scenario) -> ExponentialOU:
    """The scenario's exponential-OU process, or an ``InputError`` naming what QuantLib's engine cannot express."""
    fac = scenario.facility
    if not isinstance(scenario.prices, ExponentialOU):
        raise InputError("scenario", "prices.model: QuantLib's storage engine needs 'exponential_ou'")
    problems = [
        (fac.terminal is not TerminalRule.SPOT_VALUE, "facility.terminal: must be 'spot_value'"),
        (fac.min_inventory != 0.0, "facility.min_inventory: must be 0"),
        (not isinstance(fac.max_injection, float) or fac.max_injection != fac.max_withdrawal,
         "facility.max_injection: must be one constant rate equal to max_withdrawal"),
        (fac.injection_cost != 0.0 or fac.withdrawal_cost != 0.0, "facility.injection_cost: costs must be 0"),
    ]
    for failed, message in problems:
        if failed:
            raise InputError("scenario", f"{message} for QuantLib's storage engine")
    return scenario.prices


def _storage_levels(capacity: float, rate: float) -> list[float]:
    """The engine's "elevator" inventory mesh: multiples of the rate up from 0 and down from capacity."""
    levels = {capacity}
    for k in range(int(capacity / rate) + 1):
        levels.update((k * rate, capacity - k * rate))
    return sorted(v for v in levels if 0.0 <= v <= capacity)


def fd_value(
    *,
    log_x0: float,
    level: float,
    speed: float,
    volatility: float,
    rate: float,
    exercise_times: list[float],
    capacity: float,
    change_rate: float,
    load: float,
    grid: FdGrid,
    day_count: Any = None,
) -> float:
    """The storage value by QuantLib's finite-difference engine, assembled from its Python pieces.

    Args:
        log_x0, level, speed, volatility: ``d ln S = speed (level - ln S) dt + volatility dW``.
        exercise_times: decision times in years (the last is expiry, where gas is worth the spot).
        capacity, change_rate, load: facility (inventory in ``[0, capacity]``, at most
            ``change_rate`` in or out per exercise, ``load`` held at the start).
        day_count: the yield curve's day counter (default Actual/365 Fixed).

    Returns:
        The value at ``t = 0``, ``ln S = log_x0``, inventory ``load``.
    """
    import QuantLib as ql

    maturity = exercise_times[-1]
    today = ql.Settings.instance().evaluationDate
    curve = ql.FlatForward(today, ql.QuoteHandle(ql.SimpleQuote(rate)), day_count or ql.Actual365Fixed(), ql.Continuous)
    process = ql.OrnsteinUhlenbeckProcess(speed, volatility, log_x0, level)
    mesher = ql.FdmMesherComposite(
        ql.FdmSimpleProcess1dMesher(grid.x_points, process, maturity),
        ql.Predefined1dMesher(_storage_levels(capacity, change_rate)),
    )

    class _GasValue:
        """Terminal value: inventory x spot (the engine's ``FdmStorageValue``)."""

        def innerValue(self, it: Any, t: float) -> float:  # noqa: N802 (QuantLib's callback name)
            return math.exp(mesher.location(it, 0)) * mesher.location(it, 1)

        def avgInnerValue(self, it: Any, t: float) -> float:  # noqa: N802
            return self.innerValue(it, t)

    spot = ql.FdmLogInnerValue(ql.PlainVanillaPayoff(ql.Option.Call, 0.0), mesher, 0)
    storage = ql.FdmSimpleStorageCondition(exercise_times, mesher, spot, change_rate)
    conditions = ql.FdmStepConditionComposite(exercise_times, ql.FdmStepConditionVector([storage]))
    steps = grid.steps_per_day * (len(exercise_times) - 1) if grid.steps_per_day > 1 else 1
    description = ql.FdmSolverDesc(
        mesher, ql.FdmBoundaryConditionSet(), conditions, ql.FdmInnerValueCalculatorProxy(_GasValue()),
        maturity, steps, 0,
    )
    operator = ql.FdmOrnsteinUhlenbeckOp(mesher, process, curve, 0)
    solver = ql.Fdm2DimSolver(description, ql.FdmSchemeDesc.Douglas(), operator)
    return float(solver.interpolateAt(log_x0, load))


def fd_storage_value(scenario: Scenario, grid: FdGrid = FdGrid()) -> tuple[float, float]:
    """QuantLib's value of ``scenario`` on our time grid, and the seconds it took.

    Raises:
        InputError: (field ``scenario``) a feature QuantLib's simple storage engine lacks
            (another price model, costs, ratchets, a required end inventory...).
    """
    process = _check_scenario(scenario)
    fac = scenario.facility
    times = [day / DAYS_PER_YEAR for day in range(scenario.horizon)]
    started = time.perf_counter()
    value = fd_value(
        log_x0=math.log(process.initial), level=process.level, speed=process.speed,
        volatility=process.volatility, rate=fac.discount_rate, exercise_times=times,
        capacity=fac.max_inventory, change_rate=float(fac.max_injection), load=fac.start_inventory, grid=grid,
    )
    return value, time.perf_counter() - started


def published_test_value() -> float:
    """QuantLib's own storage test through ``fd_value``: its dates, day counter and grid (``PUBLISHED_TEST_VALUE``)."""
    import QuantLib as ql

    settlement = ql.Date(18, ql.December, 2011)
    ql.Settings.instance().evaluationDate = settlement
    day_count = ql.ActualActual(ql.ActualActual.ISDA)
    maturity = settlement + ql.Period(12, ql.Months)
    dates = [settlement + ql.Period(1, ql.Days)]
    while dates[-1] < maturity:
        dates.append(dates[-1] + ql.Period(1, ql.Days))
    return fd_value(
        log_x0=3.0, level=3.0, speed=1.0, volatility=0.5, rate=0.1,
        exercise_times=[day_count.yearFraction(settlement, d) for d in dates],
        capacity=50.0, change_rate=1.0, load=0.0, grid=COARSE_GRID, day_count=day_count,
    )
