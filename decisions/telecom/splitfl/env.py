"""The split-point decision as core environments: one split per round, or one per client in turn.

Both run the fleet of ``fleet`` (the same costs, batteries and dropouts as the real federation) with
a **surrogate for the learning**: the loss of a run falls with the data that took part,
``L = floor + (start - floor) * exp(-E / learn_rounds)``, ``E`` the sum over rounds of the
participants' share of the training samples. In the real federation (``federation``) the loss is the
model's validation loss; the surrogate only lets the agent be trained before the run, in JAX, on
thousands of simulated rounds, as FedAdapt trains its agent before deployment.

The reward of a round (``round_reward``) is QSplitFL's decayed loss drop with the round's costs:

    r_t = loss_weight * exp(-decay * t) * (L_{t-1} - L_t) / L_0
          - time_weight * round_time / deadline
          - dropout_weight * (available clients that did not make the round) / n
          - energy_weight * mean over clients of energy / battery capacity

so the split acts through time and energy and through who makes the round (the loss drop alone
would not depend on the split: split training equals unsplit training).

What the agent sees of the fleet is ``SplitEnvParams.information`` (``server_view``): the round's
draws (the oracle), or what the server knows before the round, its reports and a forecast of the
round's load and links from earlier rounds' measurements; the observations below are of that fleet,
the rewards of the real one.

- ``RoundSplitEnv``: one decision a round, the split for every client. Observation: the capability
  state (``fleet.CAPABILITY_FEATURES``), the round's progress, and per split the slowest available
  client's round time over the deadline and the share of available clients that would miss the
  round.
- ``ClientSplitEnv``: one decision per client, clients in turn from the slowest nominal CPU up, a
  round every ``n`` steps. Observation: the client's scores, its rates (log10), whether it is
  available, per split its round time over the deadline (3 when it would not fit) and its energy
  over its battery, the round's running straggler time so far over the deadline, its turn and the
  round's progress. A client's reward is its share of the round's: the amount by which it raises
  the running straggler time and its own miss and energy terms; the round's last step adds the
  rest (the loss drop and any difference), so a round's rewards sum to ``round_reward``.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct
from jax import Array

from decisions.core.env import Environment, Info, PRNGKey
from decisions.core.spaces import Box, Discrete
from decisions.telecom.splitfl import fleet as fl
from decisions.telecom.splitfl import server_view as sv
from decisions.telecom.splitfl.costs import SplitCosts

TIME_CAP = 3.0
"""Cap of the time-over-deadline observations (and their value for a split that does not fit)."""


@struct.dataclass
class SplitEnvParams:
    """The fleet, the clients' data shares, the episode length, the surrogate and the reward weights."""

    fleet: fl.FleetParams
    data_share: Array
    """``(n,)`` each client's share of the training samples."""
    rounds: Array
    loss_start: Array
    loss_floor: Array
    learn_rounds: Array
    decay: Array
    loss_weight: Array
    time_weight: Array
    dropout_weight: Array
    energy_weight: Array
    information: str = struct.field(pytree_node=False, default="oracle")
    """What the agent sees (``server_view.INFORMATION``)."""
    window: int = struct.field(pytree_node=False, default=5)
    """Measurements in the server's moving mean."""
    alpha: float = struct.field(pytree_node=False, default=0.3)
    """Weight of the newest measurement in the server's smoothed forecast."""


def env_params(
    fleet: fl.FleetParams,
    data_share: Any,
    rounds: int,
    *,
    decay: float,
    loss_weight: float,
    time_weight: float,
    dropout_weight: float,
    energy_weight: float,
    loss_start: float = 2.3,
    loss_floor: float = 0.3,
    learn_rounds: float | None = None,
    information: str = "oracle",
    window: int = 5,
    alpha: float = 0.3,
) -> SplitEnvParams:
    """Build ``SplitEnvParams`` (``learn_rounds`` defaults to a quarter of ``rounds``; ``information``,
    ``window``, ``alpha``: what the agent sees, ``server_view``)."""
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    share = jnp.asarray(data_share, jnp.float32)
    return SplitEnvParams(
        fleet=fleet,
        data_share=share / jnp.sum(share),
        rounds=jnp.asarray(rounds, jnp.int32),
        loss_start=f32(loss_start),
        loss_floor=f32(loss_floor),
        learn_rounds=f32(rounds / 4 if learn_rounds is None else learn_rounds),
        decay=f32(decay),
        loss_weight=f32(loss_weight),
        time_weight=f32(time_weight),
        dropout_weight=f32(dropout_weight),
        energy_weight=f32(energy_weight),
        information=information,
        window=int(window),
        alpha=float(alpha),
    )


