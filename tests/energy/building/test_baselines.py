"""Baselines through the one scorer: LP <= MPC/rule-based <= no battery, and the LP replays exactly in the env."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from decisions.energy.building.baselines import no_battery_controller, rule_based_controller
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.evaluation import evaluate, run_baselines
from decisions.energy.building.mpc import mpc_actions
from decisions.energy.building.optimum import perfect_foresight
from decisions.energy.building.scenario import Scenario
from decisions.energy.building.simulate import agent_controller, simulate, simulate_actions
from decisions.energy.building.windows import Window

WEEK = Window(745 + 24 * 14, 168)  # 2016-09-15 .. 09-21, held-out months
NO_FADE = {"capacity_fade": 0.0}


@pytest.mark.parametrize("buildings", [1, (2, 6, 11)])
def test_lp_below_rule_based_below_no_battery(buildings: int | tuple[int, ...]) -> None:
    trajectories = run_baselines(Scenario(buildings=buildings), WEEK)
    none, rule, lp = (trajectories[k].total_cost for k in ("no_battery", "rule_based", "perfect_foresight"))
    assert lp < rule < none
    assert lp < 0.9 * none  # the battery is worth something on this tariff


@pytest.mark.parametrize("carbon_price", [0.0, 0.3])
def test_lp_objective_equals_its_schedule_replayed_in_the_env(carbon_price: float) -> None:
    scenario = Scenario(buildings=(3, 4), battery=NO_FADE, carbon_price=carbon_price, tariff="dynamic")
    env, params = BuildingEnv.from_scenario(scenario, "eval")
    lp = perfect_foresight(params, WEEK)
    replay = simulate_actions(env, params, lp.actions(params), WEEK)
    assert replay.total_cost == pytest.approx(lp.cost, rel=1e-5)
    assert replay.total_emissions == pytest.approx(lp.emissions, rel=1e-5)
    # The reward is -(cost + carbon_price x emissions) / N, hour by hour.
    assert -replay.reward.sum() * 2 == pytest.approx(lp.objective, rel=1e-5)
    np.testing.assert_allclose(replay.soc * 6.4, lp.energy[1:], atol=1e-4)


def test_lp_beats_random_schedules() -> None:
    scenario = Scenario(buildings=8, battery=NO_FADE)
    env, params = BuildingEnv.from_scenario(scenario, "eval")
    lp = perfect_foresight(params, WEEK)
    rng = np.random.default_rng(0)
    for _ in range(3):
        actions = rng.uniform(-1, 1, (WEEK.num_hours, 1)).astype(np.float32)
        assert simulate_actions(env, params, actions, WEEK).total_cost >= lp.cost - 1e-6


def test_flat_price_with_equal_feed_in_leaves_nothing_to_save() -> None:
    # Storing costs efficiency and every kWh is worth the same at any hour, exported or not.
    scenario = Scenario(tariff={"kind": "series", "prices": [0.3] * 8760}, feed_in_price=0.3, battery=NO_FADE)
    env, params = BuildingEnv.from_scenario(scenario, "eval")
    lp = perfect_foresight(params, WEEK)
    none = simulate(env, params, no_battery_controller(env), WEEK)
    assert lp.cost == pytest.approx(none.total_cost, rel=1e-6)
    assert np.abs(lp.charge).max() < 1e-6 and np.abs(lp.discharge).max() < 1e-6


def test_no_battery_trajectory_is_load_minus_pv() -> None:
    env, params = BuildingEnv.from_scenario(Scenario(buildings=9), "eval")
    none = simulate(env, params, no_battery_controller(env), WEEK)
    np.testing.assert_allclose(none.net_load, none.load - none.pv, atol=1e-6)
    assert np.all(none.battery == 0) and np.all(none.soc == 0)
    frame = none.to_frame()
    assert len(frame) == 168 and frame["row"].iloc[0] == WEEK.start_hour
    assert list(frame.columns) == [
        "row", "date", "month", "hour", "price", "carbon", "load", "pv", "net_load", "battery", "soc", "cost", "emissions",
    ]  # fmt: skip
    assert frame["cost"].sum() == pytest.approx(none.total_cost)


def test_rule_based_respects_limits() -> None:
    env, params = BuildingEnv.from_scenario(Scenario(buildings=5), "eval")
    rule = simulate(env, params, rule_based_controller(env, params), WEEK)
    assert np.all(rule.soc >= -1e-6) and np.all(rule.soc <= 1 + 1e-6)
    assert np.all(np.abs(rule.battery) <= 5.0 + 1e-5)
    assert rule.battery.max() > 1.0 and rule.battery.min() < -1.0  # it does charge and discharge


def test_mpc_between_lp_and_no_battery() -> None:
    window = Window(WEEK.start_hour, 48)
    scenario = Scenario(buildings=1, battery=NO_FADE)
    env, params = BuildingEnv.from_scenario(scenario, "eval")
    actions = mpc_actions(params, window)
    mpc = simulate_actions(env, params, actions, window)
    lp = perfect_foresight(params, window)
    none = simulate(env, params, no_battery_controller(env), window)
    assert lp.cost - 1e-6 <= mpc.total_cost < none.total_cost


def test_agent_controller_and_evaluate_table() -> None:
    def policy(params, obs, key):  # a "trained agent": charge at a fixed rate
        del obs, key
        return params["rate"] * jnp.ones(1)

    table = evaluate(Scenario(buildings=1), {"agent": agent_controller(policy, {"rate": 0.1})}, WEEK)
    assert list(table.index) == ["no_battery", "rule_based", "perfect_foresight", "agent"]
    assert table.loc["perfect_foresight", "saving_fraction_of_lp"] == 1.0
    assert table.loc["no_battery", "cost"] == 1.0
    assert 0 < table.loc["rule_based", "saving_fraction_of_lp"] < 1
