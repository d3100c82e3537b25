"""Run any controller through ``BuildingEnv`` over an evaluation window: one scorer for all."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.energy.building.dataset import load_district
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.windows import Window

Controller = Callable[[Array], Array]
"""``controller(obs) -> action``: a pure, jit-able function of one observation."""

PyTree = Any


@dataclass(frozen=True, eq=False)
class Trajectory:
    """Per-hour results of a controller over a window (numpy; ``T`` hours, ``N`` homes)."""

    window: Window
    """The simulated window."""
    load: np.ndarray  # (T, N) kWh
    pv: np.ndarray  # (T, N) kWh
    net_load: np.ndarray  # (T, N) kWh, each home's net grid energy (+ import)
    battery: np.ndarray  # (T, N) kWh, charge - discharge on the grid side
    soc: np.ndarray  # (T, N) SoC after the hour
    price: np.ndarray  # (T,) $/kWh
    carbon: np.ndarray  # (T,) kg CO2/kWh
    cost: np.ndarray  # (T,) $, the meter's bill of the hour
    emissions: np.ndarray  # (T,) kg CO2
    reward: np.ndarray  # (T,) environment reward
    observations: np.ndarray | None = None  # (T, F) what the controller saw (None for a fixed schedule)
    actions: np.ndarray | None = None  # (T, ...) what the controller chose (None for a fixed schedule)
    month: np.ndarray | None = None  # (T,) int, calendar month of each hour (None: the shipped year's at the rows)
    hour: np.ndarray | None = None  # (T,) int, hour of the day, 1-24 (None: as ``month``)
    date_ordinal: np.ndarray | None = None  # (T,) int, ``date.toordinal()`` of each hour's date (None: as ``month``)

    def calendar(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(month, hour, date ordinal)`` of each hour, ``(T,)`` int each: the trajectory's own, else
        the shipped year's at the window's rows."""
        if self.month is not None and self.hour is not None and self.date_ordinal is not None:
            return self.month, self.hour, self.date_ordinal
        district, rows = load_district(), self.window.rows
        return district.month[rows], district.hour[rows], district.ordinals[rows]

    @property
    def district_net_load(self) -> np.ndarray:
        """Net grid energy at the meter (sum over homes): ``(T,)`` kWh."""
        return self.net_load.sum(axis=1)

    @property
    def total_cost(self) -> float:
        """Bill over the window, $."""
        return float(self.cost.sum())

    @property
    def total_emissions(self) -> float:
        """Emissions over the window, kg CO2."""
        return float(self.emissions.sum())

    def to_frame(self) -> pd.DataFrame:
        """The per-hour table at the meter.

        Returns:
            One row per hour with ``row`` (data row), ``date``, ``month``, ``hour``, ``price``,
            ``carbon``, ``load``, ``pv``, ``net_load``, ``battery`` (sums over homes, kWh),
            ``soc`` (mean over homes), ``cost`` ($) and ``emissions`` (kg CO2).
        """
        month, hour, ordinals = self.calendar()
        return pd.DataFrame(
            {
                "row": self.window.rows,
                "date": pd.to_datetime([date.fromordinal(int(o)) for o in ordinals]),
                "month": month,
                "hour": hour,
                "price": self.price,
                "carbon": self.carbon,
                "load": self.load.sum(axis=1),
                "pv": self.pv.sum(axis=1),
                "net_load": self.district_net_load,
                "battery": self.battery.sum(axis=1),
                "soc": self.soc.mean(axis=1),
                "cost": self.cost,
                "emissions": self.emissions,
            }
        )


def _check_window(params: BuildingParams, window: Window) -> None:
    if window.num_hours < 1 or window.start_hour < 0 or window.stop > params.num_hours:
        raise ValueError(
            f"window rows {window.start_hour}..{window.stop - 1} are not inside the data (0..{params.num_hours - 1})"
        )


