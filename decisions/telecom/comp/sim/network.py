"""``NetworkParams``: a padded network and its simulation constants, and its constructors.

Up to ``MAX_CELLS`` cells and ``MAX_USERS`` users, unused slots masked, so networks of different sizes
share shapes and ``vmap`` together; every number is a (traced) leaf, scheduler and channel model
included. ``make_network`` builds one from ``NetworkSettings``; ``small`` / ``medium`` / ``large`` are
mobile-env's scenarios; ``as_joint`` turns a network into a joint-transmission one.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.telecom.comp.sim.constants import (
    LARGE_STATIONS,
    MAX_CELLS,
    MAX_USERS,
    MEDIUM_STATIONS,
    PATH_LOSS_MODELS,
    SMALL_STATIONS,
)
from decisions.telecom.comp.sim.settings import NetworkSettings

__all__ = [
    "NetworkParams",
    "large",
    "make_network",
    "medium",
    "n_cells",
    "n_users",
    "small",
]

UTILITY_BOUNDS = (-20.0, 20.0)
UTILITY_COEFFS = (10.0, 0.0, 10.0)
PF_ALPHA = 0.1
"""Smoothing factor of the proportional-fair scheduler's average user rate (ours; not in mobile-env)."""


@struct.dataclass
class NetworkParams:
    """A padded network and its simulation constants (all leaves are arrays, so it vmaps). Cell arrays are
    ``(MAX_CELLS,)``, user arrays ``(MAX_USERS,)``; the rest scalars unless shaped below."""

    cell_pos: Array  # (MAX_CELLS, 2) station positions, metres
    cell_tx_dbm: Array
    cell_bandwidth_hz: Array
    cell_freq_mhz: Array
    cell_height_m: Array
    cell_mask: Array  # bool: the cells that exist
    user_mask: Array  # bool: the users that exist
    user_velocity: Array  # metres per step
    user_height_m: Array
    user_noise_mw: Array
    user_snr_threshold: Array  # linear SNR a link needs (strictly) to be connectable
    user_home: Array  # (MAX_USERS, 2) centre of each user's start square, metres (used where user_spread >= 0)
    user_spread: Array  # half-side of each user's start square, metres; negative: uniform over the area
    size: Array  # (2,) width and height of the area users roam, metres
    scheduler: Array  # int, an id of constants.SCHEDULERS
    path_loss_model: Array  # int, an id of constants.PATH_LOSS_MODELS
    interference: Array  # bool: rates from the SINR instead of the SNR
    joint_transmission: Array  # bool: one joint link per user (channel.joint_log10_sinr, schedulers.joint_rates)
    quantise_positions: Array  # bool: positions truncated to whole metres for distances, as mobile-env does
    utility_bounds: Array  # (2,) lower and upper bound of the raw utility
    utility_coeffs: Array  # (3,) (w1, w2, w3): w1 * log(w2 + rate) / log(w3)
    pf_alpha: Array  # smoothing factor of the proportional-fair average rate
    episode_length: Array  # int, steps per episode


def n_cells(params: NetworkParams) -> Array:
    """Number of existing cells of ``params`` (an int array; batched params give a batch)."""
    return jnp.sum(params.cell_mask, axis=-1)


def n_users(params: NetworkParams) -> Array:
    """Number of existing users of ``params`` (an int array; batched params give a batch)."""
    return jnp.sum(params.user_mask, axis=-1)


def make_network(settings: NetworkSettings, key: Array | None = None) -> NetworkParams:
    """The padded ``NetworkParams`` of ``settings``.

    Without ``settings.positions`` the stations are drawn with ``key`` (``PRNGKey(0)`` when None)
    uniformly over the map with a 10 % margin, rounded to whole metres as mobile-env's are.
    """
    n_cells = settings.n_cells
    pos = _station_positions(settings, key)
    cell_pos = np.zeros((MAX_CELLS, 2), np.float32)
    cell_pos[:n_cells] = pos

    def cells(value: float) -> Array:
        return jnp.full((MAX_CELLS,), value, jnp.float32)

    def users(value: float) -> Array:
        return jnp.full((MAX_USERS,), value, jnp.float32)

    return NetworkParams(
        cell_pos=jnp.asarray(cell_pos),
        cell_tx_dbm=cells(settings.tx_dbm),
        cell_bandwidth_hz=cells(settings.bandwidth_hz),
        cell_freq_mhz=cells(settings.frequency_mhz),
        cell_height_m=cells(settings.cell_height_m),
        cell_mask=jnp.asarray(np.arange(MAX_CELLS) < n_cells),
        user_mask=jnp.asarray(np.arange(MAX_USERS) < settings.n_users),
        user_velocity=users(settings.velocity),
        user_height_m=users(settings.user_height_m),
        user_noise_mw=users(settings.noise_mw),
        user_snr_threshold=users(settings.snr_threshold),
        user_home=jnp.zeros((MAX_USERS, 2), jnp.float32),
        user_spread=users(-1.0),
        size=jnp.asarray(settings.roam_area, jnp.float32),
        scheduler=jnp.asarray(settings.scheduler_id, jnp.int32),
        path_loss_model=jnp.asarray(settings.path_loss_id, jnp.int32),
        interference=jnp.asarray(bool(settings.interference)),
        joint_transmission=jnp.asarray(bool(settings.joint_transmission)),
        quantise_positions=jnp.asarray(bool(settings.quantise_positions)),
        utility_bounds=jnp.asarray(UTILITY_BOUNDS, jnp.float32),
        utility_coeffs=jnp.asarray(UTILITY_COEFFS, jnp.float32),
        pf_alpha=jnp.asarray(PF_ALPHA, jnp.float32),
        episode_length=jnp.asarray(int(settings.episode_length), jnp.int32),
    )


