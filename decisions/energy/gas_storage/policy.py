"""A neural base-stock policy for gas storage."""

from __future__ import annotations

from dataclasses import dataclass

import flax.linen as nn
import jax
import jax.numpy as jnp
from jax import Array

from decisions.core.smooth import smooth_relu
from decisions.energy.gas_storage.facility import inventory_band
from decisions.energy.gas_storage.params import GasStorageParams
from decisions.energy.gas_storage.prices import stationary_std

PyTree = dict


class DayNet(nn.Module):
    """MLP from the features of each day ``(D, F)`` to the coefficients of its two target logits ``(D, 2, K)``."""

    hidden: tuple[int, ...]
    num_basis: int

    @nn.compact
    def __call__(self, features: Array) -> Array:
        """Apply the network.

        Args:
            features: ``(D, F)`` features of each day.

        Returns:
            ``(D, 2, K)``: coefficients of the lower and upper target logits on the ``K`` price basis functions.
        """
        h = features
        for width in self.hidden:
            h = nn.silu(nn.Dense(width)(h))
        out = nn.Dense(2 * self.num_basis, kernel_init=nn.initializers.zeros)(h)
        return out.reshape(*out.shape[:-1], 2, self.num_basis)


@dataclass(frozen=True)
class BaseStockPolicy:
    """Base-stock policy with neural targets (implements ``simulator.Policy``).

    Attributes:
        hidden: widths of the hidden layers of the day network.
        degree: degree of the polynomial in the scaled factor ``u = x / std`` inside each target logit.
        window: look-ahead offsets (days) of the local forward-curve features.
        rank_sharpness: the smooth rank compares prices on a scale of
            ``spread / rank_sharpness`` (larger: closer to a hard rank).
        overshoot: targets range over ``[lo - e cap, hi + e cap]`` with ``e = overshoot``.
    """

    hidden: tuple[int, ...] = (32, 32)
    degree: int = 3
    window: tuple[int, ...] = (1, 2, 3, 4, 5, 6, 7, 14, 30)
    rank_sharpness: float = 20.0
    overshoot: float = 0.0

    @property
    def num_features(self) -> int:
        """Number of input features per day."""
        return 3 + len(self.window) + 4

    @property
    def net(self) -> DayNet:
        """The flax module."""
        return DayNet(hidden=tuple(self.hidden), num_basis=self.degree + 1)

    def init(self, key: Array) -> PyTree:
        """Initial network parameters (targets start mid-range, independent of price and day)."""
        return self.net.init(key, jnp.zeros((1, self.num_features), jnp.float32))

    def curve_features(self, params: GasStorageParams) -> Array:
        """Features of each day (they do not depend on the path): ``(D, F)``.

        Args:
            params: the parameters the policy sees.

        Returns:
            Time, band and forward-curve features of every day.
        """
        fwd = params.forward  # (D,)
        horizon = params.horizon
        days = jnp.arange(horizon)
        spread = jnp.std(fwd) + 0.01 * jnp.mean(fwd)
        low, high = inventory_band(params)  # (D + 1,) each
        time = days / max(horizon - 1, 1)
        band_low = (low[1:] - params.min_inventory) / params.capacity
        band_high = (high[1:] - params.min_inventory) / params.capacity
        ahead = jnp.stack([fwd[jnp.minimum(days + k, horizon - 1)] - fwd for k in self.window], -1) / spread
        later = days[None, :] > days[:, None]  # (D, D): T > t
        count = jnp.maximum(jnp.sum(later, axis=1), 1)
        diff = (fwd[None, :] - fwd[:, None]) / spread  # (D, D): F_T - F_t
        sharp = self.rank_sharpness
        rank = jnp.sum(jnp.where(later, jax.nn.sigmoid(-sharp * diff), 0.0), axis=1) / count
        mean_rest = jnp.sum(jnp.where(later, diff, 0.0), axis=1) / count
        any_later = jnp.any(later, axis=1)
        smax = jnp.where(
            any_later, jax.nn.logsumexp(jnp.where(later, sharp * diff, -1e9), axis=1) / sharp, 0.0
        )
        smin = jnp.where(
            any_later, -jax.nn.logsumexp(jnp.where(later, -sharp * diff, -1e9), axis=1) / sharp, 0.0
        )
        columns = [time[:, None], band_low[:, None], band_high[:, None], ahead]
        columns += [rank[:, None], mean_rest[:, None], smax[:, None], smin[:, None]]
        return jnp.concatenate(columns, axis=-1).astype(fwd.dtype)

    def basis(self, x: Array, params: GasStorageParams) -> Array:
        """Price basis of every (path, day): powers ``1, u, ..., u^degree`` of ``u = x / std``.

        Args:
            x: ``(P, D)`` factor paths.
            params: the parameters the policy sees.

        Returns:
            ``(P, D, degree + 1)``; ``u = 0`` when prices are deterministic.
        """
        std = stationary_std(params)
        u = jnp.where(std > 0, x / jnp.where(std > 0, std, 1.0), 0.0)
        return jnp.stack([u**k for k in range(self.degree + 1)], axis=-1)

    def coefficients(self, policy_params: PyTree, params: GasStorageParams) -> Array:
        """Coefficients of the target logits on the price basis, per day: ``(D, 2, K)``."""
        return self.net.apply(policy_params, self.curve_features(params))

    def plan(self, policy_params: PyTree, x: Array, params: GasStorageParams) -> Array:
        """Inventory targets ``(b1, b2)`` of every (path, day).

        Args:
            x: ``(P, D)`` factor paths.
            params: the parameters the policy sees.

        Returns:
            ``(2, P, D)``: targets ``b1 <= b2`` in inventory units.
        """
        coefficients = self.coefficients(policy_params, params)  # (D, 2, K)
        logits = jnp.einsum("pdk,dck->cpd", self.basis(x, params), coefficients)  # (2, P, D)
        lo, cap = params.min_inventory, params.capacity
        over = self.overshoot
        b1 = lo + cap * ((1.0 + 2.0 * over) * jax.nn.sigmoid(logits[0]) - over)  # (P, D)
        b2 = b1 + (lo + cap * (1.0 + over) - b1) * jax.nn.sigmoid(logits[1])  # (P, D), >= b1
        return jnp.stack([b1, b2])

    def act(self, plan_t: Array, inventory: Array, tau: Array | float, smooth: bool) -> Array:
        """Desired move: inject up to ``b1``, withdraw down to ``b2``, else hold.

        Args:
            plan_t: ``(2, ...)`` targets ``b1, b2`` (of one day, or of every day).
            inventory: ``(...)`` current inventory.
            tau: ramp temperature in inventory units (used when ``smooth``).
            smooth: tempered softplus ramps instead of ``relu``.

        Returns:
            ``(...)`` desired net injection (before the feasibility clip).
        """
        b1, b2 = plan_t[0], plan_t[1]
        if smooth:
            return smooth_relu(b1 - inventory, tau) - smooth_relu(inventory - b2, tau)
        return jnp.maximum(b1 - inventory, 0.0) - jnp.maximum(inventory - b2, 0.0)
