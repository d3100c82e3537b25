"""Simple controllers that every agent is compared with: no battery and a rule-based controller."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.observation import NUM_PER_BUILDING, NUM_SHARED
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.simulate import Controller


def no_battery_controller(env: BuildingEnv) -> Controller:
    """A controller that never uses the battery (the KPI reference).

    Args:
        env: the environment (continuous actions: zeros; discrete: the level closest to 0).
    """
    if env.num_levels is not None:
        idle = jnp.asarray((env.num_levels - 1) // 2, jnp.int32)
        return lambda obs: idle
    zeros = jnp.zeros((env.num_buildings,), jnp.float32)
    return lambda obs: zeros


def rule_based_controller(
    env: BuildingEnv,
    params: BuildingParams,
    *,
    cheap: float | None = None,
    expensive: float | None = None,
    target_soc: float = 0.9,
) -> Controller:
    """The rule-based controller of the module docstring: ``controller(obs) -> action`` of shape ``(N,)``.

    ``params`` supply the tariff's range and each battery's power; grid charging towards
    ``target_soc`` is allowed at or below ``cheap`` ($/kWh; default a quarter of the range), the
    battery covers the load at or above ``expensive`` (default the middle of the range).

    Raises:
        ValueError: the environment has discrete actions.
    """
    if env.num_levels is not None:
        raise ValueError("rule_based_controller needs continuous actions (num_levels=None)")
    price = np.asarray(params.price, dtype=np.float64)
    low, high = float(price.min()), float(price.max())
    cheap = low + 0.25 * (high - low) if cheap is None else cheap
    expensive = low + 0.5 * (high - low) if expensive is None else expensive
    power = jnp.asarray(params.power)
    capacity = jnp.asarray(params.capacity)
    n = env.num_buildings
    i_price = env.feature_index("price_usd_per_kwh")
    i_ahead = env.feature_index("price_6h_usd_per_kwh")

    def controller(obs: Array) -> Array:
        homes = obs[NUM_SHARED:].reshape(n, NUM_PER_BUILDING)
        load, pv, soc = homes[:, 0], homes[:, 1], homes[:, 2]
        price_now, price_ahead = obs[i_price], obs[i_ahead]
        deficit = (load - pv) / power
        top_up = (target_soc - soc) * capacity / power
        follow = (price_now >= expensive) | (deficit < 0)  # cover the deficit, or store the surplus
        grid_charge = (price_now <= cheap) & (price_ahead >= expensive)
        action = jnp.where(follow, -deficit, jnp.where(grid_charge, jnp.maximum(top_up, 0.0), 0.0))
        return jnp.clip(action, -1.0, 1.0).astype(jnp.float32)

    return controller
