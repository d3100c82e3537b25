"""``BuildingEnv``: home batteries on the CityLearn 2022 data, as a functional (gymnax-style) environment."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.env_steps import time_limit_step
from decisions.core.spaces import Box, Discrete, Space
from decisions.energy.building import observation
from decisions.energy.building.params import BuildingParams, to_params
from decisions.energy.building.scenario import Scenario, Split

OBS_MARGIN = 1e-3
"""Padding of the observation bounds, so float32 rounding never steps outside them."""


def meter_bill(total: Array, price: Array, feed_in_price: Array, carbon: Array) -> tuple[Array, Array]:
    """The shared meter's bill of one hour's ``total`` net grid energy (kWh, + import): ``(cost $,
    emissions kg)``, imports at ``price`` less exports at ``feed_in_price``, emissions of the imports."""
    imported = jnp.maximum(total, 0.0)
    return price * imported - feed_in_price * jnp.maximum(-total, 0.0), carbon * imported


@struct.dataclass
class BuildingState:
    """State of ``BuildingEnv``."""

    t: Array  # () int32, data row of the hour about to be decided
    steps: Array  # () int32, steps taken in this episode
    energy: Array  # (N,) float32, stored energy, kWh
    capacity: Array  # (N,) float32, current capacity (after fade), kWh
    prev_net: Array  # (N,) float32, each home's net grid energy of the previous hour, kWh


def hour_reward(net: Array, base: Array, price: Array, carbon: Array, params: Any) -> tuple[Array, Array, Array]:
    """The hour's meter bill and emissions of the homes' net loads ``net`` (summed at the meter), and the
    reward: minus ``reward_scale`` times the bill plus priced emissions, less ``relative_reward`` times
    those of ``base`` (the batteries idle). ``params`` holds the tariff's ``feed_in_price`` and the
    reward's ``carbon_price``, ``reward_scale`` and ``relative_reward``."""
    cost, emissions = meter_bill(net.sum(), price, params.feed_in_price, carbon)
    base_cost, base_emissions = meter_bill(base.sum(), price, params.feed_in_price, carbon)
    penalty = cost + params.carbon_price * emissions
    base_penalty = base_cost + params.carbon_price * base_emissions
    return cost, emissions, -params.reward_scale * (penalty - params.relative_reward * base_penalty)


