"""The fleet in JAX: per-round costs of the chosen splits, battery dynamics, dropouts, the capability state."""

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
    """The fleet between rounds."""

    battery_j: Array
    powered: Array
    available: Array
    cpu_share: Array
    link_factor: Array


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
    )


def _draw_load(key: Array, p: FleetParams) -> tuple[Array, Array]:
    k_cpu, k_link = jax.random.split(key)
    n = p.clients
    cpu = jax.random.uniform(k_cpu, (n,), minval=p.cpu_share_min, maxval=1.0)
    sigma = p.link_jitter
    link = jnp.exp(sigma * jax.random.normal(k_link, (n,)) - sigma**2 / 2)
    return cpu, link


def reset(key: Array, p: FleetParams) -> FleetState:
    """The fleet at round 0: batteries at ``initial_charge``, every client available, the first load drawn."""
    cpu, link = _draw_load(key, p)
    on = jnp.ones(p.clients, bool)
    return FleetState(p.capacity_j * p.initial_charge, on, on, cpu, link)


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
    next round's random misses, CPU load and link jitter. Unavailable clients' splits are ignored.
    """
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
    battery = jnp.clip(state.battery_j - spent - idle + p.recharge_w * round_time, 0.0, p.capacity_j)
    share = battery / p.capacity_j
    powered = jnp.where(state.powered & ~died, share >= p.reserve, share >= p.rejoin)
    k_miss, k_load = jax.random.split(key)
    missed = jax.random.uniform(k_miss, (p.clients,)) < p.dropout_prob
    cpu, link = _draw_load(k_load, p)
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
    return FleetState(battery, powered, powered & ~missed, cpu, link), outcome


def client_scores(state: FleetState, p: FleetParams) -> Array:
    """Per-client scores in [0, 1]: CPU, memory, battery, network and overall (their mean), ``(n, 5)``.

    CPU and network are this round's effective MAC/s and uplink over the fleet's best nominal ones,
    memory over the fleet's largest, battery the state of charge.
    """
    spec = effective_specs(state, p)
    cpu = spec.macs_per_s / jnp.max(p.nominal.macs_per_s)
    mem = spec.memory_mb / jnp.max(p.nominal.memory_mb)
    bat = state.battery_j / p.capacity_j
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
