"""Traced parameters of a gas storage problem: the ``inputs`` pytree of every sensitivity."""

from __future__ import annotations

from enum import Enum

import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.energy.gas_storage.scenario import (
    DeterministicPrices,
    ExponentialOU,
    Scenario,
    SeasonalOU,
    TerminalRule,
)


class PriceKind(Enum):
    """Which spot model generates prices (static: it selects code paths)."""

    DETERMINISTIC = "deterministic"
    SEASONAL_OU = "seasonal_ou"
    EXPONENTIAL_OU = "exponential_ou"


_FACILITY_LEAVES = (
    "min_inventory", "max_inventory", "start_inventory", "end_inventory", "injection_cost", "withdrawal_cost",
    "discount_rate",
)
"""The leaves of ``GasStorageParams`` copied as they are from the scenario's facility."""


@struct.dataclass
class GasStorageParams:
    """All inputs of the simulator; differentiable leaves unless marked static."""

    forward: Array  # (D,) forward price per delivery day
    min_inventory: Array  # ()
    max_inventory: Array  # ()
    start_inventory: Array  # ()
    end_inventory: Array  # () required end inventory (REQUIRED rule only)
    injection_knots: Array  # (Ki,) inventory breakpoints of the injection rate
    injection_rates: Array  # (Ki,) max injection per day at each breakpoint
    withdrawal_knots: Array  # (Kw,) inventory breakpoints of the withdrawal rate
    withdrawal_rates: Array  # (Kw,) max withdrawal per day at each breakpoint
    injection_cost: Array  # () cost per unit injected
    withdrawal_cost: Array  # () cost per unit withdrawn
    discount_rate: Array  # () annual, continuous
    mean_reversion: Array  # () per year (seasonal OU: a; exponential OU: speed)
    volatility: Array  # () per sqrt(year)
    level: Array  # () long-run mean of ln S (exponential OU only)
    initial_spot: Array  # () day-0 spot (exponential OU only)
    price_kind: PriceKind = struct.field(pytree_node=False, default=PriceKind.SEASONAL_OU)
    terminal: TerminalRule = struct.field(pytree_node=False, default=TerminalRule.REQUIRED)

    @property
    def horizon(self) -> int:
        """Number of daily decisions D (static)."""
        return self.forward.shape[-1]

    @property
    def capacity(self) -> Array:
        """Working gas capacity ``max_inventory - min_inventory``."""
        return self.max_inventory - self.min_inventory


def to_params(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> GasStorageParams:
    """Build the traced parameter pytree from a validated scenario.

    Args:
        dtype: float dtype of the leaves (float64 needs ``jax_enable_x64``).

    Returns:
        The ``GasStorageParams`` for the simulator and the baselines.
    """
    fac = scenario.facility
    inj_x, inj_y = fac.rate_knots("injection")
    wd_x, wd_y = fac.rate_knots("withdrawal")
    prices = scenario.prices
    mean_reversion, volatility, level, initial = 1.0, 0.0, 0.0, float(scenario.forward_curve[0])
    if isinstance(prices, SeasonalOU):
        kind, mean_reversion, volatility = PriceKind.SEASONAL_OU, prices.mean_reversion, prices.volatility
    elif isinstance(prices, ExponentialOU):
        kind, mean_reversion, volatility = PriceKind.EXPONENTIAL_OU, prices.speed, prices.volatility
        level, initial = prices.level, prices.initial
    else:
        assert isinstance(prices, DeterministicPrices)
        kind = PriceKind.DETERMINISTIC

    def arr(x: object) -> Array:
        return jnp.asarray(np.asarray(x, dtype=float), dtype=dtype)

    leaves = {name: getattr(fac, name) for name in _FACILITY_LEAVES}
    leaves.update(
        forward=scenario.forward_curve, injection_knots=inj_x, injection_rates=inj_y, withdrawal_knots=wd_x,
        withdrawal_rates=wd_y, mean_reversion=mean_reversion, volatility=volatility, level=level,
        initial_spot=initial,
    )
    return GasStorageParams(
        **{name: arr(x) for name, x in leaves.items()}, price_kind=kind, terminal=fac.terminal
    )
