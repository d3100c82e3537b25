"""The core RL agents on the building battery: one training call, one scorer."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jax

from decisions.core.agents.common import ProgressFn, TrainResult, config_checkpoint, train_in_turn
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.simulate import Controller, Trajectory, agent_controller, simulate
from decisions.energy.building.spec import AgentName, AgentSettings
from decisions.energy.building.windows import Window

if TYPE_CHECKING:
    from decisions.kit.checkpoints import CheckpointFor

PyTree = Any

DISCRETE_LEVELS = 11
"""Action levels of DQN: -1, -0.8, ..., 1 (fraction of the battery's power)."""


Overrides = Mapping[str, Any]
"""Fields of an agent's config set over ``agent_config``'s values, e.g. ``{"learning_rate": 1e-4}``."""


def agent_config(name: AgentName, settings: AgentSettings, overrides: Overrides | None = None) -> Any:
    """The agent's configuration (a frozen dataclass of ``name.module``) for week-long hourly battery episodes.

    ``overrides``: config fields set over the values below (``tuning.tune_agents`` chooses them),
    checked by the config's own validation.
    """
    config = _base_config(name, settings)
    return dataclasses.replace(config, **overrides) if overrides else config


def _base_config(name: AgentName, settings: AgentSettings) -> Any:
    """``agent_config`` without overrides."""
    module = name.module
    # Long credit assignment (charge at noon, discharge in the evening peak) and a narrow initial
    # exploration noise: gamma 0.995 and log-std -1 took PPO from 0.55 to 0.89 of the LP saving
    # on building 1 at 5M steps (gamma 0.99, log-std 0).
    on_policy = dict(gamma=0.995, log_std_init=-1.0, total_env_steps=settings.on_policy_steps)
    if name is AgentName.PPO:
        return module.PPOConfig(num_envs=32, rollout_steps=168, log_every=10, **on_policy)
    if name is AgentName.A2C:
        return module.A2CConfig(num_envs=32, log_every=50, **on_policy)
    if name is AgentName.SAC:
        return module.SACConfig(total_env_steps=settings.off_policy_steps, log_every=500)
    return module.DQNConfig(total_env_steps=settings.off_policy_steps, log_every=500)


def agent_env(scenario: Scenario, name: AgentName, split: Split | str) -> tuple[BuildingEnv, BuildingParams]:
    """The environment an agent acts in (discrete levels for DQN) and its params for a split."""
    levels = DISCRETE_LEVELS if name is AgentName.DQN else None
    return BuildingEnv.from_scenario(scenario, split, num_levels=levels)


def train_agent(
    name: AgentName,
    scenario: Scenario,
    settings: AgentSettings,
    *,
    key: jax.Array,
    progress: ProgressFn | None = None,
    checkpoint: CheckpointFor | None = None,
    overrides: Overrides | None = None,
) -> TrainResult:
    """Train ``settings.seeds`` copies of an agent, one after another, on the training months
    (``common.train_in_turn``: vmapping the seeds can wedge XLA's CPU thread pool here).

    ``key`` splits into one key per seed; ``progress`` is called between jitted chunks; with
    ``checkpoint`` (``checkpoints.checkpoint_file`` or alike) each seed saves after every chunk to
    the file it gives (``<agent>-seed<k>``) and resumes from it; ``overrides`` as in ``agent_config``.
    Returns the ``TrainResult`` (params and metrics with a leading seed axis).
    """
    env, params = agent_env(scenario, name, Split.TRAIN)
    config = agent_config(name, settings, overrides)

    def train_one(seed: int, seed_key: jax.Array, report: ProgressFn | None) -> TrainResult:
        path = config_checkpoint(checkpoint, f"{name.value}-seed{seed}", config)
        return name.module.train(env, config, key=seed_key, params=params, progress=report, checkpoint=path)

    return train_in_turn(train_one, jax.random.split(key, settings.seeds), progress)


def seed_params(result: TrainResult, seed: int) -> PyTree:
    """The params of one seed of a ``train_seeds`` result."""
    return jax.tree_util.tree_map(lambda x: x[seed], result.params)


def seed_controller(result: TrainResult, seed: int) -> Controller:
    """``controller(obs) -> action`` of one trained seed (its deterministic policy)."""
    return agent_controller(result.policy, seed_params(result, seed))


def score_seeds(
    name: AgentName, result: TrainResult, scenario: Scenario, window: Window | None = None
) -> list[Trajectory]:
    """Run every trained seed over the evaluation window (held-out months by default)."""
    env, params = agent_env(scenario, name, Split.EVAL)
    window = window or scenario.eval_window()
    seeds = int(jax.tree_util.tree_leaves(result.params)[0].shape[0])
    return [simulate(env, params, seed_controller(result, s), window) for s in range(seeds)]
