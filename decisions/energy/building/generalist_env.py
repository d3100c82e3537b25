"""``GeneralistEnv``: one home's battery per environment, the home drawn from a set at each reset, its
observation scaled by the home's own battery so that one policy reads every home alike.

The observation is ``observation.SHARED_FEATURES`` (calendar, price and its 6/12/24 h forecasts, carbon,
weather and its forecasts: the same for every home), then ``HOME_FEATURES``: the hour's load and PV, the
state of charge and the previous hour's net load, yesterday's load and PV over the next 6, 12 and 24 hours
(the persistence forecast the MPC plans with), and the home's characteristics (battery power, PV size,
typical daily load and PV). Energies are fractions of the home's battery capacity, powers fractions
of it per hour. The action is the fraction of the home's battery power, as in ``BuildingEnv``, with a
discharge cut to the home's own net load (``GeneralistEnv.step``).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.core.env import Info, PRNGKey
from decisions.core.spaces import Box, Space
from decisions.energy.building import observation
from decisions.energy.building.battery import battery_step
from decisions.energy.building.dataset import FORECAST_HORIZONS
from decisions.energy.building.env import BuildingEnv, BuildingState, hour_reward
from decisions.energy.building.params import BuildingParams, to_params
from decisions.energy.building.scenario import Scenario, Split

DAY = 24

_TAGS = tuple(f"{h}h" for h in FORECAST_HORIZONS)

HOME_FEATURES: tuple[str, ...] = (
    "load_per_capacity",
    "pv_per_capacity",
    "soc",
    "prev_net_load_per_capacity",
    *(f"load_yesterday_next_{tag}_per_capacity" for tag in _TAGS),
    *(f"pv_yesterday_next_{tag}_per_capacity" for tag in _TAGS),
    "power_per_capacity",
    "pv_kw_per_capacity",
    "daily_load_per_capacity",
    "daily_pv_per_capacity",
)
"""Per-home observation entries after the shared features, in order (energies / battery capacity)."""

NUM_FORECASTS = 2 * len(FORECAST_HORIZONS)
NUM_TRAITS = 4


@struct.dataclass
class GeneralistParams(BuildingParams):
    """``BuildingParams`` of ``H`` homes (``load``, ``pv`` ``(T, H)``, battery constants ``(H,)``; no
    shared meter: each environment runs one of them), plus what the generalist observes of each."""

    forecast: Array  # (T, H, NUM_FORECASTS) float32, yesterday's load then PV over the next 6/12/24 h, / capacity
    traits: Array  # (H, NUM_TRAITS) float32, power, PV kW, mean daily load and PV (training rows), / capacity


@struct.dataclass
class GeneralistState(BuildingState):
    """``BuildingState`` of one home (``N = 1``) and which home of the params it is."""

    home: Array  # () int32, index of the home in the params


def persistence_forecast(series: np.ndarray) -> np.ndarray:
    """Yesterday's values summed over the next ``FORECAST_HORIZONS`` hours, per row: ``(T, H, 3)``.

    Row ``t``, horizon ``h``: ``sum(series[t - 24 + k] for k in 1..h)``, reading the row itself where
    ``t - 24 + k`` falls before the data (as ``mpc.mpc_actions`` does).
    """
    total = series.shape[0]
    out = np.zeros((total, series.shape[1], len(FORECAST_HORIZONS)))
    rows = np.arange(total)
    running = np.zeros_like(series, dtype=np.float64)
    ends = dict(zip(FORECAST_HORIZONS, range(len(FORECAST_HORIZONS)), strict=True))
    for k in range(1, max(FORECAST_HORIZONS) + 1):
        ahead = np.minimum(rows + k, total - 1)
        source = np.where(ahead - DAY >= 0, ahead - DAY, ahead)
        running = running + series[source]
        if k in ends:
            out[:, :, ends[k]] = running
    return out


def generalist_params(homes: Sequence[int], split: Split | str, base: Scenario | None = None) -> GeneralistParams:
    """The params of ``homes`` (building ids) on ``base``'s tariff and months (default: the default
    scenario with ``relative_reward``), episodes drawn from ``split``; the traits' typical load and PV
    are each home's mean over the training rows (never the held-out months)."""
    scenario = (base or Scenario(relative_reward=True)).model_copy(
        update={"buildings": tuple(homes), "reward_scale": 1.0}
    )
    scenario = Scenario.model_validate(scenario.model_dump())
    params = to_params(scenario, split)
    load = np.asarray(params.load, dtype=np.float64)
    pv = np.asarray(params.pv, dtype=np.float64)
    capacity = np.asarray(params.capacity, dtype=np.float64)
    train = scenario.split_rows(Split.TRAIN)
    forecast = np.concatenate([persistence_forecast(load), persistence_forecast(pv)], axis=2) / capacity[None, :, None]
    traits = np.stack(
        [
            np.asarray(params.power, dtype=np.float64),
            scenario.data().pv_kw[scenario.indices],
            DAY * load[train].mean(axis=0),
            DAY * pv[train].mean(axis=0),
        ],
        axis=1,
    ) / capacity[:, None]
    fields = {name: getattr(params, name) for name in BuildingParams.__dataclass_fields__}
    return GeneralistParams(
        **fields,
        forecast=jnp.asarray(forecast, jnp.float32),
        traits=jnp.asarray(traits, jnp.float32),
    )


