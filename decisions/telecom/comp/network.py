"""Network description: padded cell and user arrays plus the simulation constants.

A network has up to ``MAX_CELLS`` cells and ``MAX_USERS`` users; unused slots are switched off
by ``cell_mask`` / ``user_mask`` so that networks of different sizes share array shapes and
``vmap`` together. Every number is a (traced) leaf of ``NetworkParams``: scheduler, path-loss
model and interference flag included, so a batch may mix them.

Defaults are ``mobile-env`` 2.1's (``MComCore.default_config``): cells of 9 MHz bandwidth at
2500 MHz, 30 dBm transmit power, 50 m height; users of 1.5 m/step velocity, 1.5 m height,
noise 1e-9 mW and SNR threshold 2e-8 (linear); a 200 x 200 m area; 100-step episodes; bounded
log utility with bounds [-20, 20] and coefficients (10, 0, 10).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.telecom.comp.catalog import (  # light constants, re-exported here
    LARGE_STATIONS,
    MAX_CELLS,
    MAX_USERS,
    MEDIUM_STATIONS,
    SMALL_STATIONS,
)
from decisions.telecom.comp.channel import PATH_LOSS_MODELS
from decisions.telecom.comp.schedulers import SCHEDULERS

__all__ = [
    "LARGE_STATIONS",
    "MAX_CELLS",
    "MAX_USERS",
    "MEDIUM_STATIONS",
    "SMALL_STATIONS",
    "NetworkParams",
    "large",
    "make_network",
    "medium",
    "n_cells",
    "n_users",
    "small",
]

# mobile-env MComCore.default_config() constants.
BS_BANDWIDTH_HZ = 9e6
BS_FREQUENCY_MHZ = 2500.0
BS_TX_DBM = 30.0
BS_HEIGHT_M = 50.0
UE_VELOCITY = 1.5
UE_SNR_THRESHOLD = 2e-8
UE_NOISE_MW = 1e-9
UE_HEIGHT_M = 1.5
EPISODE_LENGTH = 100
UTILITY_BOUNDS = (-20.0, 20.0)
UTILITY_COEFFS = (10.0, 0.0, 10.0)
PF_ALPHA = 0.1
"""Smoothing factor of the proportional-fair scheduler's average user rate (ours; not in mobile-env)."""


@struct.dataclass
class NetworkParams:
    """A padded network and its simulation constants (all leaves are arrays, so it vmaps).

    Attributes:
        cell_pos: ``(MAX_CELLS, 2)`` station positions in metres.
        cell_tx_dbm: ``(MAX_CELLS,)`` transmit power in dBm.
        cell_bandwidth_hz: ``(MAX_CELLS,)`` bandwidth in Hz.
        cell_freq_mhz: ``(MAX_CELLS,)`` carrier frequency in MHz.
        cell_height_m: ``(MAX_CELLS,)`` antenna height in metres.
        cell_mask: ``(MAX_CELLS,)`` bool, the cells that exist.
        user_mask: ``(MAX_USERS,)`` bool, the users that exist.
        user_velocity: ``(MAX_USERS,)`` metres moved per step.
        user_height_m: ``(MAX_USERS,)`` antenna height in metres.
        user_noise_mw: ``(MAX_USERS,)`` receiver noise power in mW.
        user_snr_threshold: ``(MAX_USERS,)`` linear SNR a link needs (strictly) to be connectable.
        size: ``(2,)`` width and height of the area users roam (initial positions and
            waypoints), in metres.
        scheduler: scalar int, an id of ``schedulers.SCHEDULERS``.
        path_loss_model: scalar int, an id of ``channel.PATH_LOSS_MODELS``.
        interference: scalar bool, rates from SINR (inter-cell interference) instead of SNR.
        joint_transmission: scalar bool, a user's serving cells transmit jointly: one link of the
            summed signal over the other transmitting cells' interference, the smallest of the
            serving cells' resource shares (``channel.joint_log10_sinr``,
            ``schedulers.joint_rates``); False: mobile-env's sum of per-link rates.
        quantise_positions: scalar bool, truncate positions to whole metres before computing
            distances, as mobile-env does (``shapely.Point(int(x), int(y))``).
        utility_bounds: ``(2,)`` lower and upper bound of the raw utility.
        utility_coeffs: ``(3,)`` coefficients ``(w1, w2, w3)``: ``w1 * log(w2 + rate) / log(w3)``.
        pf_alpha: scalar, smoothing factor of the proportional-fair average rate.
        episode_length: scalar int, steps per episode.
    """

    cell_pos: Array
    cell_tx_dbm: Array
    cell_bandwidth_hz: Array
    cell_freq_mhz: Array
    cell_height_m: Array
    cell_mask: Array
    user_mask: Array
    user_velocity: Array
    user_height_m: Array
    user_noise_mw: Array
    user_snr_threshold: Array
    size: Array
    scheduler: Array
    path_loss_model: Array
    interference: Array
    joint_transmission: Array
    quantise_positions: Array
    utility_bounds: Array
    utility_coeffs: Array
    pf_alpha: Array
    episode_length: Array


