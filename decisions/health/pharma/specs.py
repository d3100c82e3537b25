"""Specification checks on CQAs: relative violations, the hard check and its smooth surrogate."""

from __future__ import annotations

import jax.numpy as jnp
from jax import Array

from decisions.core.smooth import smooth_step
from decisions.health.pharma.params import SpecLimits

LIMIT_NAMES: tuple[str, ...] = ("purity", "impurity", "degradant", "d50_min", "d50_max", "residual_solvent")
"""Order of the violation vector."""


def violations(cqas: Array, s: SpecLimits) -> Array:
    """Relative violations ``(..., 6)`` (``LIMIT_NAMES`` order) of CQAs ``(..., 6)``."""
    _, purity, impurity, degradant, d50, solvent = (cqas[..., i] for i in range(6))
    return jnp.stack(
        [
            (s.purity_min - purity) / (100.0 - s.purity_min),
            (impurity - s.impurity_max) / s.impurity_max,
            (degradant - s.degradant_max) / s.degradant_max,
            (s.d50_min - d50) / s.d50_min,
            (d50 - s.d50_max) / s.d50_max,
            (solvent - s.residual_solvent_max) / s.residual_solvent_max,
        ],
        axis=-1,
    )


def meets_specs(cqas: Array, s: SpecLimits) -> Array:
    """Hard check: True where every limit holds, shape ``cqas.shape[:-1]``."""
    return jnp.all(violations(cqas, s) <= 0.0, axis=-1)


def smooth_compliance(cqas: Array, s: SpecLimits, temperature: Array | float) -> Array:
    """Smooth indicator of meeting every limit, ``prod_j sigmoid(-v_j / temperature)``."""
    return jnp.prod(smooth_step(-violations(cqas, s), temperature), axis=-1)