def home_params(params: GeneralistParams, home: int) -> GeneralistParams:
    """The one-home params of the ``home``-th home of ``params`` (for scoring one home, ``simulate``)."""
    per_home = {"load", "pv", "capacity", "power", "charge_efficiency", "discharge_efficiency", "soc_min",
                "soc_max", "initial_soc", "capacity_fade"}
    update = {name: getattr(params, name)[..., home : home + 1] for name in per_home}
    return params.replace(
        **update, forecast=params.forecast[:, home : home + 1], traits=params.traits[home : home + 1]
    )


class GeneralistEnv(BuildingEnv):
    """One home's battery (continuous action, ``(1,)``) per environment; ``reset`` draws the home
    uniformly from the params' homes and the start day from the split; ``reset_at`` takes the home."""

    def __init__(self) -> None:
        super().__init__(1)

    @property
    def name(self) -> str:
        """``GeneralistEnv``."""
        return "GeneralistEnv"

    @property
    def default_params(self) -> GeneralistParams:
        """Params of homes 1 and 2, training split."""
        return generalist_params((1, 2), Split.TRAIN)

    def feature_names(self) -> tuple[str, ...]:
        """Name of every observation entry, in order (shared features, then ``HOME_FEATURES``)."""
        return (*(name for name, _ in observation.SHARED_FEATURES), *HOME_FEATURES)

    def observation_space(self, params: BuildingParams) -> Space:
        """An unbounded float32 box of ``len(feature_names())`` entries."""
        size = len(self.feature_names())
        return Box(low=-jnp.inf, high=jnp.inf, shape=(size,), dtype=jnp.float32)

    def _check(self, params: BuildingParams) -> None:
        if not isinstance(params, GeneralistParams):
            raise ValueError("GeneralistEnv needs GeneralistParams (generalist_params)")

    def _observe(self, state: BuildingState, params: BuildingParams) -> Array:
        assert isinstance(state, GeneralistState) and isinstance(params, GeneralistParams)
        t = jnp.minimum(state.t, params.num_hours - 1)
        h = state.home
        scale = params.capacity[h]
        per_home = jnp.stack(
            [params.load[t, h] / scale, params.pv[t, h] / scale, state.energy[0] / state.capacity[0],
             state.prev_net[0] / scale]
        )
        return jnp.concatenate([params.features[t], per_home, params.forecast[t, h], params.traits[h]]).astype(
            jnp.float32
        )

    def reset_at(
        self, start_hour: Array | int, params: BuildingParams, home: Array | int = 0
    ) -> tuple[Array, GeneralistState]:
        """Start an episode of home ``home`` at data row ``start_hour``: battery at ``initial_soc``, new capacity."""
        self._check(params)
        t = jnp.asarray(start_hour, jnp.int32)
        h = jnp.asarray(home, jnp.int32)
        before = jnp.maximum(t - 1, 0)
        capacity = params.capacity[h][None]
        state = GeneralistState(
            t=t,
            steps=jnp.zeros((), jnp.int32),
            energy=params.initial_soc[h][None] * capacity,
            capacity=capacity,
            prev_net=(params.load[before, h] - params.pv[before, h])[None],
            home=h,
        )
        return self._observe(state, params), state

    def reset(self, key: PRNGKey, params: BuildingParams) -> tuple[Array, GeneralistState]:
        """Start an episode of a random home at midnight of a random day of the split."""
        home_key, day_key = jax.random.split(key)
        home = jax.random.randint(home_key, (), 0, params.load.shape[1])
        index = jax.random.randint(day_key, (), 0, params.num_starts)
        return self.reset_at(params.start_hours[index], params, home)

    def step(
        self, key: PRNGKey, state: BuildingState, action: Array, params: BuildingParams
    ) -> tuple[Array, GeneralistState, Array, Array, Array, Info]:
        """One hour of the state's home, as ``BuildingEnv.step`` with that home alone on the meter, except that a
        discharge is cut to the home's net load (``load - pv``, none when PV covers it): energy sent from the
        battery to the grid earns the feed-in price, at most the lowest import price, so it never pays."""
        del key
        self._check(params)
        assert isinstance(state, GeneralistState)
        h = state.home
        t = jnp.minimum(state.t, params.num_hours - 1)
        base = (params.load[t, h] - params.pv[t, h])[None]
        power = params.power[h][None]
        fraction = jnp.maximum(self.action_fraction(action), -jnp.maximum(base, 0.0) / power)  # no discharge to export
        move = battery_step(
            fraction, state.energy, state.capacity,
            nominal_capacity=params.capacity[h][None], power=power,
            charge_efficiency=params.charge_efficiency[h][None],
            discharge_efficiency=params.discharge_efficiency[h][None],
            soc_min=params.soc_min[h][None], soc_max=params.soc_max[h][None],
            capacity_fade=params.capacity_fade[h][None],
        )
        net = base + move.charge - move.discharge
        cost, emissions, reward = hour_reward(net, base, params.price[t], params.carbon[t], params)
        new_state = GeneralistState(
            t=state.t + 1, steps=state.steps + 1, energy=move.energy, capacity=move.capacity, prev_net=net, home=h
        )
        info = {
            "cost": cost.astype(jnp.float32),
            "emissions": emissions.astype(jnp.float32),
            "net_load": net,
            "battery": move.charge - move.discharge,
            "soc": move.energy / move.capacity,
        }
        truncated = new_state.steps >= params.episode_length
        return self._observe(new_state, params), new_state, reward.astype(jnp.float32), jnp.asarray(False), truncated, info