def surrogate_loss(pe: SplitEnvParams, progress: Array) -> Array:
    """The surrogate loss after ``progress`` rounds' worth of participating data."""
    return pe.loss_floor + (pe.loss_start - pe.loss_floor) * jnp.exp(-progress / pe.learn_rounds)


def loss_term(pe: SplitEnvParams, t: Array, loss_prev: Array, loss_new: Array) -> Array:
    """QSplitFL's decayed loss drop of round ``t`` (0-based), weighted and over the starting loss."""
    return pe.loss_weight * jnp.exp(-pe.decay * t) * (loss_prev - loss_new) / pe.loss_start


def cost_terms_of(pe: SplitEnvParams, outcome: fl.RoundOutcome) -> Array:
    """The round's (negative) time, miss and energy terms of ``round_reward``."""
    p = pe.fleet
    missed = jnp.sum(outcome.eligible & ~outcome.participated) / p.clients
    energy = jnp.mean(outcome.energy_j / p.capacity_j)
    return -(pe.time_weight * outcome.round_time_s / p.deadline_s + pe.dropout_weight * missed
             + pe.energy_weight * energy)


def round_reward(pe: SplitEnvParams, outcome: fl.RoundOutcome, t: Array, loss_prev: Array, loss_new: Array) -> Array:
    """The reward of a round (module docstring)."""
    return loss_term(pe, t, loss_prev, loss_new) + cost_terms_of(pe, outcome)


def all_split_costs(state: fl.FleetState, p: fl.FleetParams) -> SplitCosts:
    """Every client's costs at every split this round, each ``(L, n)``."""
    return fl.split_costs(state, p, jnp.arange(1, p.layers + 1)[:, None])


def _times_over_deadline(state: fl.FleetState, p: fl.FleetParams, costs: SplitCosts) -> Array:
    """``(L, n)`` round time over the deadline, ``TIME_CAP`` where the split does not fit."""
    ratio = jnp.minimum(costs.round_time_s / p.deadline_s, TIME_CAP)
    return jnp.where(costs.fits_memory, ratio, TIME_CAP)


def round_obs(state: fl.FleetState, pe: SplitEnvParams, t: Array) -> Array:
    """``RoundSplitEnv``'s observation (module docstring)."""
    p = pe.fleet
    costs = all_split_costs(state, p)
    ratio = _times_over_deadline(state, p, costs)
    avail = state.available
    slowest = jnp.max(jnp.where(avail, ratio, 0.0), axis=1)
    part, *_ = fl.client_fate(state, p, costs)
    miss = jnp.sum(avail & ~part, axis=1) / jnp.maximum(jnp.sum(avail), 1)
    progress = (t / pe.rounds)[None]
    return jnp.concatenate([fl.capability(state, p), progress, slowest, miss]).astype(jnp.float32)


def client_order(p: fl.FleetParams) -> Array:
    """The order clients decide in: slowest nominal CPU first (stable)."""
    return jnp.argsort(p.nominal.macs_per_s, stable=True)


def client_obs(
    state: fl.FleetState, pe: SplitEnvParams, costs: SplitCosts, client: Array, running: Array, turn: Array, t: Array
) -> Array:
    """``ClientSplitEnv``'s observation for ``client`` (module docstring); ``costs`` from ``all_split_costs``."""
    p = pe.fleet
    scores = fl.client_scores(state, p)[client]
    spec = fl.effective_specs(state, p)
    rates = jnp.log10(jnp.stack([spec.macs_per_s[client] / 1e9, spec.uplink_mbps[client], spec.downlink_mbps[client]]))
    ratio = _times_over_deadline(state, p, costs)[:, client]
    energy = jnp.minimum(costs.energy_j[:, client] / jnp.maximum(state.battery_j[client], 1e-6), TIME_CAP)
    head = jnp.stack([state.available[client].astype(jnp.float32), running / p.deadline_s,
                      turn / p.clients, t / pe.rounds])
    return jnp.concatenate([scores, rates, head, ratio, energy]).astype(jnp.float32)