def _station_positions(settings: NetworkSettings, key: Array | None) -> np.ndarray:
    """``(n_cells, 2)`` station positions: ``settings.positions``, else drawn with ``key`` (see ``make_network``)."""
    if settings.positions is not None:
        return np.asarray(settings.positions, dtype=np.float64)
    width, height = settings.size
    key = jax.random.PRNGKey(0) if key is None else key
    lo = np.array([0.1 * width, 0.1 * height])
    u = np.asarray(jax.random.uniform(key, (settings.n_cells, 2)))
    return np.round(lo + u * (np.array([width, height]) - 2 * lo))


def small(**overrides: object) -> NetworkParams:
    """mobile-env's small scenario: 3 cells, 5 users, 200 x 200 m (keyword ``overrides`` go to ``make_network``)."""
    return _scenario(SMALL_STATIONS, 5, (200.0, 200.0), (200.0, 200.0), overrides)


def medium(**overrides: object) -> NetworkParams:
    """mobile-env's medium scenario: 7 cells, 15 users, 200 x 300 m map (keyword ``overrides`` go to ``make_network``).

    As in mobile-env, users roam only ``[0, 200] x [0, 200]`` (its movement model keeps the
    default area); pass ``roam_size=(200.0, 300.0)`` for the whole map.
    """
    return _scenario(MEDIUM_STATIONS, 15, (200.0, 300.0), (200.0, 200.0), overrides)


def large(**overrides: object) -> NetworkParams:
    """mobile-env's large scenario: 13 cells, 30 users, 300 x 300 m map (keyword ``overrides`` go to ``make_network``).

    As in mobile-env, users roam only ``[0, 200] x [0, 200]`` (its movement model keeps the
    default area); pass ``roam_size=(300.0, 300.0)`` for the whole map.
    """
    return _scenario(LARGE_STATIONS, 30, (300.0, 300.0), (200.0, 200.0), overrides)


def _scenario(
    stations: tuple[tuple[int, int], ...], n_users: int, size: tuple[float, float], roam: tuple[float, float],
    overrides: dict[str, object],
) -> NetworkParams:
    """A mobile-env scenario's network with ``NetworkSettings`` fields ``overrides``."""
    fields = {"n_cells": len(stations), "n_users": n_users, "positions": stations, "size": size, "roam_size": roam}
    return make_network(NetworkSettings.model_validate({**fields, **overrides}))


SCENARIOS = {"small": small, "medium": medium, "large": large}
"""The mobile-env scenarios by name."""


MBPS_UTILITY_BOUNDS = (60.0, 80.0)
"""Utility bounds that make mobile-env's ``10 log10(rate)`` (rate in bit/s) span 1 to 100 Mbit/s:
QoE ``10 log10(rate / 1 Mbit/s) / 20`` clipped to [0, 1], no use below 1 Mbit/s, saturated at 100."""


def scaled(params: NetworkParams, scale: float) -> NetworkParams:
    """``params`` with its stations, roaming area, users' start squares and speed multiplied by ``scale``.

    Raises:
        ValueError: ``scale`` not positive.
    """
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale: must be positive, got {scale!r}")
    return params.replace(
        cell_pos=params.cell_pos * scale, size=params.size * scale, user_velocity=params.user_velocity * scale,
        user_home=params.user_home * scale, user_spread=params.user_spread * scale,
    )


def as_joint(params: NetworkParams, scale: float = 1.0) -> NetworkParams:
    """``params`` as a joint-transmission network: interference, ``joint_transmission``, 3GPP UMi NLOS
    path loss and QoE on Mbit/s (``MBPS_UTILITY_BOUNDS``), ``scaled`` by ``scale``.

    Raises:
        ValueError: ``scale`` not positive.
    """
    return scaled(params, scale).replace(
        interference=jnp.asarray(True), joint_transmission=jnp.asarray(True),
        path_loss_model=jnp.asarray(PATH_LOSS_MODELS["umi_nlos"], jnp.int32),
        utility_bounds=jnp.asarray(MBPS_UTILITY_BOUNDS, jnp.float32),
    )  # fmt: skip
