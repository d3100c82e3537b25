"""Radio channel: path loss, SNR / SINR and link capacities, in the log domain.

mobile-env (``core/channels.py``) computes ``snr = 10 ** ((tx_dBm - loss_dB) / 10) / noise_mW``
and a link's capacity ``bw * log2(1 + snr)`` if ``snr > threshold`` (else 0). Its SNRs span
about 1e-12 .. 1e50, beyond float32, so here everything is kept as ``log10(snr)`` and the
capacity uses ``log1p`` (``1 + 2e-8`` is ``1`` in float32) with an asymptotic branch for very
large SNRs.

Path-loss models (``PATH_LOSS_MODELS``):

- ``okumura_hata`` (0): mobile-env's ``OkumuraHata`` exactly, including its use of the
  distance in *metres* (the textbook formula takes km) and ``+1e-16`` against ``log(0)``;
- ``free_space`` (1): ``20 log10(d_m) + 20 log10(f_MHz) - 27.55`` dB, distance floored at 1 m;
- ``umi_nlos`` (2): 3GPP TR 38.901's urban-micro street-canyon NLOS loss,
  ``35.3 log10(d_m) + 22.4 + 21.3 log10(f_GHz) - 0.3 (h_UT - 1.5)`` dB, distance floored at 10 m
  (the model's lower validity bound), without shadowing.

Interference (``params.interference``): the SINR of link (user u, cell c) counts as
interference the received power of every *transmitting* cell that is *not* serving u. A cell
transmits when at least one user is connected to it (idle cells are silent) and cells that
serve u jointly transmit to it (CoMP joint transmission), so they do not interfere with u.
Connectability always uses the SNR, as in mobile-env.

Joint transmission (``params.joint_transmission``, ``joint_log10_sinr``): a user's serving cells
send it the same signal on the same resources, so their received powers add (non-coherently)
and the user has *one* link of SINR ``sum_serving S / (N + sum_other transmitting S)``; what it
costs is resources in every serving cell (``schedulers.joint_rates``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax.numpy as jnp
from jax import Array

if TYPE_CHECKING:
    from decisions.telecom.comp.network import NetworkParams

__all__ = [
    "EPSILON",
    "PATH_LOSS_MODELS",
    "capacity",
    "connectable",
    "distances",
    "free_space_db",
    "joint_log10_sinr",
    "log10_sinr",
    "log10_snr",
    "okumura_hata_db",
    "path_loss_db",
    "spectral_efficiency",
    "umi_nlos_db",
    "pow10",
]

PATH_LOSS_MODELS: dict[str, int] = {"okumura_hata": 0, "free_space": 1, "umi_nlos": 2}
"""Path-loss model names and their ids (``NetworkParams.path_loss_model``)."""
EPSILON = 1e-16
"""Added to distances before the logarithm (mobile-env's ``channels.EPSILON``)."""
_NEG = -1e4  # log10 SNR of a missing link (finite so that differences stay finite)
_LOG2_10 = 3.321928094887362
_LN10 = 2.302585092994046


def pow10(x: Array) -> Array:
    """``10 ** x`` as ``exp(x ln 10)`` (cheaper than a general power on CPU)."""
    return jnp.exp(x * _LN10)


def okumura_hata_db(distance: Array, freq_mhz: Array, bs_height: Array, ue_height: Array) -> Array:
    """Okumura-Hata path loss in dB, as mobile-env's ``OkumuraHata.power_loss``.

    Args:
        distance: distance (mobile-env feeds metres into the formula).
        freq_mhz: carrier frequency in MHz.
        bs_height: station antenna height in metres.
        ue_height: user antenna height in metres.

    Returns:
        The loss in dB (broadcast shape of the inputs).
    """
    lf = jnp.log10(freq_mhz)
    lh = jnp.log10(bs_height)
    ch = 0.8 + (1.1 * lf - 0.7) * ue_height - 1.56 * lf
    tmp_1 = 69.55 - ch + 26.16 * lf - 13.82 * lh
    tmp_2 = 44.9 - 6.55 * lh
    return tmp_1 + tmp_2 * jnp.log10(distance + EPSILON)


def free_space_db(distance: Array, freq_mhz: Array) -> Array:
    """Free-space path loss in dB for a distance in metres (floored at 1 m) and a frequency in MHz.

    Args:
        distance: distance in metres.
        freq_mhz: carrier frequency in MHz.

    Returns:
        ``20 log10(d) + 20 log10(f) - 27.55``.
    """
    return 20.0 * jnp.log10(jnp.maximum(distance, 1.0)) + 20.0 * jnp.log10(freq_mhz) - 27.55


def umi_nlos_db(distance: Array, freq_mhz: Array, ue_height: Array) -> Array:
    """3GPP TR 38.901 UMi street-canyon NLOS path loss in dB (distance in metres, floored at 10 m)."""
    d = jnp.maximum(distance, 10.0)
    return 35.3 * jnp.log10(d) + 22.4 + 21.3 * jnp.log10(freq_mhz / 1000.0) - 0.3 * (ue_height - 1.5)


def distances(params: NetworkParams, user_pos: Array) -> Array:
    """User-to-cell distances ``(users, cells)``, positions truncated to whole metres if asked.

    Args:
        params: the network.
        user_pos: ``(users, 2)`` user positions.

    Returns:
        ``(users, cells)`` Euclidean distances.
    """
    pos = jnp.where(params.quantise_positions, jnp.floor(user_pos), user_pos)
    cells = jnp.where(params.quantise_positions, jnp.floor(params.cell_pos), params.cell_pos)
    diff = pos[:, None, :] - cells[None, :, :]
    return jnp.sqrt(jnp.sum(diff * diff, axis=-1))


def path_loss_db(params: NetworkParams, user_pos: Array) -> Array:
    """Path loss ``(users, cells)`` in dB under ``params.path_loss_model``.

    Args:
        params: the network.
        user_pos: ``(users, 2)`` user positions.

    Returns:
        ``(users, cells)`` losses in dB.
    """
    d = distances(params, user_pos)
    oh = okumura_hata_db(
        d, params.cell_freq_mhz[None, :], params.cell_height_m[None, :], params.user_height_m[:, None]
    )
    fs = free_space_db(d, params.cell_freq_mhz[None, :])
    umi = umi_nlos_db(d, params.cell_freq_mhz[None, :], params.user_height_m[:, None])
    model = params.path_loss_model
    return jnp.where(model == PATH_LOSS_MODELS["free_space"], fs,
                     jnp.where(model == PATH_LOSS_MODELS["umi_nlos"], umi, oh))


def log10_snr(params: NetworkParams, user_pos: Array) -> Array:
    """``log10`` of the linear SNR ``(users, cells)``; missing cells or users get a very low value.

    Args:
        params: the network.
        user_pos: ``(users, 2)`` user positions.

    Returns:
        ``(users, cells)`` ``(tx_dBm - loss_dB) / 10 - log10(noise_mW)``.
    """
    loss = path_loss_db(params, user_pos)
    l_snr = (params.cell_tx_dbm[None, :] - loss) / 10.0 - jnp.log10(params.user_noise_mw)[:, None]
    valid = params.user_mask[:, None] & params.cell_mask[None, :]
    return jnp.where(valid, l_snr, _NEG)


def connectable(params: NetworkParams, l_snr: Array) -> Array:
    """Links whose SNR strictly exceeds the user's threshold (mobile-env's ``check_connectivity``).

    Args:
        params: the network.
        l_snr: ``(users, cells)`` ``log10`` SNRs.

    Returns:
        ``(users, cells)`` bool.
    """
    valid = params.user_mask[:, None] & params.cell_mask[None, :]
    return valid & (l_snr > jnp.log10(params.user_snr_threshold)[:, None])


def log10_sinr(params: NetworkParams, l_snr: Array, conn: Array) -> Array:
    """``log10`` SINR ``(users, cells)`` with interference from transmitting non-serving cells.

    See the module docstring for the assumption (idle cells silent, CoMP serving set does
    not interfere).

    Args:
        params: the network.
        l_snr: ``(users, cells)`` ``log10`` SNRs.
        conn: ``(users, cells)`` bool connections.

    Returns:
        ``(users, cells)`` ``log10(S / (N + I)) = l_snr - log10(1 + I / N)``.
    """
    transmitting = jnp.any(conn, axis=0) & params.cell_mask
    interferer = transmitting[None, :] & ~conn
    inr = jnp.sum(jnp.where(interferer, pow10(jnp.minimum(l_snr, 30.0)), 0.0), axis=1)
    return l_snr - jnp.log1p(inr)[:, None] / jnp.log(10.0)


def joint_log10_sinr(params: NetworkParams, l_snr: Array, conn: Array) -> Array:
    """``log10`` of each user's joint-transmission SINR ``(users,)`` (module docstring).

    Args:
        params: the network.
        l_snr: ``(users, cells)`` ``log10`` SNRs.
        conn: ``(users, cells)`` bool serving sets.

    Returns:
        ``(users,)`` ``log10(sum_serving S / (N + sum_interferers S))`` (very low for a user
        served by no cell).
    """
    transmitting = jnp.any(conn, axis=0) & params.cell_mask
    snr = pow10(jnp.minimum(l_snr, 30.0))
    signal = jnp.sum(jnp.where(conn, snr, 0.0), axis=1)
    inr = jnp.sum(jnp.where(transmitting[None, :] & ~conn, snr, 0.0), axis=1)
    served = jnp.any(conn, axis=1)
    return jnp.where(served, jnp.log10(jnp.where(served, signal, 1.0)) - jnp.log1p(inr) / jnp.log(10.0), _NEG)


def spectral_efficiency(l_sinr: Array) -> Array:
    """``log2(1 + sinr)`` from ``log10(sinr)``, exact in float32 for tiny and huge SINRs."""
    small = jnp.log1p(pow10(jnp.minimum(l_sinr, 7.0))) / jnp.log(2.0)
    return jnp.where(l_sinr > 7.0, l_sinr * _LOG2_10, small)


def capacity(params: NetworkParams, l_sinr: Array, ok: Array) -> Array:
    """Shannon capacity ``bw * log2(1 + sinr)`` of each link with all of its cell's resources.

    Args:
        params: the network.
        l_sinr: ``(users, cells)`` ``log10`` SNR or SINR.
        ok: ``(users, cells)`` bool, links that are connectable (others have capacity 0, as
            mobile-env's ``Channel.datarate``).

    Returns:
        ``(users, cells)`` capacities in bit/s.
    """
    return jnp.where(ok, params.cell_bandwidth_hz[None, :] * spectral_efficiency(l_sinr), 0.0)
