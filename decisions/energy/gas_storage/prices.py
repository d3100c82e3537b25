"""Spot price models, all driven by one Ornstein-Uhlenbeck factor ``x`` (exact daily discretisation)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import Array

from decisions.energy.gas_storage.params import GasStorageParams, PriceKind
from decisions.energy.gas_storage.scenario import DAYS_PER_YEAR

DT = 1.0 / DAYS_PER_YEAR


def draw_normals(key: Array, n_paths: int, horizon: int, dtype: jnp.dtype = jnp.float32) -> Array:
    """Standard normals driving ``n_paths`` price paths: shape ``(n_paths, horizon - 1)``."""
    return jax.random.normal(key, (n_paths, horizon - 1), dtype)


def discount_factors(params: GasStorageParams) -> Array:
    """Discount factor of each delivery day, ``exp(-r t / 365)``: shape ``(D,)``."""
    days = jnp.arange(params.horizon, dtype=params.forward.dtype)
    return jnp.exp(-params.discount_rate * days * DT)


def daily_step(params: GasStorageParams) -> tuple[Array, Array]:
    """The factor's exact one-day transition ``x_{t+1} = phi x_t + sd Z``: ``(phi, sd)``."""
    phi = jnp.exp(-params.mean_reversion * DT)
    return phi, params.volatility * jnp.sqrt((1.0 - phi**2) / (2.0 * params.mean_reversion))


def _variance_after(params: GasStorageParams, days: Array) -> Array:
    """Variance of ``x_{t+h}`` given ``x_t``, for ``h = days``."""
    a = params.mean_reversion
    return jnp.square(params.volatility) * (1.0 - jnp.exp(-2.0 * a * days * DT)) / (2.0 * a)


def stationary_std(params: GasStorageParams) -> Array:
    """Stationary standard deviation of the factor, ``s / sqrt(2a)`` (0 when deterministic)."""
    if params.price_kind is PriceKind.DETERMINISTIC:
        return jnp.zeros_like(params.volatility)
    return params.volatility / jnp.sqrt(2.0 * params.mean_reversion)


def initial_factor(params: GasStorageParams) -> Array:
    """Factor value on day 0."""
    if params.price_kind is PriceKind.EXPONENTIAL_OU:
        return jnp.log(params.initial_spot) - params.level
    return jnp.zeros_like(params.level)


def simulate_factor(normals: Array, params: GasStorageParams) -> Array:
    """Factor paths from standard normals.

    Args:
        normals: ``(n_paths, D - 1)`` standard normals (``draw_normals``).

    Returns:
        ``x`` of shape ``(n_paths, D)``; all zeros for deterministic prices.
    """
    n_paths = normals.shape[0]
    x0 = jnp.broadcast_to(initial_factor(params), (n_paths,)).astype(normals.dtype)
    if params.price_kind is PriceKind.DETERMINISTIC:
        return jnp.zeros((n_paths, params.horizon), normals.dtype)
    phi, sd = daily_step(params)

    def step(x: Array, z: Array) -> tuple[Array, Array]:
        nxt = phi * x + sd * z
        return nxt, nxt

    _, rest = jax.lax.scan(step, x0, normals.T)
    return jnp.concatenate([x0[None, :], rest], axis=0).T


def spot(t: Array, x: Array, params: GasStorageParams) -> Array:
    """Spot price on day ``t`` given the factor ``x`` (any broadcastable shapes)."""
    if params.price_kind is PriceKind.DETERMINISTIC:
        return params.forward[t] + 0.0 * x
    if params.price_kind is PriceKind.SEASONAL_OU:
        return params.forward[t] * jnp.exp(x - 0.5 * _variance_after(params, t))
    return jnp.exp(params.level + x)


def spot_paths(normals: Array, params: GasStorageParams) -> tuple[Array, Array]:
    """Factor and spot paths, each ``(n_paths, D)``."""
    x = simulate_factor(normals, params)
    days = jnp.arange(params.horizon)
    return x, spot(days[None, :], x, params)


def forward_view(t: Array, x: Array, params: GasStorageParams) -> Array:
    """Forward curve seen on day ``t`` with factor ``x``: ``E_t[S_T]`` for every delivery day ``T``.

    Returns:
        ``(D,)`` expected spot per delivery day.
    """
    days = jnp.arange(params.horizon)
    ahead = jnp.maximum(days - t, 0).astype(params.forward.dtype)
    if params.price_kind is PriceKind.DETERMINISTIC:
        return params.forward + 0.0 * x
    decay = jnp.exp(-params.mean_reversion * ahead * DT)
    conditional_var = _variance_after(params, ahead)
    if params.price_kind is PriceKind.SEASONAL_OU:
        unconditional_var = _variance_after(params, days.astype(params.forward.dtype))
        return params.forward * jnp.exp(decay * x - 0.5 * unconditional_var + 0.5 * conditional_var)
    return jnp.exp(params.level + decay * x + 0.5 * conditional_var)


def implied_forward(params: GasStorageParams) -> Array:
    """The forward curve seen on day 0 (the scenario's curve, or the model's for exponential OU)."""
    return forward_view(jnp.asarray(0), initial_factor(params), params)
