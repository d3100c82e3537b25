"""Per-split round cost of split-federated learning: time, energy, memory and traffic per client (numpy).

The standard model of the SFL/MEC literature (AdaptSFL 2403.13101, HASFL 2506.08426, ESFL 2402.15903;
``/work/shared/notes/splitfl.md`` section 2d). A split ``s`` is the number of client-side layers, as
in ``model.SplitNet`` (``s = L``: the whole network on the client, plain FedAvg); below, ``l = s - 1``
is the last client layer, so the client runs layers ``0..l`` of the layer table and the server the rest. Per client ``i``, per batch of ``B`` samples, with ``K`` local
steps (batches) per round:

- device compute ``= K * 3 * B * sum_{j<=l} MAC_j / f_i`` (3: forward + backward is about three
  forwards; ``f_i`` the client's effective MAC/s this round);
- uplink ``= K * (B * A_l * 32 / R_up_i + latency_i)`` (``A_l`` activation floats after layer ``l``,
  32 bits a value); the downlink of the activations' gradients has the same size over ``R_down_i``;
  with the whole network on the client (``s = L``, plain FedAvg) nothing crosses the link per step;
- server compute ``= K * 3 * B * sum_{j>l} MAC_j * k / F_s``: the server's MAC/s ``F_s`` are shared
  equally by the ``k`` clients of the round;
- sync (SFLV1 client-side FedAvg) ``= P_l * 32 / R_up_i + P_l * 32 / R_down_i + 2 * latency_i``, once a
  round (``P_l`` client-side parameters);
- round time = device + uplink + server + downlink + sync (no pipelining); the round's latency is the
  slowest client's (``round_latency``, the straggler term);
- energy ``= p_compute * device compute + p_tx * (uplink + sync up) + p_idle * (the rest of the
  client's round time)``, power times time, covering the client's own round time (the CMOS
  ``kappa f^2 cycles`` form is not used: its constants are not known for real boards);
- client memory ``= 4 bytes * (2 * P_l + B * sum_{j<=l} A_j)``: weights and their gradients, and the
  activations of a batch kept for the backward pass (fp32; optimiser state and framework overhead
  not counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from decisions.errors import InputError

BITS_PER_VALUE = 32
"""fp32 activations, gradients and parameters on the links."""
BACKWARD_FACTOR = 3.0
"""Training MACs per forward MAC (forward + backward, the usual approximation)."""


class Layer(Protocol):
    """A row of the layer table (``model.LayerInfo`` or anything with these attributes), per sample."""

    name: str
    macs: int
    out_floats: int
    params: int


class ClientSpecs(NamedTuple):
    """Per-client capability this round, each ``(n,)`` (or broadcastable): effective, after load and jitter."""

    macs_per_s: np.ndarray
    uplink_mbps: np.ndarray
    downlink_mbps: np.ndarray
    latency_s: np.ndarray
    memory_mb: np.ndarray
    power_compute_w: np.ndarray
    power_tx_w: np.ndarray
    power_idle_w: np.ndarray


class SplitCosts(NamedTuple):
    """One round's cost per client (and per split): arrays of shape ``split.shape + (n,)``."""

    device_compute_s: np.ndarray
    uplink_s: np.ndarray
    downlink_s: np.ndarray
    server_compute_s: np.ndarray
    sync_s: np.ndarray
    round_time_s: np.ndarray
    energy_j: np.ndarray
    client_memory_mb: np.ndarray
    fits_memory: np.ndarray
    bytes_up: np.ndarray
    bytes_down: np.ndarray


def table_arrays(table: Sequence[Layer]) -> dict[str, np.ndarray]:
    """Cumulative columns of a layer table, indexed by split ``l`` (client runs layers ``0..l``).

    Args:
        table: the layers, in order.

    Returns:
        ``client_macs`` (cumulative MACs), ``server_macs`` (the rest), ``out_floats`` (activations sent at
        each split), ``client_params`` (cumulative) and ``client_activations`` (cumulative floats).

    Raises:
        ValueError: an empty table or a negative entry.
    """
    if not table:
        raise ValueError("the layer table is empty")
    macs = np.array([layer.macs for layer in table], dtype=np.float64)
    out = np.array([layer.out_floats for layer in table], dtype=np.float64)
    params = np.array([layer.params for layer in table], dtype=np.float64)
    if (macs < 0).any() or (out < 0).any() or (params < 0).any():
        raise ValueError("layer table entries must be non-negative")
    client_macs = np.cumsum(macs)
    return {
        "client_macs": client_macs,
        "server_macs": client_macs[-1] - client_macs,
        "out_floats": out,
        "client_params": np.cumsum(params),
        "client_activations": np.cumsum(out),
    }


