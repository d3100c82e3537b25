"""Device tiers and the fleet scenario: validated user input (pydantic: no JAX)."""

from __future__ import annotations

import numpy as np
from pydantic import Field, model_validator

from decisions.core.settings import Settings
from decisions.telecom.splitfl.costs import ClientSpecs


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
    recharge_w: float = Field(
        0.0, ge=0.0, allow_inf_nan=False, description="Charging or harvesting power, all the time (W)."
    )


def _default_tiers() -> dict[str, Tier]:
    # Design values (module docstring), not measurements.
    return {
        "weak": Tier(clients=4, cpu_macs_per_s=0.1e9, memory_mb=0.5, battery_j=300, link_mbps=20,
                     downlink_mbps=20, latency_ms=10, power_w_compute=2.0, power_w_tx=1.5, idle_w=0.3,
                     recharge_w=0.2),
        "medium": Tier(clients=4, cpu_macs_per_s=3e9, memory_mb=1024, battery_j=40_000, link_mbps=2,
                       downlink_mbps=10, latency_ms=40, power_w_compute=4.0, power_w_tx=2.5, idle_w=0.5),
        "strong": Tier(clients=2, cpu_macs_per_s=20e9, memory_mb=4096, battery_j=1e6, link_mbps=50,
                       downlink_mbps=100, latency_ms=5, power_w_compute=10.0, power_w_tx=1.5, idle_w=3.0,
                       recharge_w=20.0),
    }


class DeviceScenario(Settings):
    """The fleet: tiers of clients, the server, the round deadline and the battery dynamics (design values)."""

    section = "devices"

    tiers: dict[str, Tier] = Field(default_factory=_default_tiers, description="Tiers of clients by name.")
    fleet_file: str | None = Field(
        None, description="CSV of one's own devices (``fleet_file.read_fleet``), read into ``tiers`` when the spec is read."
    )
    server_macs_per_s: float = Field(
        50e9, gt=0.0, allow_inf_nan=False, description="Server's effective training MAC/s, shared by a round's clients."
    )
    round_deadline_s: float = Field(
        10.0, gt=0.0, allow_inf_nan=False, description="Round deadline (s): a client slower than this misses the round."
    )
    battery_reserve: float = Field(
        0.2, ge=0.0, lt=1.0, description="Battery share below which a client drops out."
    )
    rejoin_share: float = Field(0.5, gt=0.0, le=1.0, description="Battery share at which it comes back.")
    initial_charge: float = Field(1.0, gt=0.0, le=1.0, description="Battery share at the start.")
    cpu_share_min: float = Field(
        0.5, gt=0.0, le=1.0, description="Least share of a client's MAC/s free of background load (uniform to 1)."
    )
    link_jitter: float = Field(
        0.3, ge=0.0, le=2.0, description="Log-std of the per-round link-rate factor (log-normal, mean 1)."
    )
    dropout_prob: float = Field(0.0, ge=0.0, le=1.0, description="Chance an available client misses a round.")
    load_persistence: float = Field(
        0.0, ge=0.0, lt=1.0, description="Round-to-round correlation of each client's background load (AR(1) on a "
        "Gaussian copula: the free CPU share stays uniform on [cpu_share_min, 1]; 0: independent draws each round)."
    )
    link_persistence: float = Field(
        0.0, ge=0.0, lt=1.0, description="Round-to-round correlation of each client's log link-rate factor (AR(1), "
        "still log-normal with mean 1 and log-std link_jitter; 0: independent draws each round)."
    )
    battery_fade: float = Field(
        0.0, ge=0.0, le=0.5, description="Share of the energy a client draws that its battery's capacity loses "
        "(cycle ageing: 0.05 loses 5% of the capacity per full discharge; 0: no ageing)."
    )
    leave_prob: float = Field(
        0.0, ge=0.0, le=1.0, description="Chance per round that an enrolled client leaves the fleet (0: none leaves)."
    )
    join_prob: float = Field(
        0.0, ge=0.0, le=1.0, description="Chance per round that a client's empty slot is filled by a fresh device of "
        "its tier (full capacity, charged at initial_charge)."
    )

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
        if self.leave_prob > 0 and self.join_prob == 0:
            raise ValueError("join_prob: must be positive when leave_prob is (else the fleet only shrinks)")
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

    def client_tiers(self) -> np.ndarray:
        """``(n,)`` tier index of each client, tier by tier in ``tiers`` order."""
        return np.repeat(np.arange(len(self.tiers)), [t.clients for t in self.tiers.values()])
