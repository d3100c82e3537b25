"""Simulated homes for the monitor's proof (``decisions.platform.drift``): the run's homes hour by hour
on the data year, the state an operator has at the start of an hour, and the hour's bill once it is over.

At the start of an hour the operator knows the calendar, prices, carbon and weather as the data give
them, the batteries' charge and the previous hour's net load; the hour's load and PV are a FORECAST,
``forecast_error.seasonal_forecast`` (each home's mean over the same hour of the days before). The
decision's expected bill and its interval (``decide``) are priced on that forecast and its errors in
the training months; the outcome is the bill on the meter with the hour's actual load and PV and the
battery's move as decided, so unshifted residuals are honest forecast errors.

The shift, from decision ``shift_at`` on: every home's load grows by ``EXTRA_LOAD_KWH`` in each hour from
17:00 to 22:00 (a new electric car charging in the evening) while the forecast keeps the old profile.
The batteries' capacity is taken as nominal every hour, as the decision's expected bill takes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.energy.building.deployable import load_scenario
from decisions.energy.building.env import BuildingEnv, meter_bill
from decisions.energy.building.forecast_error import seasonal_forecast
from decisions.energy.building.hour_state import state_at
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.scenario import Split
from decisions.kit.decide import Decision

EXTRA_LOAD_KWH = 2.0
"""Each home's added load in every evening hour after the shift, kWh."""
EVENING_HOURS = (18, 19, 20, 21, 22)
"""The data's hours (``hour`` h covers (h - 1):00 to h:00) from 17:00 to 22:00."""
SEED_SPACING_HOURS = 24 * 28
"""Hours between the first hours of consecutive seeds (seed 0 starts at the run's first held-out hour)."""

Step = tuple[dict[str, Any], Callable[[Decision], float]]


def _meter(params: BuildingParams) -> Callable[[Array, Array, Array, Array, Array], tuple[Array, Array, Array]]:
    """``(fraction, soc, load, pv, price) -> (bill $, each home's net kWh, each battery's soc after)``
    of one hour on the shared meter, compiled."""

    def meter(fraction: Array, soc: Array, load: Array, pv: Array, price: Array) -> tuple[Array, Array, Array]:
        move = params.battery_step(fraction, soc * params.capacity, params.capacity)
        net = load - pv + move.charge - move.discharge
        cost, _ = meter_bill(net.sum(), price, params.feed_in_price, jnp.zeros(()))
        return cost, net, move.energy / params.capacity

    return jax.jit(meter)


def asset_steps(run_folder: Path, *, seed: int, shift_at: int | None = None) -> Iterator[Step]:
    """The homes' hours, endlessly (wrapping round the data year), from the held-out months' first hour
    plus ``seed * SEED_SPACING_HOURS``: each hour's state (plain JSON, ``decide.STATE_MODEL``'s fields)
    and ``realise(decision)``, which applies the batteries' move and gives the hour's bill. Call
    ``realise`` before taking the next hour.

    Raises:
        InputError: (``run``) the run saved no deployment.
    """
    scenario = load_scenario(run_folder)
    _, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    district = scenario.data()
    load, pv = np.asarray(params.load, np.float64), np.asarray(params.pv, np.float64)
    price = np.asarray(params.price, np.float64)
    meter = _meter(params)
    hours = load.shape[0]
    row = (scenario.eval_window().start_hour + seed * SEED_SPACING_HOURS) % hours
    soc = np.asarray(params.initial_soc, np.float64)
    before = (row - 1) % hours
    previous = load[before] - pv[before]
    decision = 0
    while True:
        state = state_at(params, row, hour=int(district.hour[row]), month=int(district.month[row]),
                         weekend=bool(district.weekend[row]), holiday=bool(district.holiday[row]), soc=soc)
        state.update({"load_kwh": [round(float(v), 6) for v in seasonal_forecast(load, row)],
                      "pv_kwh": [round(float(v), 6) for v in seasonal_forecast(pv, row)],
                      "soc": [round(float(v), 6) for v in np.clip(soc, 0.0, 1.0)],
                      "prev_net_load_kwh": [round(float(v), 6) for v in previous]})
        shifted = shift_at is not None and decision >= shift_at and int(district.hour[row]) in EVENING_HOURS
        actual = load[row] + (EXTRA_LOAD_KWH if shifted else 0.0)
        after: list[tuple[np.ndarray, np.ndarray]] = []

        def realise(found: Decision, row: int = row, actual: np.ndarray = actual, soc: np.ndarray = soc,
                    after: list[tuple[np.ndarray, np.ndarray]] = after) -> float:
            fraction = jnp.asarray(found.action["battery"], jnp.float32)
            cost, net, soc_after = meter(fraction, jnp.asarray(soc, jnp.float32), jnp.asarray(actual, jnp.float32),
                                         jnp.asarray(pv[row], jnp.float32), jnp.asarray(price[row], jnp.float32))
            after.append((np.asarray(net, np.float64), np.asarray(soc_after, np.float64)))
            return float(cost)

        yield state, realise
        if not after:
            raise RuntimeError("realise the hour's decision before taking the next hour")
        previous, soc = after[0]
        row, decision = (row + 1) % hours, decision + 1
