"""The generalist: one PPO over many homes, its environment, its split of homes and its figures."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents import ppo
from decisions.core.agents.common import TrainResult
from decisions.core.optimal import solve
from decisions.energy.building import generalist
from decisions.energy.building.dataset import BUILDING_IDS, load_district
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.generalist import (
    HELD_OUT_HOMES,
    TRAIN_HOMES,
    check_split,
    generalist_config,
    generalist_figures,
    train_generalist,
)
from decisions.energy.building.generalist_env import (
    GeneralistEnv,
    generalist_params,
    home_params,
    persistence_forecast,
)
from decisions.energy.building.generalist_explain import explain_generalist, hours_at
from decisions.energy.building.optimum import schedule_lp, window_data
from decisions.energy.building.params import to_params
from decisions.energy.building.scenario import Battery, Scenario, Split
from decisions.energy.building.schedule_lp import first_move
from decisions.energy.building.simulate import simulate_actions
from decisions.energy.building.windows import Window
from tests.energy.building.test_bench import _undocumented


class Tiny(NamedTuple):
    """The tiny generalist's figures, and the policy it trained for them with the homes and config it trained on."""

    figures: dict[str, Any]
    result: TrainResult
    homes: tuple[int, ...]
    config: ppo.PPOConfig


@pytest.fixture(scope="module")
def tiny() -> Tiny:
    """``generalist_figures`` at a tiny budget (homes 1 and 15 train, home 5 held out), its training kept."""
    trained: list[tuple[TrainResult, tuple[int, ...], ppo.PPOConfig]] = []

    def train_and_keep(homes: tuple[int, ...], config: ppo.PPOConfig, **kwargs: Any) -> TrainResult:
        trained.append((train_generalist(homes, config, **kwargs), tuple(homes), config))
        return trained[-1][0]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(generalist, "train_generalist", train_and_keep)  # generalist_figures looks it up when it runs
        figures = generalist_figures(steps=10_752, tune=False, mpc=False, train_homes=(1, 15), held_out_homes=(5,))
    ((result, homes, config),) = trained
    return Tiny(figures, result, homes, config)


def test_the_split_is_disjoint_and_holds_homes_with_and_without_pv() -> None:
    assert not set(TRAIN_HOMES) & set(HELD_OUT_HOMES)
    assert set(TRAIN_HOMES) | set(HELD_OUT_HOMES) <= set(BUILDING_IDS)
    pv = load_district().pv.mean(axis=0)
    train_pv = pv[np.asarray(TRAIN_HOMES) - 1]
    assert train_pv.min() < 0.05 < 0.5 < train_pv.max()  # home 15 has (almost) no PV, the others have


def test_check_split_refuses_a_home_on_both_sides() -> None:
    with pytest.raises(ValueError, match="home 5 is both"):
        check_split((1, 5), (5, 12))
    with pytest.raises(ValueError, match="at least one"):
        check_split((1,), ())


def test_training_params_hold_the_training_homes_only() -> None:
    params = generalist_params(TRAIN_HOMES, Split.TRAIN)
    load = load_district().load
    np.testing.assert_allclose(np.asarray(params.load), load[:, np.asarray(TRAIN_HOMES) - 1], rtol=1e-6)
    for home in HELD_OUT_HOMES:
        column = load[:, home - 1].astype(np.float32)
        assert not any(np.array_equal(column, np.asarray(params.load)[:, i]) for i in range(len(TRAIN_HOMES)))


def test_one_home_runs_as_in_the_building_environment_without_discharging_to_export() -> None:
    scenario = Scenario(buildings=(5,), relative_reward=True)
    window = Window(scenario.eval_window().start_hour, 200)
    env, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    actions = np.sin(np.arange(window.num_hours))[:, None].astype(np.float32)
    deficit = np.maximum(np.asarray(params.load - params.pv)[window.rows], 0.0) / np.asarray(params.power)
    capped = np.maximum(actions, -deficit).astype(np.float32)
    assert (capped != actions).any()
    expected = simulate_actions(env, params, capped, window)
    got = simulate_actions(GeneralistEnv(), home_params(generalist_params((1, 5, 12), Split.EVAL), 1), actions, window)
    np.testing.assert_allclose(got.cost, expected.cost, rtol=1e-6)
    np.testing.assert_allclose(got.reward, expected.reward, rtol=1e-6)
    np.testing.assert_allclose(got.soc, expected.soc, rtol=1e-6)


def test_reset_draws_every_home_and_observes_it() -> None:
    env, params = GeneralistEnv(), generalist_params((1, 5, 15), Split.TRAIN)
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))  # one program for the batch
    obs, states = reset(jax.random.split(jax.random.PRNGKey(0), 64), params)
    assert set(np.asarray(states.home).tolist()) == {0, 1, 2}
    assert obs.shape == (64, len(env.feature_names()))
    pv_kw = env.feature_index("pv_kw_per_capacity")
    expected = np.asarray(params.traits)[np.asarray(states.home), 1]
    np.testing.assert_allclose(np.asarray(obs[:, pv_kw]), expected)


