"""Unit 3, filtration and displacement wash of the crystal cake."""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
from jax import Array

from decisions.health.pharma.params import FiltrationConstants


class FiltrationOutput(NamedTuple):
    """The washed wet cake, per litre of batch."""

    product: Array  # () g of P in the solids (crystals less wash loss, plus liquor residue)
    substrate: Array  # () g of A in the solids
    impurity: Array  # () g of I in the solids
    liquid: Array  # () L of wash liquid retained in the cake
    liquor_left: Array  # () fraction of mother-liquor solutes left after washing
    wash_loss: Array  # () g of P dissolved by the wash


def retention(d50: Array, c: FiltrationConstants) -> Array:
    """Liquid retained per kg of cake solids (L/kg) for crystals of mass median ``d50`` (um)."""
    return c.retention * (100.0 / d50) ** c.retention_exponent


def liquor_left(ratio: Array, c: FiltrationConstants) -> Array:
    """Fraction of the mother liquor's solutes left in the cake after a wash of ``ratio`` volumes."""
    return jnp.exp(-c.wash_efficiency * ratio)


def run(
    crystals: Array,
    liquor: Array,
    d50: Array,
    ratio: Array,
    wash_solubility: Array,
    c: FiltrationConstants,
) -> FiltrationOutput:
    """Filter and wash.

    Args:
        crystals: ``(P, A, I)`` in the crystals, g per L of batch.
        liquor: ``(P, A, I)`` dissolved in the mother liquor, g/L.
        d50: mass median crystal size, um.
        ratio: wash volume over retained liquor volume.
        wash_solubility: solubility of P in the wash solvent at the wash temperature, g/L.
    """
    solids = jnp.sum(crystals)
    liquid = retention(d50, c) * solids / 1000.0  # L per L of batch
    left = liquor_left(ratio, c)
    loss = ratio * liquid * wash_solubility * c.saturation_approach
    residue = left * liquor * liquid
    return FiltrationOutput(
        product=crystals[0] - loss + residue[0],
        substrate=crystals[1] + residue[1],
        impurity=crystals[2] + residue[2],
        liquid=liquid,
        liquor_left=left,
        wash_loss=loss,
    )
