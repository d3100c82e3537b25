"""Device tiers, their battery/availability dynamics and the capability state (pydantic and numpy: no JAX).

``DeviceScenario`` describes a fleet of clients in named tiers. The defaults are **design values**
of realistic orders of magnitude for the boards of FedAdapt's testbed (Wu et al., IEEE IoT J. 9(21),
2022: Raspberry Pi 3, Raspberry Pi 4, NVIDIA Jetson), not measurements: effective training MAC/s
of PyTorch-class frameworks on such boards, memory left for training, a battery pack, Wi-Fi/LTE-like
links and board power draws.

``DeviceState`` is the fleet's state between rounds. Unlike QSplitFL's action-independent random
walk (note section 2a), the split changes it: ``step`` drains each client's battery by the energy its
split caused (``costs.split_costs``), so a heavy split makes weak devices drop out. Per round:

- CPU availability: the share of a client's MAC/s free of background load, ``U(cpu_share_min, 1)``;
- link jitter: a multiplicative factor on both links, log-normal with mean 1 and log-std
  ``link_jitter``;
- battery: a training client loses ``energy_used_j``; any other client gains
  ``(recharge_w - idle_w) * round_time_s`` (a dropped-out one, switched off, ``recharge_w *
  round_time_s``), clipped to [0, capacity];
- dropout: an available client whose battery falls below ``battery_reserve`` of capacity drops out
  (and, with probability ``dropout_prob``, any available client for one round); a dropped-out
  client comes back once recharged to ``rejoin_share``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from pydantic import Field, model_validator

from decisions.core.settings import Settings
from decisions.telecom.splitfl.costs import ClientSpecs

CAPABILITY_FEATURES = ("cpu", "memory", "battery", "network", "overall", "overall_std", "available")
"""The capability vector: means over the selected clients of the four scores and overall, the std of
overall (QSplitFL's 6-D state), and the share of the fleet available."""


def _positive(description: str) -> object:
    return Field(gt=0.0, allow_inf_nan=False, description=description)


class Tier(Settings):
    """A class of identical devices (the tier's name is its key in ``DeviceScenario.tiers``)."""

    clients: int = Field(ge=0, le=10_000, description="Clients of this tier.")
    cpu_macs_per_s: float = _positive("Effective training MAC/s of the board (framework included).")
    memory_mb: float = _positive("Memory left for training (MB).")
    battery_j: float = _positive("Battery capacity (J).")
    link_mbps: float = _positive("Uplink rate (Mb/s).")
    downlink_mbps: float = _positive("Downlink rate (Mb/s).")
    latency_ms: float = Field(ge=0.0, allow_inf_nan=False, description="One-way message latency (ms).")
    power_w_compute: float = _positive("Board power while training (W).")
    power_w_tx: float = _positive("Board power while transmitting (W).")
    idle_w: float = Field(ge=0.0, allow_inf_nan=False, description="Board power while idle or waiting (W).")


def _default_tiers() -> dict[str, Tier]:
    # Design values (orders of magnitude of FedAdapt's Pi 3 / Pi 4 / Jetson testbed), not measurements.
    return {
        "weak": Tier(clients=4, cpu_macs_per_s=0.5e9, memory_mb=256, battery_j=36_000, link_mbps=10,
                     downlink_mbps=20, latency_ms=20, power_w_compute=3.7, power_w_tx=1.0, idle_w=1.4),
        "medium": Tier(clients=4, cpu_macs_per_s=2e9, memory_mb=1024, battery_j=72_000, link_mbps=50,
                       downlink_mbps=100, latency_ms=10, power_w_compute=6.4, power_w_tx=1.2, idle_w=2.7),
        "strong": Tier(clients=2, cpu_macs_per_s=20e9, memory_mb=4096, battery_j=180_000, link_mbps=100,
                       downlink_mbps=200, latency_ms=5, power_w_compute=10.0, power_w_tx=1.5, idle_w=3.0),
    }


class DeviceScenario(Settings):
    """The fleet: tiers of clients, the server, the round deadline and the battery dynamics (design values)."""

    section = "devices"

    tiers: dict[str, Tier] = Field(default_factory=_default_tiers, description="Tiers of clients by name.")
    server_macs_per_s: float = Field(
        1e12, gt=0.0, allow_inf_nan=False, description="Server's effective training MAC/s, shared by a round's clients."
    )
    round_deadline_s: float = Field(
        600.0, gt=0.0, allow_inf_nan=False, description="Round deadline (s): a client slower than this misses the round."
    )
    battery_reserve: float = Field(
        0.2, ge=0.0, lt=1.0, description="Battery share below which a client drops out."
    )
    rejoin_share: float = Field(0.5, gt=0.0, le=1.0, description="Battery share at which it comes back.")
    recharge_w: float = Field(5.0, ge=0.0, allow_inf_nan=False, description="Charging power when not training (W).")
    initial_charge: float = Field(1.0, gt=0.0, le=1.0, description="Battery share at the start.")
    cpu_share_min: float = Field(
        0.5, gt=0.0, le=1.0, description="Least share of a client's MAC/s free of background load (uniform to 1)."
    )
    link_jitter: float = Field(
        0.3, ge=0.0, le=2.0, description="Log-std of the per-round link-rate factor (log-normal, mean 1)."
    )
    dropout_prob: float = Field(0.0, ge=0.0, le=1.0, description="Chance an available client misses a round.")

    @model_validator(mode="after")
    def _consistent(self) -> DeviceScenario:
        if not self.tiers:
            raise ValueError("tiers: at least one tier is needed")
        if sum(t.clients for t in self.tiers.values()) < 1:
            raise ValueError("tiers: at least one client is needed")
        if self.rejoin_share <= self.battery_reserve:
            raise ValueError(
                f"rejoin_share: {self.rejoin_share} must exceed battery_reserve ({self.battery_reserve})"
            )
        return self

    def tier_specs(self) -> tuple[tuple[str, ...], ClientSpecs]:
        """The tiers' nominal capability (no load, no jitter), one entry per tier.

        Returns:
            The tier names and their ``ClientSpecs`` (each field ``(tiers,)``).
        """
        names = tuple(self.tiers)
        t = [self.tiers[k] for k in names]
        return names, ClientSpecs(
            macs_per_s=np.array([x.cpu_macs_per_s for x in t]),
            uplink_mbps=np.array([x.link_mbps for x in t]),
            downlink_mbps=np.array([x.downlink_mbps for x in t]),
            latency_s=np.array([x.latency_ms / 1000 for x in t]),
            memory_mb=np.array([x.memory_mb for x in t]),
            power_compute_w=np.array([x.power_w_compute for x in t]),
            power_tx_w=np.array([x.power_w_tx for x in t]),
            power_idle_w=np.array([x.idle_w for x in t]),
        )


@dataclass(frozen=True)
class DeviceState:
    """The fleet between rounds: static per-client specs and the dynamic battery, availability, load, jitter."""

    scenario: DeviceScenario
    tier: np.ndarray
    """``(n,)`` tier index of each client (into ``tier_names``)."""
    tier_names: tuple[str, ...]
    nominal: ClientSpecs
    """Per-client nominal capability, each ``(n,)``."""
    capacity_j: np.ndarray
    battery_j: np.ndarray
    available: np.ndarray
    """``(n,)`` whether the client can train this round (powered and not randomly missing)."""
    powered: np.ndarray
    """``(n,)`` whether the battery keeps the client in (below the reserve: out until ``rejoin_share``)."""
    cpu_share: np.ndarray
    link_factor: np.ndarray
    round: int = 0

    @property
    def clients(self) -> int:
        """Number of clients."""
        return len(self.tier)

    def specs(self) -> ClientSpecs:
        """This round's effective capability per client: MAC/s times CPU share, links times jitter."""
        return self.nominal._replace(
            macs_per_s=self.nominal.macs_per_s * self.cpu_share,
            uplink_mbps=self.nominal.uplink_mbps * self.link_factor,
            downlink_mbps=self.nominal.downlink_mbps * self.link_factor,
        )


def _draw_load(scenario: DeviceScenario, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    cpu = rng.uniform(scenario.cpu_share_min, 1.0, n)
    sigma = scenario.link_jitter
    link = np.exp(sigma * rng.standard_normal(n) - sigma**2 / 2)
    return cpu, link


def initial_state(scenario: DeviceScenario, rng: np.random.Generator) -> DeviceState:
    """The fleet at round 0: clients tier by tier, batteries at ``initial_charge``, all available.

    Args:
        scenario: the validated scenario.
        rng: draws the first round's CPU load and link jitter.

    Returns:
        The ``DeviceState``.
    """
    names, specs = scenario.tier_specs()
    tier = np.repeat(np.arange(len(names)), [scenario.tiers[k].clients for k in names])
    capacity = np.array([scenario.tiers[k].battery_j for k in names])[tier]
    cpu, link = _draw_load(scenario, len(tier), rng)
    return DeviceState(
        scenario=scenario,
        tier=tier,
        tier_names=names,
        nominal=ClientSpecs(*(v[tier] for v in specs)),
        capacity_j=capacity,
        battery_j=capacity * scenario.initial_charge,
        available=np.ones(len(tier), dtype=bool),
        powered=np.ones(len(tier), dtype=bool),
        cpu_share=cpu,
        link_factor=link,
    )


def step(
    state: DeviceState,
    energy_used_j: np.ndarray,
    round_time_s: float,
    rng: np.random.Generator,
    selected: np.ndarray | None = None,
) -> DeviceState:
    """Advance the fleet by one round: drain, recharge, drop out, rejoin, draw the next load and jitter.

    Args:
        state: the fleet before the round.
        energy_used_j: ``(n,)`` energy each client spent on the round (zero for clients that did not train).
        round_time_s: the round's duration (its latency), for idle drain and recharging.
        rng: draws random dropouts and the next round's CPU load and link jitter.
        selected: ``(n,)`` mask of the clients that trained (default: ``energy_used_j > 0``).

    Returns:
        The fleet after the round (``round`` + 1).
    """
    sc = state.scenario
    energy = np.broadcast_to(np.asarray(energy_used_j, dtype=np.float64), state.tier.shape)
    trained = energy > 0 if selected is None else np.asarray(selected, dtype=bool)
    idle_net = (sc.recharge_w - state.nominal.power_idle_w) * round_time_s
    gain = np.where(trained, -energy, np.where(state.powered, idle_net, sc.recharge_w * round_time_s))
    battery = np.clip(state.battery_j + gain, 0.0, state.capacity_j)
    share = battery / state.capacity_j
    powered = np.where(state.powered, share >= sc.battery_reserve, share >= sc.rejoin_share)
    missed = rng.random(len(battery)) < sc.dropout_prob  # a random miss lasts the coming round only
    cpu, link = _draw_load(sc, len(battery), rng)
    return replace(state, battery_j=battery, powered=powered, available=powered & ~missed,
                   cpu_share=cpu, link_factor=link, round=state.round + 1)


def client_capability(state: DeviceState) -> np.ndarray:
    """Per-client scores in [0, 1]: CPU, memory, battery, network and overall (their mean), ``(n, 5)``.

    CPU and network are this round's effective MAC/s and uplink over the fleet's best nominal ones,
    memory over the fleet's largest, battery the state of charge.
    """
    spec = state.specs()
    cpu = spec.macs_per_s / state.nominal.macs_per_s.max()
    mem = spec.memory_mb / state.nominal.memory_mb.max()
    bat = state.battery_j / state.capacity_j
    net = np.minimum(spec.uplink_mbps / state.nominal.uplink_mbps.max(), 1.0)
    scores = np.stack([cpu, mem, bat, net], axis=1)
    return np.concatenate([scores, scores.mean(axis=1, keepdims=True)], axis=1)


def capability(state: DeviceState, selected: np.ndarray | None = None) -> np.ndarray:
    """The capability state (``CAPABILITY_FEATURES``): QSplitFL's 6-D vector plus the available share.

    Args:
        state: the fleet.
        selected: ``(n,)`` mask of the round's clients (default: the available ones; none: all).

    Returns:
        ``(7,)`` float32: means of CPU, memory, battery, network and overall over the selected
        clients, the std of overall, and the share of the fleet available.
    """
    scores = client_capability(state)
    mask = state.available if selected is None else np.asarray(selected, dtype=bool)
    if not mask.any():
        mask = np.ones_like(mask)
    chosen = scores[mask]
    return np.concatenate(
        [chosen.mean(axis=0), [chosen[:, 4].std()], [state.available.mean()]]
    ).astype(np.float32)