def _trajectory(
    window: Window, params: BuildingParams, infos: dict[str, Array], rewards: Array
) -> Trajectory:
    rows = window.rows
    as_np = {k: np.asarray(v, dtype=np.float64) for k, v in infos.items()}
    observed = infos.get("obs")
    return Trajectory(
        window=window,
        load=np.asarray(params.load, dtype=np.float64)[rows],
        pv=np.asarray(params.pv, dtype=np.float64)[rows],
        net_load=as_np["net_load"],
        battery=as_np["battery"],
        soc=as_np["soc"],
        price=np.asarray(params.price, dtype=np.float64)[rows],
        carbon=np.asarray(params.carbon, dtype=np.float64)[rows],
        cost=as_np["cost"],
        emissions=as_np["emissions"],
        reward=np.asarray(rewards, dtype=np.float64),
        observations=None if observed is None else np.asarray(observed, dtype=np.float32),
        actions=as_np.get("action"),
        month=np.asarray(params.month, dtype=np.int64)[rows],
        hour=np.asarray(params.hour, dtype=np.int64)[rows],
        date_ordinal=np.asarray(params.date_ordinal, dtype=np.int64)[rows],
    )


def simulate(env: BuildingEnv, params: BuildingParams, controller: Controller, window: Window) -> Trajectory:
    """Run a jit-able ``controller(obs) -> action`` deterministically over ``window`` (the params' split does not matter).

    Raises:
        ValueError: the window is not inside the data.
    """
    _check_window(params, window)
    infos, rewards = _run_controller(env, controller, params, jnp.int32(window.start_hour), window.num_hours)
    return _trajectory(window, params, infos, rewards)


def simulate_actions(
    env: BuildingEnv, params: BuildingParams, actions: Array | np.ndarray, window: Window
) -> Trajectory:
    """Run a fixed action schedule (e.g. an LP's) over a window.

    Args:
        actions: ``(window.num_hours, *action_shape)`` actions, one per hour.

    Raises:
        ValueError: the window is not inside the data, or the schedule has the wrong length.
    """
    _check_window(params, window)
    actions = jnp.asarray(actions)
    if actions.shape[0] != window.num_hours:
        raise ValueError(f"actions: {actions.shape[0]} rows for a window of {window.num_hours} hours")
    infos, rewards = _run_schedule(env, params, actions, jnp.int32(window.start_hour))
    return _trajectory(window, params, infos, rewards)


def agent_controller(
    policy: Callable[[PyTree, Array, Array], Array], policy_params: PyTree, seed: int = 0
) -> Controller:
    """Wrap an agent's ``policy(params, obs, key)`` (``core.agents``) as a controller.

    Args:
        policy: the agent's policy function (deterministic ones ignore the key).
        seed: seed of the fixed key passed to the policy.
    """
    key = jax.random.PRNGKey(seed)
    return lambda obs: policy(policy_params, obs, key)


@partial(jax.jit, static_argnums=(0, 1, 4))
def _run_controller(
    env: BuildingEnv, controller: Controller, params: BuildingParams, start: Array, num_hours: int
) -> tuple[dict[str, Array], Array]:
    """Scan ``num_hours`` steps of ``controller`` from ``reset_at(start)`` (compiled once per env/controller)."""
    obs, state = env.reset_at(start, params)
    key = jax.random.PRNGKey(0)

    def hour(carry: tuple[Array, Any], _: None) -> tuple[tuple[Array, Any], tuple[dict[str, Array], Array]]:
        obs, state = carry
        action = controller(obs)
        next_obs, state, reward, _, _, info = env.step(key, state, action, params)
        return (next_obs, state), ({**info, "obs": obs, "action": jnp.asarray(action, jnp.float32)}, reward)

    _, (infos, rewards) = jax.lax.scan(hour, (obs, state), None, length=num_hours)
    return infos, rewards


@partial(jax.jit, static_argnums=(0,))
def _run_schedule(
    env: BuildingEnv, params: BuildingParams, actions: Array, start: Array
) -> tuple[dict[str, Array], Array]:
    """Scan a fixed action schedule from ``reset_at(start)``."""
    _, state = env.reset_at(start, params)
    key = jax.random.PRNGKey(0)

    def hour(state: Any, action: Array) -> tuple[Any, tuple[dict[str, Array], Array]]:
        _, state, reward, _, _, info = env.step(key, state, action, params)
        return state, (info, reward)

    _, (infos, rewards) = jax.lax.scan(hour, state, actions)
    return infos, rewards