def n_cells(params: NetworkParams) -> Array:
    """Number of existing cells of ``params`` (an int array; batched params give a batch)."""
    return jnp.sum(params.cell_mask, axis=-1)


def n_users(params: NetworkParams) -> Array:
    """Number of existing users of ``params`` (an int array; batched params give a batch)."""
    return jnp.sum(params.user_mask, axis=-1)


def _lookup(table: dict[str, int], value: str | int, field: str) -> int:
    """Resolve a model name (or id) of ``table``, raising ``ValueError`` naming ``field`` if unknown."""
    if isinstance(value, str):
        if value not in table:
            raise ValueError(f"{field}: unknown {field} {value!r}; choose one of {sorted(table)}")
        return table[value]
    if int(value) not in table.values():
        raise ValueError(f"{field}: unknown {field} id {value!r}; choose one of {sorted(table.values())}")
    return int(value)


def make_network(
    n_cells: int,
    n_users: int,
    *,
    scheduler: str | int = "resource_fair",
    key: Array | None = None,
    positions: Sequence[Sequence[float]] | np.ndarray | None = None,
    size: tuple[float, float] = (200.0, 200.0),
    roam_size: tuple[float, float] | None = None,
    path_loss: str | int = "okumura_hata",
    interference: bool = False,
    joint_transmission: bool = False,
    quantise_positions: bool = True,
    episode_length: int = EPISODE_LENGTH,
    bandwidth_hz: float = BS_BANDWIDTH_HZ,
    frequency_mhz: float = BS_FREQUENCY_MHZ,
    tx_dbm: float = BS_TX_DBM,
    cell_height_m: float = BS_HEIGHT_M,
    velocity: float = UE_VELOCITY,
    snr_threshold: float = UE_SNR_THRESHOLD,
    noise_mw: float = UE_NOISE_MW,
    user_height_m: float = UE_HEIGHT_M,
) -> NetworkParams:
    """Build a padded network of ``n_cells`` cells and ``n_users`` users.

    Station positions are ``positions`` if given, else drawn with ``key`` uniformly over the
    area with a 10 % margin from its border and rounded to whole metres (mobile-env's
    stations sit on whole metres). All other constants default to mobile-env's.

    Args:
        n_cells: number of cells, ``1..MAX_CELLS``.
        n_users: number of users, ``1..MAX_USERS``.
        scheduler: a name (or id) of ``schedulers.SCHEDULERS``.
        key: PRNG key for random station positions (used when ``positions`` is None;
            ``jax.random.PRNGKey(0)`` if both are None).
        positions: ``(n_cells, 2)`` station positions in metres, inside the area.
        size: width and height of the map in metres (positive); stations lie inside it.
        roam_size: width and height of the area ``[0, w] x [0, h]`` users roam (default
            ``size``). mobile-env's medium and large scenarios enlarge the map but leave its
            movement model at the default 200 x 200 m, so their users roam only that corner.
        path_loss: a name (or id) of ``channel.PATH_LOSS_MODELS``.
        interference: compute rates from SINR with inter-cell interference.
        joint_transmission: serving cells transmit jointly (``NetworkParams.joint_transmission``).
        quantise_positions: truncate positions to whole metres for distances (mobile-env).
        episode_length: steps per episode (positive).
        bandwidth_hz, frequency_mhz, tx_dbm, cell_height_m: cell constants (all cells alike).
        velocity, snr_threshold, noise_mw, user_height_m: user constants (all users alike).

    Returns:
        The ``NetworkParams``.

    Raises:
        ValueError: naming the offending field (``n_cells``, ``n_users``, ``scheduler``,
            ``path_loss``, ``positions``, ``size``, ``episode_length``, ...).
    """
    if int(n_cells) != n_cells or not 1 <= n_cells <= MAX_CELLS:
        raise ValueError(f"n_cells: must be an integer in 1..{MAX_CELLS}, got {n_cells!r}")
    if int(n_users) != n_users or not 1 <= n_users <= MAX_USERS:
        raise ValueError(f"n_users: must be an integer in 1..{MAX_USERS}, got {n_users!r}")
    sched_id = _lookup(SCHEDULERS, scheduler, "scheduler")
    model_id = _lookup(PATH_LOSS_MODELS, path_loss, "path_loss")
    width, height = (float(s) for s in size)
    if not (np.isfinite(width) and np.isfinite(height) and width > 0 and height > 0):
        raise ValueError(f"size: width and height must be positive and finite, got {size!r}")
    roam_w, roam_h = (width, height) if roam_size is None else (float(s) for s in roam_size)
    if not (np.isfinite(roam_w) and np.isfinite(roam_h) and roam_w > 0 and roam_h > 0):
        raise ValueError(f"roam_size: width and height must be positive and finite, got {roam_size!r}")
    if int(episode_length) != episode_length or episode_length < 1:
        raise ValueError(f"episode_length: must be a positive integer, got {episode_length!r}")
    positives = {
        "bandwidth_hz": bandwidth_hz,
        "frequency_mhz": frequency_mhz,
        "cell_height_m": cell_height_m,
        "snr_threshold": snr_threshold,
        "noise_mw": noise_mw,
        "user_height_m": user_height_m,
    }
    for field, value in positives.items():
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{field}: must be positive and finite, got {value!r}")
    if not (np.isfinite(velocity) and velocity >= 0):
        raise ValueError(f"velocity: must be non-negative and finite, got {velocity!r}")
    if not np.isfinite(tx_dbm):
        raise ValueError(f"tx_dbm: must be finite, got {tx_dbm!r}")

    if positions is None:
        key = jax.random.PRNGKey(0) if key is None else key
        lo = np.array([0.1 * width, 0.1 * height])
        u = np.asarray(jax.random.uniform(key, (n_cells, 2)))
        pos = np.round(lo + u * (np.array([width, height]) - 2 * lo))
    else:
        pos = np.asarray(positions, dtype=np.float64)
        if pos.shape != (n_cells, 2):
            raise ValueError(f"positions: expected shape ({n_cells}, 2), got {pos.shape}")
        if not np.all(np.isfinite(pos)) or np.any(pos < 0) or np.any(pos > [width, height]):
            raise ValueError("positions: stations must lie inside the area [0, width] x [0, height]")

    cell_pos = np.zeros((MAX_CELLS, 2), np.float32)
    cell_pos[:n_cells] = pos
    cell_mask = np.arange(MAX_CELLS) < n_cells
    user_mask = np.arange(MAX_USERS) < n_users

    def cells(value: float) -> Array:
        return jnp.full((MAX_CELLS,), value, jnp.float32)

    def users(value: float) -> Array:
        return jnp.full((MAX_USERS,), value, jnp.float32)

    return NetworkParams(
        cell_pos=jnp.asarray(cell_pos),
        cell_tx_dbm=cells(tx_dbm),
        cell_bandwidth_hz=cells(bandwidth_hz),
        cell_freq_mhz=cells(frequency_mhz),
        cell_height_m=cells(cell_height_m),
        cell_mask=jnp.asarray(cell_mask),
        user_mask=jnp.asarray(user_mask),
        user_velocity=users(velocity),
        user_height_m=users(user_height_m),
        user_noise_mw=users(noise_mw),
        user_snr_threshold=users(snr_threshold),
        size=jnp.asarray([roam_w, roam_h], jnp.float32),
        scheduler=jnp.asarray(sched_id, jnp.int32),
        path_loss_model=jnp.asarray(model_id, jnp.int32),
        interference=jnp.asarray(bool(interference)),
        joint_transmission=jnp.asarray(bool(joint_transmission)),
        quantise_positions=jnp.asarray(bool(quantise_positions)),
        utility_bounds=jnp.asarray(UTILITY_BOUNDS, jnp.float32),
        utility_coeffs=jnp.asarray(UTILITY_COEFFS, jnp.float32),
        pf_alpha=jnp.asarray(PF_ALPHA, jnp.float32),
        episode_length=jnp.asarray(int(episode_length), jnp.int32),
    )


