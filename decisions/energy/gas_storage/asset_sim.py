"""A simulated storage facility for the monitor's proof (``decisions.platform.drift``): the run's own
price model drives each day's spot and forward curve, the deployed policy's move is executed on the
inventory, and a decision's outcome is tomorrow's spot (today's on the horizon's last day), as
``decide.OUTCOME`` says.

The facility repeats the run's contract: after the horizon's last day a new one starts on day 0 from
the facility's start inventory and the model's day-0 factor. From decision ``shift_at`` on, the price
factor's volatility is doubled (each one-day shock is twice the model's), so the spread of tomorrow's
spot around the model's 95% interval doubles while its centre stays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from decisions.energy.gas_storage.facility import inventory_band
from decisions.energy.gas_storage.params import GasStorageParams, PriceKind, to_params
from decisions.energy.gas_storage.prices import daily_step, forward_view, initial_factor, spot
from decisions.energy.gas_storage.scenario import Scenario
from decisions.errors import InputError
from decisions.kit.decide import Decision
from decisions.kit.run_files import SCENARIO_STEM, saved_settings

VOLATILITY_FACTOR = 2.0
"""How much the price factor's volatility is multiplied by from the shift on."""

Step = tuple[dict[str, Any], Callable[[Decision], float]]


def _prices(params: GasStorageParams, factor: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each day's spot ``(D,)`` and forward curve seen that day ``(D, D)`` on one factor path."""
    days = jnp.arange(params.horizon)
    x = jnp.asarray(factor, params.forward.dtype)
    spots = spot(days, x, params)
    curves = jax.vmap(forward_view, in_axes=(0, 0, None))(days, x, params)
    return np.asarray(spots, np.float64), np.asarray(curves, np.float64)


def _factor_path(params: GasStorageParams, rng: np.random.Generator, first: int, shift_at: int | None) -> np.ndarray:
    """One contract's factor path ``(D,)`` from the model's day-0 factor; the step out of global decision
    ``first + t`` is scaled by ``VOLATILITY_FACTOR`` when that decision is at or after ``shift_at``."""
    phi, sd = (float(v) for v in daily_step(params))
    horizon = params.horizon
    shocks = rng.standard_normal(horizon - 1)
    scale = np.full(horizon - 1, sd)
    if shift_at is not None:
        scale[first + np.arange(horizon - 1) >= shift_at] *= VOLATILITY_FACTOR
    x = np.empty(horizon)
    x[0] = float(initial_factor(params))
    for t in range(horizon - 1):
        x[t + 1] = phi * x[t] + scale[t] * shocks[t]
    return x


def asset_steps(run_folder: Path, *, seed: int, shift_at: int | None = None) -> Iterator[Step]:
    """The facility's days, endlessly: each day's state (plain JSON, ``decide.STATE_MODEL``'s fields)
    and ``realise(decision)``, which executes the decision's move and gives its outcome. Call
    ``realise`` before taking the next day.

    Raises:
        InputError: (``run``) the run saved no scenario, or its prices are deterministic (no
            volatility to shift).
    """
    params = to_params(saved_settings(run_folder, SCENARIO_STEM, Scenario))
    if params.price_kind is PriceKind.DETERMINISTIC:
        raise InputError("run", "its prices are deterministic: there is no volatility to shift")
    low, high = (np.asarray(b, np.float64) for b in inventory_band(params))
    rng = np.random.default_rng(seed)
    horizon, decision = params.horizon, 0
    while True:
        spots, curves = _prices(params, _factor_path(params, rng, decision, shift_at))
        inventory = float(params.start_inventory)
        for day in range(horizon):
            state = {"day": day, "inventory": inventory, "forward_curve": curves[day, day:].tolist(),
                     "spot": float(spots[day])}
            moved: list[float] = []

            def realise(found: Decision, outcome: float = float(spots[min(day + 1, horizon - 1)]),
                        moved: list[float] = moved) -> float:
                moved.append(float(found.action["net_injection"]))
                return outcome

            yield state, realise
            if not moved:
                raise RuntimeError("realise the day's decision before taking the next day")
            inventory = float(np.clip(inventory + moved[0], low[day + 1], high[day + 1]))
            decision += 1
