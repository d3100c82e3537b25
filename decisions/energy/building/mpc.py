"""Model predictive control: re-solve the schedule LP over the next 24 h every hour, apply the first hour."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from decisions.core.optimal import solve
from decisions.energy.building.optimum import schedule_lp, window_data
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.schedule_lp import first_move
from decisions.energy.building.windows import Window

DAY = 24


@jax.jit
def _advance(fraction: jax.Array, energy: jax.Array, capacity: jax.Array, params: BuildingParams) -> tuple:
    move = params.battery_step(fraction, energy, capacity)
    return move.energy, move.capacity


def mpc_actions(params: BuildingParams, window: Window, *, horizon: int = DAY) -> np.ndarray:
    """The MPC schedule over ``window`` (the battery starts at ``initial_soc``) with a ``horizon``
    of 1-24 hours look-ahead, as ``(window.num_hours, N)`` float32 actions for ``simulate.simulate_actions``.
    One home's LPs are solved in matrix form (``schedule_lp.first_move``); several homes on one meter
    through the pyomo model (their LP has ties between homes, which the two forms may break apart).

    Raises:
        ValueError: ``horizon`` outside 1-24.
    """
    if not 1 <= horizon <= DAY:
        raise ValueError(f"horizon must lie in 1-{DAY}, got {horizon}")
    total = params.num_hours
    full = window_data(params, Window(0, total))
    base = full["base"]
    energy = jnp.asarray(params.initial_soc * params.capacity)
    capacity = jnp.asarray(params.capacity)
    power = np.asarray(params.power, dtype=np.float64)
    actions = np.zeros((window.num_hours, base.shape[1]), dtype=np.float32)
    for k, t in enumerate(window.rows):
        steps = min(horizon, total - t)
        rows = np.arange(t, t + steps)
        forecast = np.where((rows - DAY >= 0)[:, None], base[np.maximum(rows - DAY, 0)], base[rows])
        forecast[0] = base[t]  # the current hour is observed
        cap = np.asarray(capacity, dtype=np.float64)
        data = {
            **full,
            "base": forecast,
            "price": full["price"][rows],
            "carbon": full["carbon"][rows],
            "capacity": cap,  # plan with the current (faded) capacity
        }
        stored = np.clip(np.asarray(energy, dtype=np.float64), data["soc_min"] * cap, data["soc_max"] * cap)
        first = first_move(data, stored) if base.shape[1] == 1 else _pyomo_first_move(data, stored)
        actions[k] = (first / power).astype(np.float32)
        energy, capacity = _advance(jnp.asarray(actions[k]), energy, capacity, params)
    return actions


def _pyomo_first_move(data: dict[str, np.ndarray], stored: np.ndarray) -> np.ndarray:
    """The first hour's ``charge - discharge`` (kWh, ``(N,)``) of ``optimum.schedule_lp`` solved through pyomo."""
    model = schedule_lp(data, stored)
    solve(model)
    return np.array([model.c[b, 0].value - model.d[b, 0].value for b in range(data["base"].shape[1])])