def holdable(costs: SplitCosts) -> Array:
    """``(L, n)`` bool: per client, the splits whose client part and a batch's activations fit its memory.

    Every split for a client none fits (it cannot train this round whatever it is told). The per-client
    agent votes only among these (``strategies.client_decisions``) and the fastest-split rule chooses
    among them: the server knows each device's memory from its capability report, and a split the device
    cannot hold only makes it refuse the round.
    """
    fits = costs.fits_memory
    return fits | ~jnp.any(fits, axis=0)


def holdable_splits(costs: SplitCosts, client: Array) -> Array:
    """``(L,)`` bool: ``holdable``'s splits of ``client``."""
    return holdable(costs)[:, client]


def client_share(
    pe: SplitEnvParams, state: fl.FleetState, costs: SplitCosts, client: Array, split: Array, running: Array
) -> tuple[Array, Array]:
    """A client's part of the round's cost terms at ``split``, and the new running straggler time.

    Returns:
        ``(reward_part, running)``.
    """
    p = pe.fleet
    one = jax.tree.map(lambda a: a[split - 1], costs)
    part, timed_out, refused, died = fl.client_fate(state, p, one)
    trains = (part | timed_out | died)[client]
    busy = jnp.minimum(one.round_time_s[client], p.deadline_s)
    new_running = jnp.where(trains, jnp.maximum(running, busy), running)
    missed = (state.available & ~part)[client]
    energy = jnp.where(part[client], one.energy_j[client], 0.0) / p.capacity_j[client]
    reward = -(pe.time_weight * (new_running - running) / p.deadline_s + pe.dropout_weight * missed / p.clients
               + pe.energy_weight * energy / p.clients)
    return reward, new_running


def seen(pe: SplitEnvParams, fleet: fl.FleetState, view: sv.ServerView) -> fl.FleetState:
    """The fleet as the agent sees it (``SplitEnvParams.information``)."""
    return sv.seen_state(view, fleet, pe.information)


@struct.dataclass
class RoundEnvState:
    """State of ``RoundSplitEnv``."""

    fleet: fl.FleetState
    t: Array
    progress: Array
    view: sv.ServerView


@struct.dataclass
class ClientEnvState:
    """State of ``ClientSplitEnv``."""

    fleet: fl.FleetState
    t: Array
    progress: Array
    turn: Array
    splits: Array
    running: Array
    partial: Array
    """Sum of the round's rewards so far."""
    view: sv.ServerView
    seen_running: Array
    """The running straggler time as the agent sees it (its observation's)."""


def _advance(
    pe: SplitEnvParams, key: Array, fleet_state: fl.FleetState, view: sv.ServerView, t: Array, progress: Array,
    splits: Array,
) -> tuple[fl.FleetState, sv.ServerView, Array, Array, dict[str, Array]]:
    new_fleet, outcome = fl.play_round(key, fleet_state, pe.fleet, splits)
    new_view = sv.observe(view, fleet_state, outcome, new_fleet, pe.fleet, pe.alpha)
    new_progress = progress + jnp.sum(jnp.where(outcome.participated, pe.data_share, 0.0))
    reward = round_reward(pe, outcome, t.astype(jnp.float32), surrogate_loss(pe, progress),
                          surrogate_loss(pe, new_progress))
    info = {"round_time_s": outcome.round_time_s, "participated": jnp.mean(outcome.participated)}
    return new_fleet, new_view, new_progress, reward, info


class _SplitEnv:
    """What both split environments share: params given at construction, splits ``1..L`` as actions."""

    def __init__(self, params: SplitEnvParams) -> None:
        self._params = params

    @property
    def default_params(self) -> SplitEnvParams:
        """The params given at construction."""
        return self._params

    def action_space(self, params: SplitEnvParams) -> Discrete:
        """Split ``1..L`` as actions ``0..L-1``."""
        return Discrete(params.fleet.layers)


