"""Hyperparameter tuning never sees the held-out months: its split, its scoring and its choice."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.agents.common import TrainResult
from decisions.energy.building.agents import AgentName, agent_config
from decisions.energy.building.baselines import rule_based_controller
from decisions.energy.building.dataset import load_district
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.spec import AgentSettings
from decisions.energy.building.tuning import (
    LIBRARY_ON_POLICY,
    default_grid,
    lp_share,
    tune_agents,
    validation_scenario,
    validation_windows,
)

HELD_OUT = (9, 10, 11, 12)


def test_validation_split_lies_inside_the_training_months() -> None:
    scenario = validation_scenario(Scenario())
    assert scenario.train_months == (1, 2, 3, 4, 5, 6)
    assert scenario.eval_months == (7, 8)
    months = load_district().month
    windows = validation_windows()
    rows = np.concatenate([w.rows for w in windows])
    assert set(months[rows]) == {7, 8}
    assert len(rows) == int(np.isin(months, (7, 8)).sum())  # every hour of months 7-8, once
    held_out = Scenario().eval_window()
    assert all(w.stop <= held_out.start_hour or w.start_hour >= held_out.stop for w in windows)
    with pytest.raises(ValueError, match="not a training month"):
        validation_scenario(Scenario(), (8, 9))
    with pytest.raises(ValueError, match="no training month"):
        validation_scenario(Scenario(train_months=(7, 8)), (7, 8))


def test_lp_share_sums_savings_over_windows() -> None:
    # Savings 10 and 2 of LP savings 20 and 20: 12 / 40, not the mean of 0.5 and 0.1.
    assert lp_share([100, 50], [80, 30], [90, 48]) == pytest.approx(0.3)
    assert lp_share([100], [80], [80]) == pytest.approx(1.0)


def test_overrides_set_config_fields_and_are_validated() -> None:
    config = agent_config(AgentName.PPO, AgentSettings(), {"learning_rate": 1e-4})
    assert config.learning_rate == 1e-4 and config.gamma == 0.995  # the rest as agent_config sets it
    assert agent_config(AgentName.PPO, AgentSettings()).learning_rate == 3e-4
    with pytest.raises(ValueError, match="learning_rate"):
        agent_config(AgentName.SAC, AgentSettings(), {"learning_rate": -1.0})
    with pytest.raises(TypeError):
        agent_config(AgentName.DQN, AgentSettings(), {"not_a_field": 1})


def test_on_policy_grids_remake_the_held_out_choice() -> None:
    ppo, sac = default_grid(AgentName.PPO), default_grid(AgentName.SAC)
    assert ppo[0] == {"learning_rate": 3e-4}  # the default first: it wins ties
    assert [c["learning_rate"] for c in ppo[:3]] == [3e-4, 1e-4, 9e-4]
    assert ppo[3] == {"learning_rate": 3e-4, **LIBRARY_ON_POLICY}
    assert all("gamma" not in c for c in sac) and len(sac) == 3


def test_tuning_picks_the_best_validation_candidate_without_held_out_data() -> None:
    """A stand-in trainer: candidate 0.002 "learns" the rule-based controller, 0.001 always charges."""
    seen: list[tuple[tuple[int, ...], tuple[int, ...], int, dict]] = []

    def train(name, scenario, settings, *, key, overrides, progress=None) -> TrainResult:
        seen.append((scenario.train_months, scenario.eval_months, settings.on_policy_steps, dict(overrides)))
        env, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
        rule = rule_based_controller(env, params)

        def policy(p, obs, key):
            return jnp.where(p["rule"] > 0, rule(obs), jnp.ones((1,), jnp.float32))

        flag = jnp.asarray([overrides["learning_rate"] > 0.0015], jnp.float32)  # one seed
        return TrainResult(policy=policy, params={"rule": flag}, metrics={}, train_seconds=0.0,
                           env_steps=settings.on_policy_steps)

    grid = {AgentName.PPO: ({"learning_rate": 0.001}, {"learning_rate": 0.002})}
    settings = AgentSettings(names=(AgentName.PPO,))
    result = tune_agents(Scenario(relative_reward=True), settings, key=jax.random.PRNGKey(0),
                         budget_fraction=0.5, grid=grid, train=train)
    assert [s[:3] for s in seen] == [((1, 2, 3, 4, 5, 6), (7, 8), 2_500_000)] * 2
    assert result.chosen == {AgentName.PPO: {"learning_rate": 0.002}}
    (_, charging), (_, rule_share) = result.scores[AgentName.PPO]
    assert charging < 0 < rule_share  # buying to fill a battery never emptied costs money
    assert rule_share == pytest.approx(result.rule_based_share, abs=1e-9)  # scored like the baseline
    figures = result.figures(settings)
    assert figures["tuned_ppo_learning_rate"] == 0.002
    assert figures["validation_saving_vs_lp_ppo"] == rule_share
    assert figures["tuning_env_steps_ppo"] == 2_500_000
    assert figures["hyperparameters_tuned_on"].startswith("validation months 7-8 (candidates trained on months 1-6")
    with pytest.raises(ValueError, match="budget_fraction"):
        tune_agents(Scenario(), settings, key=jax.random.PRNGKey(0), budget_fraction=0.0, train=train)
