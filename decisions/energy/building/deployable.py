"""What deciding an hour needs from a building run: its scenario (saved as ``deployment.msgpack``)
and, rebuilt from it, each candidate controller as a function of one observation.

A candidate is a trained agent (its best seed on the held-out months, read from its saved policy
file), the rule-based controller or no battery; every one answers ``fraction(obs) -> (N,)``, the
requested share of each battery's power (+ charge), as the environment applies it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
from flax import serialization
from jax import Array
from pydantic import ValidationError

from decisions.energy.building.agents import agent_env
from decisions.energy.building.baselines import no_battery_controller, rule_based_controller
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.replay import load_policy, seed_name
from decisions.energy.building.scenario import Scenario, SeriesTariff, Split
from decisions.energy.building.spec import AgentName
from decisions.errors import InputError

FILE_STEM = "deployment"
"""The run's file of what deciding needs (``deployment.msgpack``)."""

BASELINES = {"rule_based": "rule-based controller (charge cheap, cover the load when dear)",
             "no_battery": "no battery (leave it idle)"}
"""The baselines that answer one hour, by their name in the run's ``kpis`` table."""

Fraction = Callable[[Array], Array]
"""``fraction(obs (F,)) -> (N,)`` float32 in [-1, 1]: each battery's requested share of its power."""


def deployment(scenario: Scenario) -> dict[str, Any]:
    """What a run saves for deciding: its scenario as plain data (a CSV tariff carried as its prices)."""
    if scenario.tariff.kind == "csv":
        scenario = scenario.model_copy(update={"tariff": SeriesTariff(prices=scenario.prices().tolist())})
    return {"scenario": scenario.model_dump(mode="json")}


def save_deployment(path: Path, found: dict[str, Any]) -> None:
    """Write ``deployment(...)`` as msgpack (no pickle)."""
    path.write_bytes(serialization.msgpack_serialize(found))


def load_scenario(folder: Path) -> Scenario:
    """The scenario a run saved for deciding.

    Raises:
        InputError: (``run``) the run saved none (recorded before decisions could be taken), or it no
            longer validates.
    """
    path = folder / f"{FILE_STEM}.msgpack"
    if not path.is_file():
        raise InputError("run", "it saved no deployment (recorded before decisions could be taken)")
    try:
        return Scenario.model_validate(serialization.msgpack_restore(path.read_bytes())["scenario"])
    except (ValidationError, KeyError, ValueError, TypeError) as exc:
        raise InputError("run", f"its saved deployment is unreadable ({type(exc).__name__})") from None


@dataclass(frozen=True)
class Controller:
    """A candidate as a function of one observation: its ``fraction`` and, for DQN, ``q_values(obs) ->
    (levels,)`` (None otherwise) with each level's share of power (``levels``)."""

    name: str
    fraction: Fraction
    q_values: Fraction | None = None
    levels: tuple[float, ...] = ()


def controller(folder: Path, scenario: Scenario, name: str, seed: int | None) -> Controller:
    """Candidate ``name`` of a run (an agent, whose seed ``seed`` is read from its policy file, or a
    baseline of ``BASELINES``) on its scenario's environment.

    Raises:
        InputError: (``run``) an agent's policy file is missing or unreadable.
    """
    env, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    if name == "rule_based":
        return Controller(name, rule_based_controller(env, params))
    if name == "no_battery":
        return Controller(name, no_battery_controller(env))
    agent = AgentName(name)
    path = folder / f"{seed_name(agent, seed or 0)}.msgpack"
    if not path.is_file():
        raise InputError("run", f"it saved no policy file {path.name}")
    policy, weights = load_policy(agent, path)
    agent_environment, _ = agent_env(scenario, agent, Split.EVAL)
    key = jax.random.PRNGKey(0)

    def fraction(obs: Array) -> Array:
        return agent_environment.action_fraction(policy(weights, obs, key))

    if agent is not AgentName.DQN:
        return Controller(name, fraction)
    levels = agent_environment.num_levels or 0

    def q_values(obs: Array) -> Array:
        return policy.network.apply(weights["q"], policy.features(weights, obs))

    return Controller(name, fraction, q_values, tuple(-1.0 + 2.0 * k / (levels - 1) for k in range(levels)))


def reference_observation(params: BuildingParams, rows: Array) -> Array:
    """An average hour of ``rows`` (the training months) with half-charged batteries: the attributions'
    reference point, ``(F,)`` float32."""
    load, pv = params.load[rows].mean(0), params.pv[rows].mean(0)
    soc = 0.5 * (params.soc_min + params.soc_max)
    homes = jnp.stack([load, pv, soc, load - pv], axis=1).reshape(-1)
    return jnp.concatenate([params.features[rows].mean(0), homes]).astype(jnp.float32)