class BuildingEnv(Environment[BuildingState, BuildingParams]):
    """Battery control for ``num_buildings`` homes (``N``, static) sharing one meter and one price.

    ``num_levels``: None for continuous actions, or ``K >= 2`` evenly spaced discrete levels in ``[-1, 1]``
    (one home only).

    Raises:
        ValueError: ``num_buildings < 1``, ``num_levels < 2``, or discrete levels with several homes.
    """

    def __init__(self, num_buildings: int = 1, *, num_levels: int | None = None) -> None:
        if int(num_buildings) != num_buildings or num_buildings < 1:
            raise ValueError(f"num_buildings must be a positive integer, got {num_buildings!r}")
        if num_levels is not None:
            if int(num_levels) != num_levels or num_levels < 2:
                raise ValueError(f"num_levels must be an integer >= 2, got {num_levels!r}")
            if num_buildings != 1:
                raise ValueError("discrete actions (num_levels) need num_buildings == 1")
        self.num_buildings = int(num_buildings)
        self.num_levels = None if num_levels is None else int(num_levels)

    @classmethod
    def from_scenario(
        cls, scenario: Scenario, split: Split | str = Split.TRAIN, *, num_levels: int | None = None
    ) -> tuple[BuildingEnv, BuildingParams]:
        """The environment and its params for a validated scenario.

        Args:
            scenario: validated scenario (its ``buildings`` fix ``N``).
            split: which months ``reset`` draws episodes from.
            num_levels: discrete action levels, or ``None`` for continuous actions.
        """
        return cls(scenario.num_buildings, num_levels=num_levels), to_params(scenario, split)

    @property
    def name(self) -> str:
        """``BuildingEnv`` or ``DistrictEnv-N``."""
        return "BuildingEnv" if self.num_buildings == 1 else f"DistrictEnv-{self.num_buildings}"

    @property
    def default_params(self) -> BuildingParams:
        """Params of the default scenario on homes ``1..N``, training split."""
        return to_params(Scenario(buildings=tuple(range(1, self.num_buildings + 1))), Split.TRAIN)

    def feature_names(self) -> tuple[str, ...]:
        """Name of every observation entry, in order (see ``observation.py``)."""
        return observation.feature_names(self.num_buildings)

    def feature_index(self, name: str) -> int:
        """Position of a named feature (of ``feature_names()``) in the observation; ``KeyError`` if none."""
        names = self.feature_names()
        if name not in names:
            raise KeyError(f"no observation feature {name!r}; features: {', '.join(names)}")
        return names.index(name)

    def observation_space(self, params: BuildingParams) -> Space:
        """A float32 box bounding every feature over the data year (padded by ``OBS_MARGIN``)."""
        base = params.load - params.pv  # (T, N)
        per_low = jnp.stack(
            [params.load.min(0), params.pv.min(0), jnp.zeros_like(params.power), base.min(0) - params.power],
            axis=1,
        )
        per_high = jnp.stack(
            [params.load.max(0), params.pv.max(0), jnp.ones_like(params.power), base.max(0) + params.power],
            axis=1,
        )
        low = jnp.concatenate([params.features.min(0), per_low.reshape(-1)]) - OBS_MARGIN
        high = jnp.concatenate([params.features.max(0), per_high.reshape(-1)]) + OBS_MARGIN
        size = observation.observation_size(self.num_buildings)
        return Box(
            low=low.astype(jnp.float32), high=high.astype(jnp.float32), shape=(size,), dtype=jnp.float32
        )

    def action_space(self, params: BuildingParams) -> Space:
        """``Box(-1, 1, (N,))``, or ``Discrete(num_levels)``."""
        if self.num_levels is not None:
            return Discrete(self.num_levels)
        return Box(low=-1.0, high=1.0, shape=(self.num_buildings,), dtype=jnp.float32)

    def action_fraction(self, action: Array) -> Array:
        """Map an action to the requested fraction of nominal power per home: ``(N,)`` float32."""
        if self.num_levels is not None:
            level = jnp.clip(jnp.asarray(action), 0, self.num_levels - 1).astype(jnp.float32)
            return jnp.reshape(-1.0 + 2.0 * level / (self.num_levels - 1), (1,))
        return jnp.clip(jnp.reshape(jnp.asarray(action, jnp.float32), (self.num_buildings,)), -1.0, 1.0)

    def _check(self, params: BuildingParams) -> None:
        """Refuse params built for another number of homes (a static shape check, at trace time)."""
        if params.num_buildings != self.num_buildings:
            raise ValueError(
                f"params hold {params.num_buildings} homes but the environment has num_buildings="
                f"{self.num_buildings}; build both with BuildingEnv.from_scenario"
            )

    def _observe(self, state: BuildingState, params: BuildingParams) -> Array:
        t = jnp.minimum(state.t, params.num_hours - 1)
        per_home = jnp.stack(
            [params.load[t], params.pv[t], state.energy / state.capacity, state.prev_net], axis=1
        )  # (N, 4)
        return jnp.concatenate([params.features[t], per_home.reshape(-1)]).astype(jnp.float32)

    def reset_at(self, start_hour: Array | int, params: BuildingParams) -> tuple[Array, BuildingState]:
        """Start an episode at data row ``start_hour`` (deterministic): ``(obs, state)``, batteries at ``initial_soc``, new capacity."""
        self._check(params)
        t = jnp.asarray(start_hour, jnp.int32)
        before = jnp.maximum(t - 1, 0)
        state = BuildingState(
            t=t,
            steps=jnp.zeros((), jnp.int32),
            energy=params.initial_soc * params.capacity,
            capacity=params.capacity,
            prev_net=params.load[before] - params.pv[before],
        )
        return self._observe(state, params), state

    def reset(self, key: PRNGKey, params: BuildingParams) -> tuple[Array, BuildingState]:
        """Start an episode at midnight of a random day of the split.

        Args:
            key: PRNG key choosing the start day.
        """
        index = jax.random.randint(key, (), 0, params.num_starts)
        return self.reset_at(params.start_hours[index], params)

    def step(
        self, key: PRNGKey, state: BuildingState, action: Array, params: BuildingParams
    ) -> tuple[Array, BuildingState, Array, Array, Array, Info]:
        """Apply the battery action (``(N,)`` fractions in ``[-1, 1]``, clipped, or a discrete level) for one hour and bill the meter.

        Returns ``(obs, state, reward, terminated, truncated, info)``; ``info`` holds float32 ``cost`` and
        ``emissions`` (scalars) and per home ``(N,)`` ``net_load``, ``battery`` (charge - discharge) and ``soc``.
        """
        del key
        self._check(params)
        t = jnp.minimum(state.t, params.num_hours - 1)
        move = params.battery_step(self.action_fraction(action), state.energy, state.capacity)
        base = params.load[t] - params.pv[t]  # (N,)
        battery = move.charge - move.discharge
        net = base + battery
        cost, emissions, reward = hour_reward(net, base, params.price[t], params.carbon[t], params)
        new_state = BuildingState(
            t=state.t + 1,
            steps=state.steps + 1,
            energy=move.energy,
            capacity=move.capacity,
            prev_net=net,
        )
        info = {
            "cost": cost.astype(jnp.float32),
            "emissions": emissions.astype(jnp.float32),
            "net_load": net,
            "battery": battery,
            "soc": move.energy / move.capacity,
        }
        truncated = new_state.steps >= params.episode_length
        return time_limit_step(self._observe(new_state, params), new_state, reward, truncated, info)
