"""Traced parameters of the chain: model constants, CPP vector, spec limits, sampled uncertainty."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from jax import Array

from decisions.health.pharma.scenario import Cpp, Scenario

CPP_NAMES: tuple[str, ...] = tuple(c.value for c in Cpp)
"""CPP order of the CPP vector (and of sensitivity table columns)."""

GAS_CONSTANT = 8.314462618e-3
"""kJ/(mol K)."""

KELVIN = 273.15


@struct.dataclass
class ReactorConstants:
    """Reactor constants (see ``scenario.ReactorPhysics``); every field a scalar array."""

    substrate: Array  # () mol/L
    molar_mass: Array  # () g/mol
    k_main: Array  # () 1/h
    activation_main: Array  # () kJ/mol
    k_side: Array  # () 1/h
    activation_side: Array  # () kJ/mol
    reference_temperature: Array  # () C


@struct.dataclass
class CrystalliserConstants:
    """Crystalliser constants (see ``scenario.CrystalliserPhysics``)."""

    start_temperature: Array  # () C
    solubility: Array  # () g/L
    dissolution_enthalpy: Array  # () kJ/mol
    growth_rate: Array  # () um/h
    growth_order: Array  # ()
    growth_activation: Array  # () kJ/mol
    nucleation_rate: Array  # () 1/(g h)
    nucleation_order: Array  # ()
    nucleus_size: Array  # () um
    seed_loading: Array  # () g/L
    seed_size: Array  # () um
    crystal_density: Array  # () g/cm3
    shape_factor: Array  # ()
    segregation_impurity: Array  # ()
    segregation_substrate: Array  # ()
    reference_temperature: Array  # () C


@struct.dataclass
class FiltrationConstants:
    """Filter/wash constants (see ``scenario.FiltrationPhysics``)."""

    retention: Array  # () L/kg at 100 um
    retention_exponent: Array  # ()
    wash_efficiency: Array  # ()
    wash_temperature: Array  # () C
    saturation_approach: Array  # ()


@struct.dataclass
class DryerConstants:
    """Dryer constants (see ``scenario.DryerPhysics``)."""

    solvent_density: Array  # () kg/L
    drying_rate: Array  # () 1/h
    drying_activation: Array  # () kJ/mol
    degradation_rate: Array  # () 1/h
    degradation_activation: Array  # () kJ/mol
    moisture_acceleration: Array  # () 1/(kg/kg)
    reference_temperature: Array  # () C


@struct.dataclass
class Constants:
    """All model constants; a batch of draws has a leading axis on every leaf."""

    reactor: ReactorConstants
    crystalliser: CrystalliserConstants
    filtration: FiltrationConstants
    dryer: DryerConstants


@struct.dataclass
class SpecLimits:
    """Specification limits as arrays (see ``scenario.Specs``)."""

    purity_min: Array  # () %
    impurity_max: Array  # () %
    degradant_max: Array  # () %
    d50_min: Array  # () um
    d50_max: Array  # () um
    residual_solvent_max: Array  # () ppm


@dataclass(frozen=True)
class Grid:
    """Static discretisation: profile segments and RK4 steps per segment (hashable)."""

    reactor_segments: int = 6
    cooling_segments: int = 6
    dryer_segments: int = 4
    reactor_steps: int = 8
    crystalliser_steps: int = 16
    dryer_steps: int = 8


UNCERTAIN: dict[str, tuple[str, str]] = {
    "k_main": ("reactor", "k_main"),
    "k_side": ("reactor", "k_side"),
    "solubility": ("crystalliser", "solubility"),
    "growth_rate": ("crystalliser", "growth_rate"),
    "nucleation_rate": ("crystalliser", "nucleation_rate"),
    "retention": ("filtration", "retention"),
    "drying_rate": ("dryer", "drying_rate"),
    "degradation_rate": ("dryer", "degradation_rate"),
}
"""Uncertainty field -> (unit, constant) it multiplies."""


def arrhenius(k_ref: Array, activation: Array, temperature: Array, reference: Array) -> Array:
    """Rate constant ``k_ref exp(-E/R (1/T - 1/T_ref))``; temperatures in C, ``E`` in kJ/mol."""
    inv = 1.0 / (temperature + KELVIN) - 1.0 / (reference + KELVIN)
    return k_ref * jnp.exp(-activation / GAS_CONSTANT * inv)


def constants(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> Constants:
    """Nominal constants of a validated scenario as a traced pytree.

    Args:
        dtype: float dtype of the leaves (float64 needs x64 enabled).
    """
    phys = scenario.physics

    def build(cls: type, model: object) -> object:
        return cls(**{k: jnp.asarray(v, dtype) for k, v in model.model_dump().items()})  # type: ignore[attr-defined]

    return Constants(
        reactor=build(ReactorConstants, phys.reactor),
        crystalliser=build(CrystalliserConstants, phys.crystalliser),
        filtration=build(FiltrationConstants, phys.filtration),
        dryer=build(DryerConstants, phys.dryer),
    )


def cpp_vector(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> Array:
    """The scenario's operating point as a CPP vector ``(len(CPP_NAMES),)``."""
    return jnp.asarray([getattr(scenario.cpps, name) for name in CPP_NAMES], dtype)


def spec_limits(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> SpecLimits:
    """The scenario's specification limits as arrays."""
    return SpecLimits(**{k: jnp.asarray(v, dtype) for k, v in scenario.specs.model_dump().items()})


def grid(scenario: Scenario) -> Grid:
    """The scenario's static discretisation."""
    return Grid(**scenario.discretisation.model_dump())


def uncertainty_cv(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> Constants:
    """Relative standard deviations laid out like ``Constants`` (zero where not uncertain)."""
    cv = jax.tree_util.tree_map(jnp.zeros_like, constants(scenario, dtype))
    for name, (unit, field) in UNCERTAIN.items():
        sub = getattr(cv, unit)
        cv = cv.replace(
            **{unit: sub.replace(**{field: jnp.asarray(getattr(scenario.uncertainty, name), dtype)})}
        )
    return cv


def draw_constants(key: Array, nominal: Constants, cv: Constants, n: int) -> Constants:
    """``n`` draws of the constants: each uncertain one times a mean-one lognormal multiplier.

    Args:
        cv: relative standard deviations, same structure (``uncertainty_cv``).

    Returns:
        ``Constants`` with leaves of shape ``(n,)``.
    """
    leaves, treedef = jax.tree_util.tree_flatten(nominal)
    cvs = jnp.stack([jnp.asarray(c, leaves[0].dtype) for c in jax.tree_util.tree_leaves(cv)])  # (L,)
    z = jax.random.normal(key, (n, len(leaves)), leaves[0].dtype)  # one draw for every leaf
    s = jnp.sqrt(jnp.log1p(jnp.square(cvs)))  # lognormal sigma with coefficient of variation cv
    multipliers = jnp.exp(s * z - 0.5 * jnp.square(s))  # (n, L); exactly 1 where cv = 0
    out = [leaf * multipliers[:, i] for i, leaf in enumerate(leaves)]
    return jax.tree_util.tree_unflatten(treedef, out)


def stack_fractions(n_segments: int, steps: int) -> np.ndarray:
    """RK4 stage times (start, middle, end of each step) as fractions of the unit's duration.

    Returns:
        ``(n_segments * steps, 3)`` fractions in ``[0, 1]``.
    """
    n = n_segments * steps
    start = np.arange(n) / n
    return np.stack([start, start + 0.5 / n, start + 1.0 / n], axis=-1)
