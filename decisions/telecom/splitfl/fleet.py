"""The fleet in JAX: per-round costs of the chosen splits, battery dynamics, dropouts, the capability state.

Persistence (``DeviceScenario``'s ``*_persistence``, ``battery_fade``, ``leave_prob`` / ``join_prob``):
each client's free CPU share and log link factor follow AR(1) processes across rounds (a latent unit
Gaussian each, ``FleetState.load_z`` / ``link_z``), its battery's capacity fades with the energy it
draws, and it leaves the fleet or a fresh device joins its empty slot with a probability per round.
With every one of them 0 the draws are the independent ones of a fleet without persistence, bit for bit.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.telecom.splitfl.costs import ClientSpecs, Layer, SplitCosts, cost_terms, table_arrays
from decisions.telecom.splitfl.devices import DeviceScenario

CAPABILITY_FEATURES = ("cpu", "memory", "battery", "network", "overall", "overall_std", "available")
"""The capability vector: means over the round's clients of the four scores and overall, the std of
overall (QSplitFL's 6-D state), and the share of the fleet available."""


@struct.dataclass
class FleetParams:
    """Static fleet, network and workload numbers as arrays (vmappable; built by ``fleet_params``)."""

    nominal: ClientSpecs
    """Per-client nominal capability, each ``(n,)``."""
    capacity_j: Array
    recharge_w: Array
    tier: Array
    """``(n,)`` tier index."""
    cols: dict[str, Array]
    """``costs.table_arrays`` columns, each ``(L,)``."""
    batch: Array
    local_steps: Array
    server_macs_per_s: Array
    deadline_s: Array
    reserve: Array
    rejoin: Array
    initial_charge: Array
    cpu_share_min: Array
    link_jitter: Array
    dropout_prob: Array
    load_persistence: Array
    link_persistence: Array
    battery_fade: Array
    leave_prob: Array
    join_prob: Array

    @property
    def clients(self) -> int:
        """Number of clients."""
        return int(self.capacity_j.shape[0])

    @property
    def layers(self) -> int:
        """Number of layers ``L`` (splits are ``1..L``; ``L`` is the whole network on the client)."""
        return int(self.cols["client_macs"].shape[0])


@struct.dataclass
class FleetState:
    """The fleet between rounds: the next round's CPU share and link factor drawn, each ``(n,)``.

    The persistence fields are None in a state built from reports (``capacity`` / ``present`` read
    None as the nominal capacity / every client enrolled; ``play_round`` starts None latents at 0).
    """

    battery_j: Array
    powered: Array
    available: Array
    cpu_share: Array
    link_factor: Array
    capacity_j: Array | None = None
    """The battery's capacity now (it fades with use)."""
    present: Array | None = None
    """Enrolled in the fleet (clients leave and join)."""
    load_z: Array | None = None
    """Latent unit Gaussian of the background load (AR(1))."""
    link_z: Array | None = None
    """Latent unit Gaussian of the log link factor (AR(1))."""


@struct.dataclass
class RoundOutcome:
    """What a round did, per client ``(n,)`` unless noted."""

    participated: Array
    timed_out: Array
    refused: Array
    """Available but the split does not fit the client's memory."""
    died: Array
    """Available but the battery ran out during the round."""
    eligible: Array
    """Available at the start of the round."""
    client_time_s: Array
    energy_j: Array
    bytes_sent: Array
    """Bytes up and down of the participants."""
    round_time_s: Array
    """Scalar: the round's duration."""


def fleet_params(
    scenario: DeviceScenario, table: list[Any] | tuple[Layer, ...], batch: int, local_steps: int
) -> FleetParams:
    """``FleetParams`` (float32 arrays) of a validated ``scenario``, a network's layer table and the workload."""
    tier = scenario.client_tiers()
    _, specs = scenario.tier_specs()
    tiers = list(scenario.tiers.values())
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    return FleetParams(
        nominal=ClientSpecs(*(f32(np.asarray(v)[tier]) for v in specs)),
        capacity_j=f32(np.array([t.battery_j for t in tiers])[tier]),
        recharge_w=f32(np.array([t.recharge_w for t in tiers])[tier]),
        tier=jnp.asarray(tier, jnp.int32),
        cols={k: f32(v) for k, v in table_arrays(table).items()},
        batch=f32(batch),
        local_steps=f32(local_steps),
        server_macs_per_s=f32(scenario.server_macs_per_s),
        deadline_s=f32(scenario.round_deadline_s),
        reserve=f32(scenario.battery_reserve),
        rejoin=f32(scenario.rejoin_share),
        initial_charge=f32(scenario.initial_charge),
        cpu_share_min=f32(scenario.cpu_share_min),
        link_jitter=f32(scenario.link_jitter),
        dropout_prob=f32(scenario.dropout_prob),
        load_persistence=f32(scenario.load_persistence),
        link_persistence=f32(scenario.link_persistence),
        battery_fade=f32(scenario.battery_fade),
        leave_prob=f32(scenario.leave_prob),
        join_prob=f32(scenario.join_prob),
    )


def _draw_load(key: Array, p: FleetParams, latent: tuple[Array, Array] | None) -> tuple[Array, Array, Array, Array]:
    """``(cpu_share, link_factor, load_z, link_z)`` of the next round; ``latent`` None draws the stationary law."""
    k_cpu, k_link = jax.random.split(key)
    n = p.clients
    iid = jax.random.uniform(k_cpu, (n,), minval=p.cpu_share_min, maxval=1.0)
    span = 1.0 - p.cpu_share_min
    u = jnp.where(span > 0, (iid - p.cpu_share_min) / jnp.maximum(span, 1e-12), 0.5)
    fresh_load = jax.scipy.special.ndtri(jnp.clip(u, 1e-6, 1.0 - 1e-6))
    fresh_link = jax.random.normal(k_link, (n,))
    load_prev, link_prev = (jnp.zeros(n), jnp.zeros(n)) if latent is None else latent
    rho_load = 0.0 if latent is None else p.load_persistence
    rho_link = 0.0 if latent is None else p.link_persistence
    load_z = rho_load * load_prev + jnp.sqrt(1.0 - rho_load**2) * fresh_load
    link_z = rho_link * link_prev + jnp.sqrt(1.0 - rho_link**2) * fresh_link
    cpu = jnp.where(rho_load > 0, p.cpu_share_min + span * jax.scipy.special.ndtr(load_z), iid)
    sigma = p.link_jitter
    link = jnp.exp(sigma * link_z - sigma**2 / 2)
    return cpu, link, load_z, link_z


def reset(key: Array, p: FleetParams) -> FleetState:
    """The fleet at round 0: batteries at ``initial_charge`` of a new battery, every client enrolled and
    available, the first load drawn from its stationary law."""
    cpu, link, load_z, link_z = _draw_load(key, p, None)
    on = jnp.ones(p.clients, bool)
    return FleetState(p.capacity_j * p.initial_charge, on, on, cpu, link, p.capacity_j, on, load_z, link_z)


def capacity(state: FleetState, p: FleetParams) -> Array:
    """``(n,)`` each battery's capacity now (the nominal one when the state does not track ageing)."""
    return p.capacity_j if state.capacity_j is None else state.capacity_j


def charge_share(battery_j: Array, capacity_j: Array, p: FleetParams) -> Array:
    """``(n,)`` each battery's charge over its capacity ``capacity_j`` (over the nominal one, the same
    expression as without ageing, when batteries do not fade: its rounding is that of the fleet without it)."""
    return jnp.where(p.battery_fade > 0, battery_j / capacity_j, battery_j / p.capacity_j)


def present(state: FleetState, p: FleetParams) -> Array:
    """``(n,)`` whether each client is enrolled (all when the state does not track membership)."""
    return jnp.ones(p.clients, bool) if state.present is None else state.present


def effective_specs(state: FleetState, p: FleetParams) -> ClientSpecs:
    """This round's capability per client: MAC/s times the CPU share, links times the jitter."""
    return p.nominal._replace(
        macs_per_s=p.nominal.macs_per_s * state.cpu_share,
        uplink_mbps=p.nominal.uplink_mbps * state.link_factor,
        downlink_mbps=p.nominal.downlink_mbps * state.link_factor,
    )


def split_costs(state: FleetState, p: FleetParams, splits: Array, concurrent: Array | None = None) -> SplitCosts:
    """Per-client costs this round at ``splits`` (``(n,)`` or ``(..., n)`` ints in ``[1, L]``).

    ``concurrent`` (clients sharing the server) defaults to the available clients.
    """
    k = jnp.maximum(jnp.sum(state.available), 1) if concurrent is None else concurrent
    s = jnp.clip(jnp.asarray(splits, jnp.int32), 1, p.layers) - 1
    return cost_terms(jnp, p.cols, s, p.batch, p.local_steps, effective_specs(state, p), p.server_macs_per_s, k)


def client_fate(state: FleetState, p: FleetParams, costs: SplitCosts) -> tuple[Array, Array, Array, Array]:
    """``(participates, timed_out, refused, died)`` per client for the given costs (module docstring)."""
    fits = costs.fits_memory
    refused = state.available & ~fits
    trains = state.available & fits
    timed_out = trains & (costs.round_time_s > p.deadline_s)
    died = trains & ~timed_out & (costs.energy_j > state.battery_j)
    return trains & ~timed_out & ~died, timed_out, refused, died


def play_round(key: Array, state: FleetState, p: FleetParams, splits: Array) -> tuple[FleetState, RoundOutcome]:
    """``(next_state, RoundOutcome)``: one round at per-client ``splits`` (``(n,)`` in ``[1, L]``).

    Who trains, how long and what it costs, from ``state`` and the params ``p``; ``key`` draws the
    next round's random misses, CPU load and link jitter, and who leaves or joins (module docstring).
    Unavailable clients' splits are ignored.
    """
    outcome, spent, idle = _round_costs(state, p, splits)
    cap = jnp.maximum(capacity(state, p) - p.battery_fade * (spent + idle), 1e-3 * p.capacity_j)
    battery = jnp.clip(state.battery_j - spent - idle + p.recharge_w * outcome.round_time_s, 0.0, cap)
    share = charge_share(battery, cap, p)
    powered = jnp.where(state.powered & ~outcome.died, share >= p.reserve, share >= p.rejoin)
    k_miss, k_load = jax.random.split(key)
    missed = jax.random.uniform(k_miss, (p.clients,)) < p.dropout_prob
    latent = None if state.load_z is None or state.link_z is None else (state.load_z, state.link_z)
    cpu, link, load_z, link_z = _draw_load(k_load, p, latent)
    was = present(state, p)
    move = jax.random.uniform(jax.random.fold_in(key, 1), (p.clients,))
    now = jnp.where(was, move >= p.leave_prob, move < p.join_prob)
    joined = now & ~was
    cap = jnp.where(joined, p.capacity_j, cap)
    battery = jnp.where(joined, p.capacity_j * p.initial_charge, battery)
    powered = powered | joined
    available = now & powered & ~missed
    return FleetState(battery, powered, available, cpu, link, cap, now, load_z, link_z), outcome


def _round_costs(state: FleetState, p: FleetParams, splits: Array) -> tuple[RoundOutcome, Array, Array]:
    """The round's outcome at ``splits`` and the energy each battery gives training and idle."""
    c = split_costs(state, p, splits)
    part, timed_out, refused, died = client_fate(state, p, c)
    trains = part | timed_out | died
    busy = jnp.where(trains, jnp.minimum(c.round_time_s, p.deadline_s), 0.0)
    round_time = jnp.where(jnp.any(trains), jnp.max(busy), p.deadline_s)
    spent = jnp.where(part, c.energy_j, 0.0)
    spent = spent + jnp.where(timed_out, c.energy_j * p.deadline_s / c.round_time_s, 0.0)
    spent = jnp.where(died, state.battery_j, spent)
    wait = jnp.where(part, round_time - c.round_time_s, jnp.where(trains, 0.0, round_time))
    idle = jnp.where(state.powered & ~died, p.nominal.power_idle_w * wait, 0.0)
    outcome = RoundOutcome(
        participated=part,
        timed_out=timed_out,
        refused=refused,
        died=died,
        eligible=state.available,
        client_time_s=jnp.where(trains, busy, 0.0),
        energy_j=spent + idle,
        bytes_sent=jnp.where(part, c.bytes_up + c.bytes_down, 0.0),
        round_time_s=round_time,
    )
    return outcome, spent, idle


def client_scores(state: FleetState, p: FleetParams) -> Array:
    """Per-client scores in [0, 1]: CPU, memory, battery, network and overall (their mean), ``(n, 5)``.

    CPU and network are this round's effective MAC/s and uplink over the fleet's best nominal ones,
    memory over the fleet's largest, battery the state of charge.
    """
    spec = effective_specs(state, p)
    cpu = spec.macs_per_s / jnp.max(p.nominal.macs_per_s)
    mem = spec.memory_mb / jnp.max(p.nominal.memory_mb)
    bat = charge_share(state.battery_j, capacity(state, p), p)
    net = jnp.minimum(spec.uplink_mbps / jnp.max(p.nominal.uplink_mbps), 1.0)
    scores = jnp.stack([cpu, mem, bat, net], axis=1)
    return jnp.concatenate([scores, scores.mean(axis=1, keepdims=True)], axis=1)


def capability(state: FleetState, p: FleetParams, selected: Array | None = None) -> Array:
    """The capability state (``CAPABILITY_FEATURES``): QSplitFL's 6-D vector plus the available share.

    Args:
        state: the fleet.
        p: its params.
        selected: ``(n,)`` mask of the round's clients (default: the available ones; all when none is).

    Returns:
        ``(7,)`` float32.
    """
    scores = client_scores(state, p)
    mask = state.available if selected is None else jnp.asarray(selected, bool)
    mask = jnp.where(jnp.any(mask), mask, True)
    w = mask.astype(jnp.float32) / jnp.sum(mask)
    mean = w @ scores
    std = jnp.sqrt(jnp.maximum(w @ (scores[:, 4] - mean[4]) ** 2, 0.0))
    return jnp.concatenate([mean, std[None], jnp.mean(state.available)[None]]).astype(jnp.float32)
