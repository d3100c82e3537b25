"""Replay the agents of a building run: their saved policies, re-simulated and explained."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import pandas as pd
from jax import Array

from decisions.core.agents.common import Policy, TrainResult
from decisions.core.explain import LocalAttribution
from decisions.energy.building.agents import AgentName, agent_env
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.explain import BuildingExplanation, explain_controller
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.simulate import Trajectory, agent_controller, simulate
from decisions.energy.building.windows import Window
from decisions.errors import InputError

if TYPE_CHECKING:
    from decisions.energy.building.spec import BuildingJob

PyTree = Any
ActionFn = Callable[[Array], Array]
"""``action_fn(obs) -> action``: the first home's scalar battery action of a policy."""


def is_continuous(agent: AgentName | str) -> bool:
    """Whether an agent acts continuously (gradient explanations apply); DQN picks discrete levels.

    Raises:
        ValueError: not an agent name.
    """
    return AgentName(agent) is not AgentName.DQN


def seed_name(agent: AgentName | str, seed: int) -> str:
    """The name of one agent seed, ``"ppo_seed0"``: its policy file's stem and its label in charts (never parsed back)."""
    return f"{AgentName(agent).value}_seed{int(seed)}"


def controller_name(controller: str, seed: int | None) -> str:
    """A controller's unique name: a baseline's own name, or ``seed_name`` of an agent seed."""
    return controller if seed is None else seed_name(controller, seed)


def policy_artifact(agent: AgentName | str, seed: int) -> str:
    """The run artifact name of an agent seed's saved policy, ``"policy_ppo_seed0"``."""
    return f"policy_{seed_name(agent, seed)}"


def save_policies(folder: str | Path, policies: Mapping[str, TrainResult], seeds: int) -> dict[str, Path]:
    """Write every seed of every trained agent as ``<agent>_seed<k>.msgpack`` into ``folder`` (exists);
    artifact name (``policy_artifact``) -> path of each file written.
    """
    files = {}
    for name, result in policies.items():
        agent = AgentName(name)
        for seed in range(seeds):
            path = Path(folder) / f"{seed_name(agent, seed)}.msgpack"
            agent.module.save_policy(path, result, seed=seed)
            files[policy_artifact(agent, seed)] = path
    return files


def policy_path(artifacts: Mapping[str, str | Path], agent: AgentName | str, seed: int) -> Path:
    """The saved policy of one agent seed among a recorded run's artifacts.

    Args:
        artifacts: artifact name -> path (a run record's artifacts).

    Raises:
        InputError: the run recorded no such policy, or its file is gone.
    """
    path = artifacts.get(policy_artifact(agent, seed))
    if path is None or not Path(path).is_file():
        raise InputError(
            "policy", f"the policy file of {seed_name(agent, seed)} is not on disk ({path or 'not recorded'})"
        )
    return Path(path)


def load_policy(agent: AgentName | str, path: str | Path) -> tuple[Policy, PyTree]:
    """Read an agent's policy saved by ``save_policies``.

    Returns:
        ``(policy, params)``: call ``policy(params, obs, key)``.

    Raises:
        InputError: (``policy``) the file is not a saved policy of that agent (one line naming it).
    """
    return AgentName(agent).module.load_policy(path)


def simulate_policy(
    scenario: Scenario, agent: AgentName | str, policy: Policy, params: PyTree, window: Window | None = None
) -> Trajectory:
    """Run ``policy(params, obs, key) -> action`` over ``window`` (default: the held-out months) as the job
    scored it (DQN on discrete levels); the trajectory keeps the observations the policy saw.
    """
    env, env_params = agent_env(scenario, AgentName(agent), Split.EVAL)
    return simulate(env, env_params, agent_controller(policy, params), window or scenario.eval_window())


def action_function(policy: Policy, params: PyTree) -> ActionFn:
    """The first home's battery action of a policy as a function of one observation (fixed key)."""
    key = jax.random.PRNGKey(0)

    def action_fn(obs: Array) -> Array:
        return policy(params, obs, key)[0]

    return action_fn


@dataclass(frozen=True)
class ExplainedSeed:
    """One agent seed explained over the states it visited.

    Attributes:
        agent: the agent's name (``"ppo"``).
        seed: its seed.
        explanation: importance, forecast sensitivity, surrogate tree, observations, actions.
        action_fn: the explained scalar action function (first home's battery).
        num_buildings: homes of the scenario (the first home's action is explained).
    """

    agent: str
    seed: int
    explanation: BuildingExplanation
    action_fn: ActionFn
    num_buildings: int

    def importance(self) -> pd.DataFrame:
        """IG and permutation importance per feature group, as the job records them."""
        return self.explanation.importance_table()

    def why(self, hour_index: int, *, top: int = 5) -> tuple[list[str], LocalAttribution]:
        """Why the seed acted as it did at one visited hour (``BuildingExplanation.why``): ``(lines, local)``."""
        return self.explanation.why(self.action_fn, hour_index, top=top)


def explain_policy(
    agent: AgentName | str,
    seed: int,
    policy: Policy,
    params: PyTree,
    trajectory: Trajectory,
    *,
    random_seed: int = 0,
    max_depth: int = 5,
) -> ExplainedSeed:
    """Explain one seed of a continuous-action agent over the states of its ``trajectory`` (``simulate_policy``,
    with observations); ``random_seed`` seeds the permutations and the surrogate tree's split.

    Raises:
        InputError: a discrete-action agent, or a trajectory without observations.
    """
    if not is_continuous(agent):
        raise InputError("controller", f"{seed_name(agent, seed)} is not a continuous-action agent seed")
    if trajectory.observations is None:
        raise InputError("trajectory", "a fixed schedule has no observations to explain")
    num_buildings = int(trajectory.load.shape[1])
    action_fn = action_function(policy, params)
    explanation = explain_controller(
        action_fn,
        trajectory.observations,
        BuildingEnv(num_buildings).feature_names(),
        seed=random_seed,
        max_depth=max_depth,
    )
    return ExplainedSeed(AgentName(agent).value, int(seed), explanation, action_fn, num_buildings)


def replay_seed(
    job: BuildingJob, agent: AgentName | str, seed: int, artifacts: Mapping[str, str | Path]
) -> ExplainedSeed:
    """Reload one seed of a recorded run (``job = recorded_job(record.config)``, ``artifacts``: name -> path),
    re-simulate the held-out months and explain it there as the job explains its best seed.

    Raises:
        InputError: a discrete-action agent, or the seed's policy file is gone.
    """
    if not is_continuous(agent):
        raise InputError("controller", f"{seed_name(agent, seed)} is not a continuous-action agent seed")
    policy, params = load_policy(agent, policy_path(artifacts, agent, seed))
    trajectory = simulate_policy(job.scenario, agent, policy, params)
    return explain_policy(
        agent, seed, policy, params, trajectory, random_seed=job.seed, max_depth=job.evaluation.tree_depth
    )