def small(**overrides: object) -> NetworkParams:
    """mobile-env's small scenario: 3 cells, 5 users, 200 x 200 m (keyword ``overrides`` go to ``make_network``)."""
    kwargs = {"positions": SMALL_STATIONS, "size": (200.0, 200.0), **overrides}
    return make_network(len(SMALL_STATIONS), 5, **kwargs)  # type: ignore[arg-type]


def medium(**overrides: object) -> NetworkParams:
    """mobile-env's medium scenario: 7 cells, 15 users, 200 x 300 m map (keyword ``overrides`` go to ``make_network``).

    As in mobile-env, users roam only ``[0, 200] x [0, 200]`` (its movement model keeps the
    default area); pass ``roam_size=(200.0, 300.0)`` for the whole map.
    """
    kwargs = {"positions": MEDIUM_STATIONS, "size": (200.0, 300.0), "roam_size": (200.0, 200.0), **overrides}
    return make_network(len(MEDIUM_STATIONS), 15, **kwargs)  # type: ignore[arg-type]


def large(**overrides: object) -> NetworkParams:
    """mobile-env's large scenario: 13 cells, 30 users, 300 x 300 m map (keyword ``overrides`` go to ``make_network``).

    As in mobile-env, users roam only ``[0, 200] x [0, 200]`` (its movement model keeps the
    default area); pass ``roam_size=(300.0, 300.0)`` for the whole map.
    """
    kwargs = {"positions": LARGE_STATIONS, "size": (300.0, 300.0), "roam_size": (200.0, 200.0), **overrides}
    return make_network(len(LARGE_STATIONS), 30, **kwargs)  # type: ignore[arg-type]


SCENARIOS = {"small": small, "medium": medium, "large": large}
"""The mobile-env scenarios by name."""


MBPS_UTILITY_BOUNDS = (60.0, 80.0)
"""Utility bounds that make mobile-env's ``10 log10(rate)`` (rate in bit/s) span 1 to 100 Mbit/s:
QoE ``10 log10(rate / 1 Mbit/s) / 20`` clipped to [0, 1], no use below 1 Mbit/s, saturated at 100."""


def scaled(params: NetworkParams, scale: float) -> NetworkParams:
    """``params`` with its stations, roaming area and user speed multiplied by ``scale``.

    Raises:
        ValueError: ``scale`` not positive.
    """
    if not np.isfinite(scale) or scale <= 0:
        raise ValueError(f"scale: must be positive, got {scale!r}")
    return params.replace(
        cell_pos=params.cell_pos * scale, size=params.size * scale, user_velocity=params.user_velocity * scale
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
