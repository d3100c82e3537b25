"""Pharma's operating points answering one batch: its quality and yield predicted from its measured inputs.

A batch is its measured raw material (substrate concentration, seed loading and seed size) and the
process inputs the operating point does not set (reaction and cooling times, wash ratio, drying
time). An operating point (a CPP vector and profile shapes: SNAPO's profiles, or a constant
operation) keeps its temperatures and takes the batch's times and wash ratio; the chain then runs on
the run's fixed draws of the uncertain constants around the batch's measured ones. ``answer``
answers many batches in one compiled call (vmapped in chunks).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
from jax import Array

from decisions.health.pharma import chain
from decisions.health.pharma.chain import Profiles
from decisions.health.pharma.params import Constants, Grid, SpecLimits, draw_constants
from decisions.health.pharma.specs import meets_specs

DRAWS = 32
"""Draws of the uncertain constants a batch's quality and yield are estimated on."""
MATERIAL = (("reactor", "substrate"), ("crystalliser", "seed_loading"), ("crystalliser", "seed_size"))
"""The measured raw material, as (unit, constant) of ``params.Constants``."""
CHUNK = 128
"""Batches answered together (vmapped) inside ``answer``'s loop: bounds the reverse passes' memory."""
PROCESS = (1, 3, 4, 6)
"""The measured process inputs, as positions in the CPP vector (reaction and cooling times, wash
ratio, drying time)."""


def measured(nominal: Constants, material: Array) -> Constants:
    """The run's constants with the batch's measured raw material ``(3,)`` (``MATERIAL`` order)."""
    for (unit, name), value in zip(MATERIAL, material, strict=True):
        nominal = nominal.replace(**{unit: getattr(nominal, unit).replace(**{name: value})})
    return nominal


def quality(
    cpps: Array, profiles: Profiles, constants: Constants, cv: Constants, limits: SpecLimits, grid: Grid,
) -> dict[str, Array]:
    """Yield, purity and compliance of an operating point on the fixed draws around ``constants``:
    ``yield`` (mean, %), ``purity`` ``(DRAWS,)``, ``compliance`` (share meeting every spec) and
    ``cqas`` (mean of each CQA)."""
    draws = draw_constants(jax.random.PRNGKey(0), constants, cv, DRAWS)
    q = jax.vmap(lambda c: chain.cqas(cpps, profiles, c, grid))(draws)  # (DRAWS, 6)
    return {"yield": jnp.mean(q[:, 0]), "purity": q[:, 1], "compliance": jnp.mean(meets_specs(q, limits)),
            "cqas": jnp.mean(q, axis=0)}


def _one(
    grid: Grid, point: tuple[Array, Profiles], other: tuple[Array, Profiles], nominal: Constants, cv: Constants,
    limits: SpecLimits, material: Array, process: Array,
) -> dict[str, Array]:
    """Everything a decision needs for one batch (see ``answer``)."""
    where = jnp.asarray(PROCESS)

    def run(op: tuple[Array, Profiles], stuff: Array, inputs: Array) -> tuple[Array, dict[str, Array]]:
        found = quality(op[0].at[where].set(inputs), op[1], measured(nominal, stuff), cv, limits, grid)
        return found["yield"], found

    (value, found), (d_material, d_process) = jax.value_and_grad(
        partial(run, point), argnums=(0, 1), has_aux=True)(material, process)
    alt_value, _ = run(other, material, process)
    low, high = jnp.percentile(found["purity"], jnp.array([2.5, 97.5]))
    return {"value": value, "mean": jnp.mean(found["purity"]), "low": low, "high": high,
            "compliance": found["compliance"], "cqas": found["cqas"], "alt_value": alt_value,
            "d_material": d_material, "d_process": d_process}


@partial(jax.jit, static_argnames=("grid",))
def answer(
    grid: Grid, point: tuple[Array, Profiles], other: tuple[Array, Profiles], nominal: Constants, cv: Constants,
    limits: SpecLimits, material: Array, process: Array,
) -> dict[str, Array]:
    """Batches ``material`` ``(B, 3)`` and ``process`` ``(B, 4)`` run at the operating ``point`` and the
    alternative ``other``: the expected yield (%) with its derivatives by every measured input, the
    purity's mean and central 95% over the draws, the compliance, the mean CQAs and the alternative's
    expected yield."""
    one = partial(_one, grid, point, other, nominal, cv, limits)
    return jax.lax.map(lambda inputs: one(*inputs), (material, process), batch_size=CHUNK)
