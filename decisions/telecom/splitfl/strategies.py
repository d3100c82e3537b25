"""Split strategies: who decides each round's splits, from the fleet as each sees it.

A strategy's ``information`` (``server_view.INFORMATION``) says what the runner shows it: the round's
draws (``"oracle"``: no server knows them before the round) or the server's reports and a forecast of
the round's load and links (``server_view.seen_state``). The per-client fastest-split rule and the
agents run on any; the fixed, random and greedy strategies see the oracle's fleet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Protocol

import jax
import jax.numpy as jnp
import numpy as np
from jax import Array

from decisions.telecom.splitfl import env as E
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl.agent import Committee, vote
from decisions.telecom.splitfl.costs import SplitCosts


class Strategy(Protocol):
    """Chooses each round's splits."""

    name: str
    information: str
    """What it sees (module docstring)."""

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        """``(n,)`` splits in ``[1, L]`` for round ``t`` (0-based)."""
        ...


@dataclass
class FixedSplit:
    """The same split for everyone, every round."""

    split: int
    name: str = ""
    information: str = "oracle"

    def __post_init__(self) -> None:
        self.name = self.name or f"fixed_{self.split}"

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        """``split`` for every client."""
        return np.full(pe.fleet.clients, self.split, np.int32)


@dataclass
class RandomSplit:
    """A uniformly random split each round, the same for every client."""

    seed: int
    name: str = "random"
    information: str = "oracle"
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        """One random split in ``[1, L]`` for every client."""
        return np.full(pe.fleet.clients, self.rng.integers(1, pe.fleet.layers + 1), np.int32)


def keeps_reserve(state: fl.FleetState, p: fl.FleetParams, costs: SplitCosts) -> Array:
    """``(L, n)`` bool: the splits after whose round each client's battery is still above the reserve."""
    return state.battery_j - costs.energy_j >= p.reserve * fl.capacity(state, p)


@jax.jit
def greedy_split(state: fl.FleetState, p: fl.FleetParams) -> Array:
    """The greedy rule's one split for every client (``GreedyRule``)."""
    costs = E.all_split_costs(state, p)
    ok = costs.fits_memory & (costs.round_time_s <= p.deadline_s) & keeps_reserve(state, p, costs)
    kept = jnp.sum(ok & state.available, axis=1)
    every = kept == jnp.sum(state.available)
    splits = jnp.arange(1, p.layers + 1)
    deepest = jnp.max(jnp.where(every, splits, 0))
    latency = jnp.max(jnp.where(state.available, costs.round_time_s, 0.0), axis=1)
    fallback = jnp.lexsort((latency, -kept))[0] + 1
    return jnp.where(deepest > 0, deepest, fallback)


@dataclass
class GreedyRule:
    """The deepest split that keeps every available client within the deadline, memory and battery reserve."""

    name: str = "greedy"
    information: str = "oracle"

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        """The rule's split for every client (module docstring)."""
        return np.full(pe.fleet.clients, int(greedy_split(state, pe.fleet)), np.int32)


@jax.jit
def fastest_splits(state: fl.FleetState, p: fl.FleetParams) -> Array:
    """``(n,)`` each client's fastest split it can hold that keeps its battery above the reserve (module docstring)."""
    costs = E.all_split_costs(state, p)
    holds = E.holdable(costs)
    keeps = holds & keeps_reserve(state, p, costs)
    allowed = jnp.where(jnp.any(keeps, axis=0), keeps, holds)
    return jnp.argmin(jnp.where(allowed, costs.round_time_s, jnp.inf), axis=0).astype(jnp.int32) + 1


@dataclass
class FastestSplit:
    """Per client, the fastest split it can hold within its battery reserve, on the fleet it sees.

    ``information`` "oracle" is the bound no one can deploy (named ``fastest``); the others are named
    ``fastest_<information>`` unless ``name`` is given.
    """

    name: str = ""
    information: str = "oracle"

    def __post_init__(self) -> None:
        self.name = self.name or ("fastest" if self.information == "oracle" else f"fastest_{self.information}")

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        """Each client's fastest split."""
        return np.asarray(fastest_splits(state, pe.fleet))


@partial(jax.jit, static_argnums=1)
def _round_action(committee_params: object, policy: object, state: fl.FleetState, pe: E.SplitEnvParams, t: Array):
    committee = Committee(policy, committee_params)  # type: ignore[arg-type]
    return committee.act(E.round_obs(state, pe, t)) + 1


@dataclass
class _CommitteeAgent:
    """A trained committee deciding the splits, on the fleet its ``information`` shows it."""

    committee: Committee
    name: str = ""
    information: str = "oracle"

    def _run(self, decisions: Callable[..., Array], state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> Array:
        """``decisions(committee params, policy, state, pe, t)``: a jitted decision of the committee."""
        return decisions(self.committee.params, self.committee.policy, state, pe, jnp.asarray(t))


@dataclass
class RoundAgent(_CommitteeAgent):
    """The committee choosing one split for the round."""

    name: str = "dqn_round"

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        """The committee's split for every client."""
        split = self._run(_round_action, state, pe, t)
        return np.full(pe.fleet.clients, int(split), np.int32)


def client_turns(committee: Committee, state: fl.FleetState, pe: E.SplitEnvParams, t: Array) -> tuple[Array, Array]:
    """Per-client splits ``(n,)``, clients in turn as in ``env.ClientSplitEnv``, and each client's
    members' mean Q-values ``(n, L)`` at its turn (jit-able)."""
    p = pe.fleet
    costs = E.all_split_costs(state, p)
    order = E.client_order(p)

    def body(carry: tuple[Array, Array, Array], turn: Array) -> tuple[tuple[Array, Array, Array], None]:
        running, splits, q_mean = carry
        client = order[turn]
        obs = E.client_obs(state, pe, costs, client, running, turn, t)
        q = committee.q_values(obs)
        split = vote(q, E.holdable_splits(costs, client)) + 1
        _, running = E.client_share(pe, state, costs, client, split, running)
        return (running, splits.at[client].set(split), q_mean.at[client].set(jnp.mean(q, axis=0))), None

    init = (jnp.zeros(()), jnp.ones(p.clients, jnp.int32), jnp.zeros((p.clients, p.layers)))
    (_, splits, q_mean), _ = jax.lax.scan(body, init, jnp.arange(p.clients))
    return splits, q_mean


def client_decisions(committee: Committee, state: fl.FleetState, pe: E.SplitEnvParams, t: Array) -> Array:
    """Per-client splits, clients in turn as in ``env.ClientSplitEnv`` (jit-able)."""
    return client_turns(committee, state, pe, t)[0]


@partial(jax.jit, static_argnums=1)
def _client_actions(committee_params: object, policy: object, state: fl.FleetState, pe: E.SplitEnvParams, t: Array):
    return client_decisions(Committee(policy, committee_params), state, pe, t)  # type: ignore[arg-type]


@dataclass
class ClientAgent(_CommitteeAgent):
    """The committee choosing each client's split in turn."""

    name: str = "dqn_client"

    def decide(self, state: fl.FleetState, pe: E.SplitEnvParams, t: int) -> np.ndarray:
        """The committee's split per client."""
        return np.asarray(self._run(_client_actions, state, pe, t))