def test_energies_are_read_as_fractions_of_the_battery() -> None:
    small = generalist_params((5,), Split.EVAL)
    large = generalist_params((5,), Split.EVAL, Scenario(relative_reward=True, battery=Battery(capacity_kwh=12.8)))
    env = GeneralistEnv()
    obs_small, _ = env.reset_at(1000, small)
    obs_large, _ = env.reset_at(1000, large)
    for name in ("load_per_capacity", "load_yesterday_next_24h_per_capacity", "daily_pv_per_capacity"):
        i = env.feature_index(name)
        assert float(obs_large[i]) == pytest.approx(float(obs_small[i]) * 6.4 / 12.8, rel=1e-5)


def test_persistence_forecast_sums_yesterdays_next_hours() -> None:
    series = np.arange(100, dtype=np.float64)[:, None]
    forecast = persistence_forecast(series)
    assert forecast.shape == (100, 1, 3)
    assert forecast[50, 0, 0] == sum(50 - 24 + k for k in range(1, 7))
    assert forecast[50, 0, 2] == sum(50 - 24 + k for k in range(1, 25))
    assert forecast[0, 0, 0] == sum(range(1, 7))  # before the data: the row itself


def test_the_matrix_lp_moves_as_the_pyomo_model_on_one_home() -> None:
    params = to_params(Scenario(buildings=(5,)), Split.EVAL)
    full = window_data(params, Window(0, params.num_hours))
    for start, energy in ((3000, 0.0), (5017, 3.1), (6400, 6.4)):
        rows = np.arange(start, start + 24)
        data = {**full, "base": full["base"][rows], "price": full["price"][rows], "carbon": full["carbon"][rows]}
        model = schedule_lp(data, np.array([energy]))
        solve(model)
        expected = model.c[0, 0].value - model.d[0, 0].value
        assert first_move(data, np.array([energy]))[0] == pytest.approx(expected, abs=1e-6)


def test_tiny_generalist_gives_finite_documented_figures(tiny: Tiny) -> None:
    figures = tiny.figures
    assert figures["generalist_train_homes"] == "1 15" and figures["generalist_heldout_homes"] == "5"
    assert figures["generalist_env_steps"] == 10_752
    keys = ("generalist_saving_vs_rule_heldout_min", "generalist_saving_vs_lp_heldout_mean",
            "generalist_saving_vs_rule_train_min", "generalist_saving_vs_lp_train_mean",
            "generalist_b5_saving_vs_lp", "generalist_b15_rule_based_saving_vs_lp")
    for key in keys:
        assert math.isfinite(figures[key]), key
    assert not any(k.startswith("generalist_b") and k.endswith(("b3_saving_vs_lp",)) for k in figures)
    assert "not tuned" in figures["generalist_tuned_on"] and "MPC: not run" in figures["generalist_tuned_on"]
    assert _undocumented(figures) == []


@pytest.mark.slow
def test_tuning_and_mpc_give_their_figures() -> None:
    figures = generalist_figures(steps=10_752, tune_budget=1.0, train_homes=(1,), held_out_homes=(5,))
    assert figures["generalist_tuning_scores"].count("learning_rate=") == 3
    assert "validation months 7-8" in figures["generalist_tuned_on"]
    for key in ("mpc_saving_vs_lp_heldout_mean", "mpc_saving_vs_rule_train_min", "generalist_b5_mpc_saving_vs_lp"):
        assert math.isfinite(figures[key]), key
    assert 0 < figures["generalist_validation_rule_based_saving_vs_lp"] < 1
    assert _undocumented(figures) == []


def test_generalist_policy_acts_on_its_own_observation_size() -> None:
    env = GeneralistEnv()
    assert env.observation_space(env.default_params).shape == (len(env.feature_names()),)
    assert env.action_space(env.default_params).shape == (1,)
    _, state = env.reset_at(0, env.default_params, 1)
    obs, *_ = env.step(jax.random.PRNGKey(0), state, jnp.ones((1,)), env.default_params)
    assert obs.shape == (len(env.feature_names()),)
    assert generalist.BASE.relative_reward


def test_the_generalist_is_explained_on_a_home_it_never_saw(tiny: Tiny) -> None:
    """The policy the tiny figures trained (the single-home PPO's config on homes 1 and 15), explained on home 5."""
    assert tiny.homes == (1, 15) and tiny.config == generalist_config(10_752)
    result = tiny.result
    window = Window(Scenario().eval_window().start_hour, 72)
    explained, trajectory = explain_generalist(result, 5, window=window, max_depth=3)
    evening = hours_at(trajectory, 19)
    assert len(evening) == 3 and all(trajectory.calendar()[1][i] == 19 for i in evening)
    lines, local = explained.why(evening[0], top=3)
    assert lines[0].startswith("Action: ") and lines[1].startswith("Rule the surrogate tree follows: ")
    assert len(lines) == 5
    assert set(local.table["feature"]) == set(GeneralistEnv().feature_names())
    groups = set(explained.importance()["group"])
    assert {"home", "load and PV forecasts", "load and PV", "state of charge", "price now"} <= groups
    assert "other" not in groups