class RoundSplitEnv(_SplitEnv, Environment[RoundEnvState, SplitEnvParams]):
    """One split for every client, once a round (module docstring).

    Args:
        params: the default params (``env_params``).
    """

    def reset(self, key: PRNGKey, params: SplitEnvParams) -> tuple[Array, RoundEnvState]:
        """Fresh fleet, round 0."""
        state = RoundEnvState(fl.reset(key, params.fleet), jnp.zeros((), jnp.int32), jnp.zeros(()),
                              sv.initial_view(params.fleet, params.window))
        return round_obs(seen(params, state.fleet, state.view), params, state.t), state

    def step(
        self, key: PRNGKey, state: RoundEnvState, action: Array, params: SplitEnvParams
    ) -> tuple[Array, RoundEnvState, Array, Array, Array, Info]:
        """Play a round at split ``action + 1`` for everyone."""
        splits = jnp.full(params.fleet.clients, action + 1, jnp.int32)
        fleet_state, view, progress, reward, info = _advance(params, key, state.fleet, state.view, state.t,
                                                             state.progress, splits)
        new = RoundEnvState(fleet_state, state.t + 1, progress, view)
        truncated = new.t >= params.rounds
        obs = round_obs(seen(params, fleet_state, view), params, new.t)
        return obs, new, reward, jnp.zeros((), bool), truncated, info

    def observation_space(self, params: SplitEnvParams) -> Box:
        """``7 + 1 + 2L`` features."""
        return Box(-10.0, 10.0, (8 + 2 * params.fleet.layers,), jnp.float32)


class ClientSplitEnv(_SplitEnv, Environment[ClientEnvState, SplitEnvParams]):
    """One split per client, clients in turn, a round every ``n`` steps (module docstring).

    Args:
        params: the default params (``env_params``).
    """

    def _obs(self, state: ClientEnvState, params: SplitEnvParams) -> Array:
        fleet = seen(params, state.fleet, state.view)
        costs = all_split_costs(fleet, params.fleet)
        client = client_order(params.fleet)[state.turn]
        return client_obs(fleet, params, costs, client, state.seen_running, state.turn, state.t)

    def reset(self, key: PRNGKey, params: SplitEnvParams) -> tuple[Array, ClientEnvState]:
        """Fresh fleet, round 0, the first client's turn."""
        n = params.fleet.clients
        zero = jnp.zeros(())
        state = ClientEnvState(fl.reset(key, params.fleet), jnp.zeros((), jnp.int32), zero,
                               jnp.zeros((), jnp.int32), jnp.ones(n, jnp.int32), zero, zero,
                               sv.initial_view(params.fleet, params.window), zero)
        return self._obs(state, params), state

    def step(
        self, key: PRNGKey, state: ClientEnvState, action: Array, params: SplitEnvParams
    ) -> tuple[Array, ClientEnvState, Array, Array, Array, Info]:
        """Set this client's split ``action + 1``; after the last client, play the round."""
        p = params.fleet
        costs = all_split_costs(state.fleet, p)
        client = client_order(p)[state.turn]
        split = (action + 1).astype(jnp.int32)
        part_reward, running = client_share(params, state.fleet, costs, client, split, state.running)
        fleet = seen(params, state.fleet, state.view)
        _, seen_running = client_share(params, fleet, all_split_costs(fleet, p), client, split, state.seen_running)
        splits = state.splits.at[client].set(split)
        last = state.turn == p.clients - 1
        fleet_state, view, progress, round_r, info = _advance(params, key, state.fleet, state.view, state.t,
                                                              state.progress, splits)
        reward = jnp.where(last, round_r - state.partial, part_reward)
        zero = jnp.zeros(())
        new = ClientEnvState(
            fleet=jax.tree.map(lambda a, b: jnp.where(last, a, b), fleet_state, state.fleet),
            t=state.t + last.astype(jnp.int32),
            progress=jnp.where(last, progress, state.progress),
            turn=jnp.where(last, 0, state.turn + 1),
            splits=splits,
            running=jnp.where(last, zero, running),
            partial=jnp.where(last, zero, state.partial + part_reward),
            view=jax.tree.map(lambda a, b: jnp.where(last, a, b), view, state.view),
            seen_running=jnp.where(last, zero, seen_running),
        )
        truncated = new.t >= params.rounds
        return self._obs(new, params), new, reward, jnp.zeros((), bool), truncated, info

    def observation_space(self, params: SplitEnvParams) -> Box:
        """``12 + 2L`` features."""
        return Box(-10.0, 10.0, (12 + 2 * params.fleet.layers,), jnp.float32)
