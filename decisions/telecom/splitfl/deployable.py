"""Split learning's deployable policies: what a run saves so a round's splits can be decided later
without retraining (its fleet and reward, ``fleet.msgpack``, beside the committees' files), and
each offered policy rebuilt as a compiled function of one fleet state.

A policy answers one fleet state (``fleet.FleetState``) at round ``t`` with each client's split,
the round's duration at those splits (the fleet model's, deterministic given the state), the round's
cost terms of the study's reward (``env.cost_terms_of``: time, missed clients, energy) and, for an
agent, its members' mean Q-values.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import serialization, struct

from decisions.errors import InputError
from decisions.telecom.splitfl import env as E
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl.agent import Committee, load_committee, vote
from decisions.telecom.splitfl.devices import DeviceScenario
from decisions.telecom.splitfl.spec import AgentSettings, SplitFLJob
from decisions.telecom.splitfl.strategies import client_turns, fastest_splits, greedy_split

FLEET_STEM = "fleet"
FLEET_FILE = f"{FLEET_STEM}.msgpack"
"""The run's fleet and reward, as the study ran them."""

ROUND_AGENT, CLIENT_AGENT = "dqn_round", "dqn_client"
"""Name prefixes of the agents (the ablations' names extend them)."""

PolicyFn = Callable[[fl.FleetState, jax.Array], tuple[jax.Array, jax.Array]]
"""``(state, t) -> (splits (n,), mean Q-values)``: one policy on one fleet state."""


def fleet_description(job: SplitFLJob) -> dict[str, Any]:
    """What rebuilding the run's fleet and reward needs, as plain JSON."""
    return {"devices": job.devices.model_dump(mode="json"), "arch": job.arch.value,
            "batch_size": job.training.batch_size, "local_steps": job.training.local_steps,
            "rounds": job.training.rounds, "agent": job.agent.model_dump(mode="json")}


def save_fleet(path: Path, description: dict[str, Any]) -> None:
    """Write ``fleet_description``'s answer as msgpack (no pickle)."""
    path.write_bytes(serialization.msgpack_serialize(description))


def read_devices(run_folder: Path) -> tuple[DeviceScenario, dict[str, Any]]:
    """The run's device scenario and its whole saved description.

    Raises:
        InputError: (``run``) the run saved no fleet (recorded before decisions could be taken).
    """
    path = run_folder / FLEET_FILE
    if not path.is_file():
        raise InputError("run", "it saved no fleet description (recorded before decisions could be taken)")
    description = serialization.msgpack_restore(path.read_bytes())
    return DeviceScenario.model_validate(description["devices"]), description


def run_env_params(run_folder: Path) -> E.SplitEnvParams:
    """The split environment's params of the run (equal data shares: the agents' training fleet)."""
    from decisions.telecom.splitfl.model import make_net

    devices, d = read_devices(run_folder)
    fleet = fl.fleet_params(devices, make_net(d["arch"]).layer_table(), d["batch_size"], d["local_steps"])
    agent = AgentSettings.model_validate(d["agent"])
    return E.env_params(fleet, np.ones(fleet.clients), d["rounds"], decay=agent.decay,
                        loss_weight=agent.loss_weight, time_weight=agent.time_weight,
                        dropout_weight=agent.dropout_weight, energy_weight=agent.energy_weight)


def _round_agent(committee: Committee, pe: E.SplitEnvParams) -> PolicyFn:
    def policy(state: fl.FleetState, t: jax.Array) -> tuple[jax.Array, jax.Array]:
        q = committee.q_values(E.round_obs(state, pe, t))
        return jnp.full(pe.fleet.clients, vote(q) + 1, jnp.int32), jnp.mean(q, axis=0)

    return policy


def _rule(splits: Callable[[fl.FleetState], jax.Array], pe: E.SplitEnvParams) -> PolicyFn:
    def policy(state: fl.FleetState, t: jax.Array) -> tuple[jax.Array, jax.Array]:
        del t
        return jnp.broadcast_to(splits(state), (pe.fleet.clients,)).astype(jnp.int32), jnp.zeros(0)

    return policy


def policy_function(run_folder: Path, name: str, pe: E.SplitEnvParams) -> PolicyFn:
    """The offered policy ``name`` (a strategy of the study's tables) as a function of one state.

    Raises:
        InputError: (``policy``) no such policy; (``run``) an agent's committee file is missing.
    """
    p = pe.fleet
    if name.startswith("fixed_") and name[6:].isdigit() and 1 <= int(name[6:]) <= p.layers:
        split = jnp.asarray(int(name[6:]))
        return _rule(lambda state: split, pe)
    if name == "greedy":
        return _rule(lambda state: greedy_split(state, p), pe)
    if name == "fastest" or name.removeprefix("fastest_") in ("last", "mean", "smoothed"):
        # the same rule: the state given holds the round's draws or the server's forecast of them
        return _rule(lambda state: fastest_splits(state, p), pe)
    if not name.startswith((ROUND_AGENT, CLIENT_AGENT)):
        raise InputError("policy", f"{name!r} is not a split policy of this run")
    path = run_folder / f"committee_{name}.msgpack"
    if not path.is_file():
        raise InputError("run", f"it saved no committee {name!r}")
    committee = load_committee(path)
    if name.startswith(CLIENT_AGENT):
        return lambda state, t: client_turns(committee, state, pe, t)
    return _round_agent(committee, pe)


@struct.dataclass
class Answer:
    """A policy's answers to a batch of states, each row one state."""

    splits: np.ndarray
    q_values: np.ndarray
    round_time_s: np.ndarray
    value: np.ndarray
    holdable: np.ndarray
    """``(B, L, n)`` the splits each client can hold (``env.holdable``)."""


def answer_function(pe: E.SplitEnvParams, policy: PolicyFn) -> Callable[[fl.FleetState, jax.Array], Answer]:
    """A policy's answers to a batch of states (``(B, n)`` fleet arrays, ``(B,)`` rounds), vmapped."""

    def one(state: fl.FleetState, t: jax.Array) -> Answer:
        splits, q = policy(state, t)
        _, outcome = fl.play_round(jax.random.PRNGKey(0), state, pe.fleet, splits)
        holdable = E.holdable(E.all_split_costs(state, pe.fleet))
        return Answer(splits, q, outcome.round_time_s, E.cost_terms_of(pe, outcome), holdable)

    return jax.vmap(one)
