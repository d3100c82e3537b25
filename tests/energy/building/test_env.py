"""The environment contract: shapes, one step by hand, truncation, splits, vmap over homes, jit, gymnasium."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from decisions.core.gym_adapter import GymnasiumEnv
from decisions.core.spaces import Box, Discrete
from decisions.core.wrappers import AutoResetEnv, VmapEnv
from decisions.energy.building.dataset import load_district
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.observation import NUM_SHARED, feature_names
from decisions.energy.building.params import per_building_params, to_params
from decisions.energy.building.scenario import Scenario

KEY = jax.random.PRNGKey(0)
SCENARIO = Scenario(buildings=4, episode_hours=24)


@pytest.fixture(scope="module")
def single() -> tuple[BuildingEnv, object]:
    return BuildingEnv.from_scenario(SCENARIO)


def test_reset_and_step_shapes(single) -> None:
    env, params = single
    obs, state = env.reset(KEY, params)
    assert obs.shape == (27,) and obs.dtype == jnp.float32
    assert len(env.feature_names()) == 27 and env.feature_names()[-4:] == (
        "load_kwh",
        "pv_kwh",
        "soc",
        "prev_net_load_kwh",
    )
    assert bool(env.observation_space(params).contains(obs))
    assert isinstance(env.action_space(params), Box) and env.action_space(params).shape == (1,)
    obs, state, reward, terminated, truncated, info = env.step(KEY, state, jnp.array([0.3]), params)
    assert obs.shape == (27,) and reward.dtype == jnp.float32 and reward.shape == ()
    assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_
    assert set(info) == {"cost", "emissions", "net_load", "battery", "soc"}
    assert info["net_load"].shape == (1,) and info["cost"].shape == ()


def test_one_step_by_hand(single) -> None:
    env, params = single
    d = load_district()
    t = 745 + 17  # 2016-09-01, hour 18: an expensive hour (0.54 $/kWh)
    obs, state = env.reset_at(t, params)
    assert float(obs[env.feature_index("price_usd_per_kwh")]) == pytest.approx(d.price[t])
    assert float(obs[env.feature_index("load_kwh")]) == pytest.approx(d.load[t, 3])
    # Start empty, charge at half power: 2.5 kWh drawn, 2.5 sqrt(0.9) stored.
    obs, state, reward, _, _, info = env.step(KEY, state, jnp.array([0.5]), params)
    net = d.load[t, 3] - d.pv[t, 3] + 2.5
    cost = d.price[t] * max(net, 0.0)
    assert float(info["net_load"][0]) == pytest.approx(net, abs=1e-5)
    assert float(info["battery"][0]) == pytest.approx(2.5, abs=1e-6)
    assert float(info["cost"]) == pytest.approx(cost, rel=1e-5)
    assert float(info["emissions"]) == pytest.approx(d.carbon_intensity[t] * max(net, 0.0), rel=1e-5)
    assert float(reward) == pytest.approx(-cost, rel=1e-5)  # one home: reward scale 1
    stored = 2.5 * np.sqrt(0.9)
    assert float(info["soc"][0]) == pytest.approx(stored / float(state.capacity[0]), rel=1e-5)
    assert float(obs[env.feature_index("soc")]) == pytest.approx(stored / 6.4, rel=1e-4)
    assert float(obs[env.feature_index("prev_net_load_kwh")]) == pytest.approx(net, abs=1e-5)
    assert int(state.t) == t + 1


def test_relative_reward_and_carbon_price() -> None:
    env, params = BuildingEnv.from_scenario(SCENARIO.model_copy(update={"relative_reward": True}))
    _, state = env.reset_at(800, params)
    _, _, reward, _, _, _ = env.step(KEY, state, jnp.zeros(1), params)
    assert float(reward) == 0.0  # no battery use: no saving
    priced = params.replace(carbon_price=jnp.float32(0.1), relative_reward=jnp.float32(0.0))
    _, _, reward, _, _, info = env.step(KEY, state, jnp.zeros(1), priced)
    assert float(reward) == pytest.approx(-(float(info["cost"]) + 0.1 * float(info["emissions"])), rel=1e-6)


def test_truncation_at_episode_length(single) -> None:
    env, params = single
    _, state = env.reset(KEY, params)
    flags = []
    for _ in range(25):
        _, state, _, terminated, truncated, _ = env.step(KEY, state, jnp.zeros(1), params)
        flags.append((bool(terminated), bool(truncated)))
    assert flags[:23] == [(False, False)] * 23
    assert flags[23] == (False, True)  # the 24th step truncates, nothing terminates


@pytest.mark.parametrize("split", ["train", "eval"])
def test_resets_start_at_midnight_inside_the_split(split: str) -> None:
    env, params = BuildingEnv.from_scenario(Scenario(episode_hours=168), split)
    _, states = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(KEY, 512), params)
    starts = np.asarray(states.t)
    d = load_district()
    months = (9, 10, 11, 12) if split == "eval" else tuple(range(1, 9))
    assert np.all(d.hour[starts] == 1)
    for offset in (0, 167):
        assert np.all(np.isin(d.month[starts + offset], months))
    assert len(np.unique(starts)) > 50  # many different days


def test_vmap_over_buildings_with_batched_params() -> None:
    scenario = Scenario(buildings="district", episode_hours=24)
    batched = per_building_params(scenario)
    env = VmapEnv(BuildingEnv(1), 17, batched_params=True)
    obs, state = env.reset(KEY, batched)
    assert obs.shape == (17, 27)
    obs, state, reward, _, truncated, info = env.step(KEY, state, jnp.full((17, 1), -0.5), batched)
    assert reward.shape == (17,) and info["net_load"].shape == (17, 1)
    # Copy 9 is building 10 alone: the same step as a single-home environment.
    single_env, single_params = BuildingEnv.from_scenario(Scenario(buildings=10, episode_hours=24))
    _, single_state = single_env.reset_at(state.t[9] - 1, single_params)
    _, _, single_reward, _, _, _ = single_env.step(KEY, single_state, jnp.array([-0.5]), single_params)
    assert float(reward[9]) == pytest.approx(float(single_reward), rel=1e-6)


def test_district_shares_one_meter() -> None:
    scenario = Scenario(buildings=(2, 5, 9), episode_hours=24)
    env, params = BuildingEnv.from_scenario(scenario)
    assert env.name == "DistrictEnv-3" and env.action_space(params).shape == (3,)
    assert env.feature_names() == feature_names(3) and env.feature_names()[NUM_SHARED] == "load_kwh[0]"
    obs, state = env.reset_at(1000, params)
    assert obs.shape == (NUM_SHARED + 12,)
    action = jnp.array([1.0, -1.0, 0.0])
    _, _, reward, _, _, info = env.step(KEY, state, action, params)
    net = np.asarray(info["net_load"], dtype=np.float64)
    d = load_district()
    np.testing.assert_allclose(
        net - np.asarray(info["battery"]), d.load[1000, [1, 4, 8]] - d.pv[1000, [1, 4, 8]], atol=1e-5
    )
    assert float(info["cost"]) == pytest.approx(d.price[1000] * max(net.sum(), 0.0), rel=1e-5)
    assert float(reward) == pytest.approx(-float(info["cost"]) / 3, rel=1e-6)  # scale 1 / N


def test_discrete_levels_match_continuous_fractions(single) -> None:
    _, params = single
    discrete = BuildingEnv(1, num_levels=5)
    continuous = BuildingEnv(1)
    assert isinstance(discrete.action_space(params), Discrete) and discrete.action_space(params).n == 5
    _, state = continuous.reset_at(2000, params)
    for level, fraction in [(0, -1.0), (1, -0.5), (2, 0.0), (4, 1.0)]:
        a = discrete.step(KEY, state, jnp.int32(level), params)[-1]
        b = continuous.step(KEY, state, jnp.array([fraction]), params)[-1]
        assert float(a["battery"][0]) == pytest.approx(float(b["battery"][0]))
    with pytest.raises(ValueError, match="num_buildings == 1"):
        BuildingEnv(3, num_levels=5)


def test_params_for_another_number_of_homes_are_refused(single) -> None:
    _, params = single
    with pytest.raises(ValueError, match="params hold 1 homes"):
        BuildingEnv(3).reset(KEY, params)


def test_jit_compiles_once_across_params(single) -> None:
    env, params = single
    traces = []

    def step(state, action, params):
        traces.append(1)
        return env.step(KEY, state, action, params)

    step = jax.jit(step)
    _, state = env.reset_at(100, params)
    other = to_params(
        Scenario(buildings=7, episode_hours=24, battery={"capacity_kwh": 10.0}, tariff="dynamic")
    )
    step(state, jnp.ones(1), params)
    step(state, jnp.ones(1), other)
    assert len(traces) == 1


def test_scan_with_auto_reset_runs_many_episodes(single) -> None:
    env, params = single
    venv = VmapEnv(AutoResetEnv(env), 8)

    @jax.jit
    def rollout(key):
        _, state = venv.reset(key, params)

        def body(state, k):
            _, state, reward, _, truncated, _ = venv.step(k, state, jnp.zeros((8, 1)), params)
            return state, (reward, truncated)

        return jax.lax.scan(body, state, jax.random.split(key, 60))[1]

    rewards, truncated = rollout(KEY)
    assert np.asarray(truncated).sum() == 2 * 8  # 24 h episodes: two ends in 60 steps per copy
    assert np.all(np.asarray(rewards) <= 0)


def test_gymnasium_check_env(single) -> None:
    env, params = single
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(GymnasiumEnv(env, params))
    assert [str(w.message) for w in caught] == []


def test_bench_measures_a_positive_rate() -> None:
    from decisions.energy.building.bench import measure_env_steps_per_second

    assert measure_env_steps_per_second(num_envs=4, num_steps=10, repeats=1) > 0