def split_costs(
    table: Sequence[Layer],
    split: int | np.ndarray,
    batch: int,
    local_steps: int,
    clients: ClientSpecs,
    server_macs_per_s: float,
    concurrent: int | None = None,
) -> SplitCosts:
    """One round's time, energy, memory and traffic per client at the given split(s) (module docstring).

    Args:
        table: the layer table (per-sample forward MACs, activation floats, parameters per layer).
        split: the number of client-side layers, in ``[1, len(table)]`` (``model.SplitNet``'s split; the
            table's length: the whole network on the client); an int or an array of splits (results then
            get the split axes first).
        batch: samples per batch ``B``.
        local_steps: batches per client per round ``K``.
        clients: the round's clients' effective capability, each field ``(n,)``.
        server_macs_per_s: the server's effective MAC/s, shared equally by the round's clients.
        concurrent: clients sharing the server (default: ``n``, the clients given).

    Returns:
        ``SplitCosts``, each of shape ``np.shape(split) + (n,)``.

    Raises:
        InputError: a split outside ``[1, len(table)]`` (field ``split``).
        ValueError: a non-positive batch, step count or rate.
    """
    cols = table_arrays(table)
    split_arr = np.asarray(split)
    if not np.issubdtype(split_arr.dtype, np.integer) or (split_arr < 1).any() or (split_arr > len(table)).any():
        raise InputError("split", f"must be integers in [1, {len(table)}] (client-side layers), got {split}")
    split_arr = split_arr - 1  # the last client-side layer
    if batch < 1 or local_steps < 1:
        raise ValueError(f"batch and local_steps must be at least 1, got {batch} and {local_steps}")
    spec = ClientSpecs(*(np.atleast_1d(np.asarray(v, dtype=np.float64)) for v in clients))
    n = max(len(v) for v in spec)
    if min(spec.macs_per_s.min(), spec.uplink_mbps.min(), spec.downlink_mbps.min(), server_macs_per_s) <= 0:
        raise ValueError("compute and link rates must be positive")
    k = n if concurrent is None else concurrent
    return cost_terms(np, cols, split_arr[..., None], batch, local_steps, spec, server_macs_per_s, k)


def cost_terms(
    xp: Any,
    cols: dict[str, Any],
    last_layer: Any,
    batch: Any,
    local_steps: Any,
    spec: ClientSpecs,
    server_macs_per_s: Any,
    concurrent: Any,
) -> SplitCosts:
    """The cost formulas (module docstring) on checked inputs, for numpy (``split_costs``) or ``jax.numpy``.

    ``cols`` are :func:`table_arrays`' columns as ``xp`` arrays, ``last_layer`` the last client-side
    layer (``split - 1``, broadcastable against the clients' axis), ``spec`` the clients' capability
    (each ``(n,)``), ``concurrent`` the clients sharing ``server_macs_per_s``. Returns ``SplitCosts``
    broadcast to ``last_layer``'s shape and the clients' axis.
    """
    s = last_layer
    bits_sample = cols["out_floats"][s] * BITS_PER_VALUE * batch
    bits_params = cols["client_params"][s] * BITS_PER_VALUE
    up_bps, down_bps = spec.uplink_mbps * 1e6, spec.downlink_mbps * 1e6

    device = local_steps * BACKWARD_FACTOR * batch * cols["client_macs"][s] / spec.macs_per_s
    uplink = local_steps * (bits_sample / up_bps + spec.latency_s)
    downlink = local_steps * (bits_sample / down_bps + spec.latency_s)
    server = local_steps * BACKWARD_FACTOR * batch * cols["server_macs"][s] * concurrent / server_macs_per_s
    # the whole network on the client (plain FedAvg): no activations cross the link
    on_client = s == len(cols["client_macs"]) - 1
    uplink = xp.where(on_client, 0.0, uplink)
    downlink = xp.where(on_client, 0.0, downlink)
    sync_up = bits_params / up_bps + spec.latency_s
    sync = sync_up + bits_params / down_bps + spec.latency_s
    server = xp.broadcast_to(server, device.shape)
    round_time = device + uplink + server + downlink + sync
    energy = (spec.power_compute_w * device + spec.power_tx_w * (uplink + sync_up)
              + spec.power_idle_w * (round_time - device - uplink - sync_up))
    memory_mb = 4.0 * (2.0 * cols["client_params"][s] + batch * cols["client_activations"][s]) / 2**20
    memory_mb = xp.broadcast_to(memory_mb, device.shape)
    traffic = xp.broadcast_to(xp.where(on_client, 0.0, local_steps * bits_sample / 8) + bits_params / 8, device.shape)
    return SplitCosts(
        device_compute_s=device,
        uplink_s=uplink,
        downlink_s=downlink,
        server_compute_s=server,
        sync_s=sync,
        round_time_s=round_time,
        energy_j=energy,
        client_memory_mb=memory_mb,
        fits_memory=memory_mb <= spec.memory_mb,
        bytes_up=traffic,
        bytes_down=traffic + 0.0,
    )


def round_latency(costs: SplitCosts, selected: np.ndarray | None = None) -> np.ndarray:
    """The round's latency: the slowest (selected) client's round time, the straggler term.

    Args:
        costs: ``split_costs``'s result.
        selected: optional ``(n,)`` boolean mask of the round's clients (default: all).

    Returns:
        The maximum of ``round_time_s`` over the client axis (shape: the split axes).
    """
    times = costs.round_time_s
    if selected is not None:
        times = np.where(np.asarray(selected, dtype=bool), times, -np.inf)
    return times.max(axis=-1)
