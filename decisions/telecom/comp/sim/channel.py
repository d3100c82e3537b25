"""Radio channel: path loss, SNR / SINR and link capacities, in the log domain (``log10(snr)``).

Path-loss models (``constants.PATH_LOSS_MODELS``): ``okumura_hata`` (mobile-env's, distance in metres),
``free_space`` and ``umi_nlos`` (3GPP TR 38.901 urban-micro NLOS, no shadowing). With interference, a
link's SINR counts every transmitting cell not serving the user; under joint transmission a user's
serving cells add their powers into one link (``joint_log10_sinr``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import jax.numpy as jnp
from jax import Array

from decisions.telecom.comp.sim.constants import PATH_LOSS_MODELS

if TYPE_CHECKING:
    from decisions.telecom.comp.sim.network import NetworkParams

__all__ = [
    "EPSILON",
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

EPSILON = 1e-16
"""Added to distances before the logarithm (mobile-env's ``channels.EPSILON``)."""
_NEG = -1e4  # log10 SNR of a missing link (finite so that differences stay finite)
_LOG2_10 = 3.321928094887362
_LN10 = 2.302585092994046


def pow10(x: Array) -> Array:
    """``10 ** x`` as ``exp(x ln 10)`` (cheaper than a general power on CPU)."""
    return jnp.exp(x * _LN10)


def okumura_hata_db(distance: Array, freq_mhz: Array, bs_height: Array, ue_height: Array) -> Array:
    """Okumura-Hata path loss in dB (broadcast shape of the inputs), as mobile-env's ``OkumuraHata``."""
    lf = jnp.log10(freq_mhz)
    lh = jnp.log10(bs_height)
    ch = 0.8 + (1.1 * lf - 0.7) * ue_height - 1.56 * lf
    tmp_1 = 69.55 - ch + 26.16 * lf - 13.82 * lh
    tmp_2 = 44.9 - 6.55 * lh
    return tmp_1 + tmp_2 * jnp.log10(distance + EPSILON)


def free_space_db(distance: Array, freq_mhz: Array) -> Array:
    """Free-space path loss ``20 log10(d) + 20 log10(f) - 27.55`` dB, ``d`` in metres (floored at 1 m), ``f`` in MHz."""
    return 20.0 * jnp.log10(jnp.maximum(distance, 1.0)) + 20.0 * jnp.log10(freq_mhz) - 27.55


def umi_nlos_db(distance: Array, freq_mhz: Array, ue_height: Array) -> Array:
    """3GPP TR 38.901 UMi street-canyon NLOS path loss in dB (distance in metres, floored at 10 m)."""
    d = jnp.maximum(distance, 10.0)
    return 35.3 * jnp.log10(d) + 22.4 + 21.3 * jnp.log10(freq_mhz / 1000.0) - 0.3 * (ue_height - 1.5)


def distances(params: NetworkParams, user_pos: Array) -> Array:
    """``(users, cells)`` user-to-cell distances, positions truncated to whole metres if asked."""
    pos = jnp.where(params.quantise_positions, jnp.floor(user_pos), user_pos)
    cells = jnp.where(params.quantise_positions, jnp.floor(params.cell_pos), params.cell_pos)
    diff = pos[:, None, :] - cells[None, :, :]
    return jnp.sqrt(jnp.sum(diff * diff, axis=-1))


def path_loss_db(params: NetworkParams, user_pos: Array) -> Array:
    """``(users, cells)`` path loss in dB under ``params.path_loss_model``."""
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
    """``(users, cells)`` ``log10`` SNR, ``(tx_dBm - loss_dB) / 10 - log10(noise_mW)``; very low for padding."""
    loss = path_loss_db(params, user_pos)
    l_snr = (params.cell_tx_dbm[None, :] - loss) / 10.0 - jnp.log10(params.user_noise_mw)[:, None]
    valid = params.user_mask[:, None] & params.cell_mask[None, :]
    return jnp.where(valid, l_snr, _NEG)


def connectable(params: NetworkParams, l_snr: Array) -> Array:
    """``(users, cells)`` bool: links whose SNR strictly exceeds the user's threshold (``check_connectivity``)."""
    valid = params.user_mask[:, None] & params.cell_mask[None, :]
    return valid & (l_snr > jnp.log10(params.user_snr_threshold)[:, None])


def log10_sinr(params: NetworkParams, l_snr: Array, conn: Array) -> Array:
    """``(users, cells)`` ``log10(S / (N + I))``, ``I`` from transmitting cells not serving the user."""
    transmitting = jnp.any(conn, axis=0) & params.cell_mask
    interferer = transmitting[None, :] & ~conn
    inr = jnp.sum(jnp.where(interferer, pow10(jnp.minimum(l_snr, 30.0)), 0.0), axis=1)
    return l_snr - jnp.log1p(inr)[:, None] / jnp.log(10.0)


def joint_log10_sinr(params: NetworkParams, l_snr: Array, conn: Array) -> Array:
    """``(users,)`` ``log10(sum_serving S / (N + sum_interferers S))`` (very low for an unserved user)."""
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
    """``(users, cells)`` Shannon capacity ``bw * log2(1 + sinr)`` in bit/s of each link with its whole cell."""
    return jnp.where(ok, params.cell_bandwidth_hz[None, :] * spectral_efficiency(l_sinr), 0.0)
