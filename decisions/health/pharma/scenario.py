"""Validated user input for the pharmaceutical process chain: physics, CPPs, ranges, specifications."""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Annotated

from pydantic import Field, model_validator

from decisions.core.numbers import Float32
from decisions.core.settings import Settings

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False), Float32()]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False), Float32()]
Temperature = Annotated[float, Field(ge=-40.0, le=200.0, allow_inf_nan=False), Float32()]
"""A process temperature in degrees C; [-40, 200] is what a jacketed vessel can physically hold."""
Hours = Annotated[float, Field(gt=0, le=1000.0, allow_inf_nan=False), Float32()]
Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False), Float32()]

# Magnitude limits of the physical constants (generous; the simulator computes in float32).
# A constant is ``Annotated[Positive, Float32(LIMIT)]``: positive (or >= 0) and at most LIMIT.
RATE_MAX = 1e6
"""First-order rate constants, 1/h; growth rates, um/h; acceleration factors."""
ENERGY_MAX = 1e3
"""Activation energies and enthalpies, kJ/mol."""
CONCENTRATION_MAX = 1e4
"""Concentrations and loadings, g/L (mol/L for the substrate); molar masses up to 1e6 g/mol."""
NUCLEATION_MAX = 1e20
"""Secondary nucleation constant, nuclei per g of crystals per h (the default is 3e13)."""
ORDER_MAX = 20.0
"""Kinetic orders and exponents."""
SIZE_MAX = 1e5
"""Particle sizes, um (10 cm)."""
DENSITY_MAX = 100.0
"""Densities, g/cm3 or kg/L."""
FACTOR_MAX = 1e3
"""Dimensionless factors: shape factor, segregation, retention (L/kg), wash efficiency."""
CV_MAX = 10.0
"""Relative standard deviations of the uncertain constants."""


class Cpp(StrEnum):
    """The critical process parameters, in chain order (the columns of every sensitivity table)."""

    REACTOR_TEMPERATURE = "reactor_temperature"
    REACTION_TIME = "reaction_time"
    COOLING_END_TEMPERATURE = "cooling_end_temperature"
    COOLING_TIME = "cooling_time"
    WASH_RATIO = "wash_ratio"
    DRYER_TEMPERATURE = "dryer_temperature"
    DRYER_TIME = "dryer_time"


class ReactorPhysics(Settings):
    """Batch reactor ``A -> P -> I``; rate constants at ``reference_temperature``."""

    substrate: Annotated[Positive, Float32(CONCENTRATION_MAX)] = Field(0.40, description="Initial substrate A, mol/L.")
    molar_mass: Annotated[Positive, Float32(1e6)] = Field(300.0, description="Molar mass of A, P and I, g/mol (isomers).")
    k_main: Annotated[Positive, Float32(RATE_MAX)] = Field(1.0, description="A -> P rate constant at the reference temperature, 1/h.")
    activation_main: Annotated[Positive, Float32(ENERGY_MAX)] = Field(75.0, description="A -> P activation energy, kJ/mol.")
    k_side: Annotated[Positive, Float32(RATE_MAX)] = Field(0.012, description="P -> I rate constant at the reference temperature, 1/h.")
    activation_side: Annotated[Positive, Float32(ENERGY_MAX)] = Field(115.0, description="P -> I activation energy, kJ/mol.")
    reference_temperature: Temperature = Field(80.0, description="Reference temperature of k_main, k_side.")


class CrystalliserPhysics(Settings):
    """Seeded cooling crystallisation; growth and nucleation laws in relative supersaturation."""

    start_temperature: Temperature = Field(60.0, description="Temperature at seeding (cooling start), C.")
    solubility: Annotated[Positive, Float32(CONCENTRATION_MAX)] = Field(27.0, description="Solubility of P at the reference temperature, g/L.")
    dissolution_enthalpy: Annotated[Positive, Float32(ENERGY_MAX)] = Field(35.0, description="van 't Hoff enthalpy of dissolution, kJ/mol.")
    growth_rate: Annotated[Positive, Float32(RATE_MAX)] = Field(1500.0, description="Growth constant k_g at the reference, um/h.")
    growth_order: Annotated[Positive, Float32(ORDER_MAX)] = Field(1.5, description="Growth order g in G = k_g s^g.")
    growth_activation: Annotated[NonNegative, Float32(ENERGY_MAX)] = Field(40.0, description="Growth activation energy, kJ/mol.")
    nucleation_rate: Annotated[Positive, Float32(NUCLEATION_MAX)] = Field(
        3.0e13, description="Secondary nucleation constant k_b, nuclei per g of crystals per h."
    )
    nucleation_order: Annotated[Positive, Float32(ORDER_MAX)] = Field(4.5, description="Nucleation order b in B = k_b s^b M.")
    nucleus_size: Annotated[Positive, Float32(SIZE_MAX)] = Field(1.0, description="Size of new nuclei, um.")
    seed_loading: Annotated[Positive, Float32(CONCENTRATION_MAX)] = Field(2.0, description="Seed mass (pure P), g/L.")
    seed_size: Annotated[Positive, Float32(SIZE_MAX)] = Field(40.0, description="Seed size (monodisperse), um.")
    crystal_density: Annotated[Positive, Float32(DENSITY_MAX)] = Field(1.3, description="Crystal density, g/cm3.")
    shape_factor: Annotated[Positive, Float32(FACTOR_MAX)] = Field(math.pi / 6, description="Volume shape factor k_v (spheres: pi/6).")
    segregation_impurity: Annotated[NonNegative, Float32(FACTOR_MAX)] = Field(
        0.02, description="I incorporated per P crystallised, relative to the I/P ratio in solution."
    )
    segregation_substrate: Annotated[NonNegative, Float32(FACTOR_MAX)] = Field(0.01, description="The same for unreacted substrate A.")
    reference_temperature: Temperature = Field(25.0, description="Reference temperature of the constants, C.")


class FiltrationPhysics(Settings):
    """Filter cake retention and displacement washing."""

    retention: Annotated[Positive, Float32(FACTOR_MAX)] = Field(0.40, description="Liquid retained per kg of cake solids at 100 um, L/kg.")
    retention_exponent: Annotated[NonNegative, Float32(ORDER_MAX)] = Field(0.5, description="Retention ~ (100 um / d50)^exponent.")
    wash_efficiency: Annotated[Positive, Float32(FACTOR_MAX)] = Field(
        1.5, description="Displacement constant: liquor left = exp(-eff x ratio)."
    )
    wash_temperature: Temperature = Field(5.0, description="Wash solvent temperature, C.")
    saturation_approach: Fraction = Field(
        0.3, description="Fraction of saturation the wash reaches by dissolving product."
    )


class DryerPhysics(Settings):
    """Falling-rate drying and solid-state degradation ``P -> D``."""

    solvent_density: Annotated[Positive, Float32(DENSITY_MAX)] = Field(0.79, description="Density of the wet-cake solvent, kg/L.")
    drying_rate: Annotated[Positive, Float32(RATE_MAX)] = Field(0.6, description="First-order drying constant at the reference, 1/h.")
    drying_activation: Annotated[NonNegative, Float32(ENERGY_MAX)] = Field(45.0, description="Drying activation energy, kJ/mol.")
    degradation_rate: Annotated[Positive, Float32(RATE_MAX)] = Field(
        4.0e-5, description="P -> D rate of the dry solid at the reference, 1/h."
    )
    degradation_activation: Annotated[NonNegative, Float32(ENERGY_MAX)] = Field(110.0, description="Degradation activation energy, kJ/mol.")
    moisture_acceleration: Annotated[NonNegative, Float32(RATE_MAX)] = Field(
        10.0,
        description="Degradation rate x (1 + this x solvent loading in kg/kg): wet solid degrades faster.",
    )
    reference_temperature: Temperature = Field(50.0, description="Reference temperature of the constants, C.")


class Physics(Settings):
    """All model constants, unit by unit (nominal values; ``Uncertainty`` perturbs some)."""

    reactor: ReactorPhysics = Field(default_factory=ReactorPhysics)
    crystalliser: CrystalliserPhysics = Field(default_factory=CrystalliserPhysics)
    filtration: FiltrationPhysics = Field(default_factory=FiltrationPhysics)
    dryer: DryerPhysics = Field(default_factory=DryerPhysics)


class Uncertainty(Settings):
    """Relative standard deviations of lognormal (mean-one) multipliers on uncertain constants."""

    k_main: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.10, description="reactor.k_main.")
    k_side: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.15, description="reactor.k_side.")
    solubility: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.03, description="crystalliser.solubility.")
    growth_rate: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.10, description="crystalliser.growth_rate.")
    nucleation_rate: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.20, description="crystalliser.nucleation_rate.")
    retention: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.10, description="filtration.retention.")
    drying_rate: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.15, description="dryer.drying_rate.")
    degradation_rate: Annotated[NonNegative, Float32(CV_MAX)] = Field(0.20, description="dryer.degradation_rate.")


class OperatingPoint(Settings):
    """Values of the critical process parameters (CPPs); profiles are shifted to these means."""

    reactor_temperature: Temperature = Field(75.0, description="Mean reactor temperature, C.")
    reaction_time: Hours = Field(4.0, description="Reaction time, h.")
    cooling_end_temperature: Temperature = Field(10.0, description="Crystalliser end temperature, C.")
    cooling_time: Hours = Field(6.0, description="Cooling time, h.")
    wash_ratio: Annotated[float, Field(ge=0, le=20.0, allow_inf_nan=False), Float32()] = Field(
        2.0, description="Wash volume over retained liquor volume."
    )
    dryer_temperature: Temperature = Field(50.0, description="Mean dryer temperature, C.")
    dryer_time: Hours = Field(10.0, description="Drying time, h.")


class Range(Settings):
    """A closed interval ``[low, high]`` of a temperature."""

    low: Temperature
    high: Temperature

    @model_validator(mode="after")
    def _ordered(self) -> Range:
        if self.low >= self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        return self


class OperatingRanges(Settings):
    """Bounds of the temperatures the optimiser (SNAPO and the grid baseline) may choose."""

    reactor_temperature: Range = Field(default_factory=lambda: Range(low=50.0, high=100.0))
    cooling_end_temperature: Range = Field(default_factory=lambda: Range(low=0.0, high=40.0))
    dryer_temperature: Range = Field(default_factory=lambda: Range(low=30.0, high=80.0))


class Specs(Settings):
    """Specification limits on the critical quality attributes (CQAs), percentages w/w dry basis."""

    purity_min: Annotated[float, Field(gt=0, le=100, allow_inf_nan=False), Float32()] = Field(
        99.5, description="Assay of P, % (lower limit)."
    )
    impurity_max: Annotated[Positive, Float32(100.0)] = Field(0.15, description="Impurity I, % (ICH Q3A qualification threshold).")
    degradant_max: Annotated[Positive, Float32(100.0)] = Field(0.10, description="Degradant D, % (unspecified-impurity limit).")
    d50_min: Annotated[Positive, Float32(SIZE_MAX)] = Field(80.0, description="Mass median particle size, lower limit, um.")
    d50_max: Annotated[Positive, Float32(SIZE_MAX)] = Field(250.0, description="Mass median particle size, upper limit, um.")
    residual_solvent_max: Annotated[Positive, Float32(1e6)] = Field(5000.0, description="Residual solvent, ppm (ICH Q3C class 3).")

    @model_validator(mode="after")
    def _ordered(self) -> Specs:
        if self.d50_min > self.d50_max:
            raise ValueError(f"d50_min ({self.d50_min}) must not exceed d50_max ({self.d50_max})")
        return self


class Discretisation(Settings):
    """Static shapes: profile segments and fixed RK4 steps per segment (change the compiled program)."""

    reactor_segments: int = Field(6, ge=1, le=64, description="Piecewise-constant reactor segments.")
    cooling_segments: int = Field(6, ge=1, le=64, description="Piecewise-linear cooling segments.")
    dryer_segments: int = Field(4, ge=1, le=64, description="Piecewise-constant dryer segments.")
    reactor_steps: int = Field(8, ge=1, le=256, description="RK4 steps per reactor segment.")
    crystalliser_steps: int = Field(16, ge=1, le=256, description="RK4 steps per cooling segment.")
    dryer_steps: int = Field(8, ge=1, le=256, description="RK4 steps per dryer segment.")


class Scenario(Settings):
    """A complete pharma chain problem: physics, uncertainty, operating point, ranges, specs, grid."""

    section = "scenario"

    physics: Physics = Field(default_factory=Physics)
    uncertainty: Uncertainty = Field(default_factory=Uncertainty)
    cpps: OperatingPoint = Field(default_factory=OperatingPoint)
    ranges: OperatingRanges = Field(default_factory=OperatingRanges)
    specs: Specs = Field(default_factory=Specs)
    discretisation: Discretisation = Field(default_factory=Discretisation)

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        start = self.physics.crystalliser.start_temperature
        if self.cpps.cooling_end_temperature >= start:
            raise ValueError(
                f"cpps.cooling_end_temperature: {self.cpps.cooling_end_temperature} must be below the "
                f"crystalliser start temperature ({start})"
            )
        if self.ranges.cooling_end_temperature.high >= start:
            raise ValueError(
                f"ranges.cooling_end_temperature.high: {self.ranges.cooling_end_temperature.high} must be "
                f"below the crystalliser start temperature ({start})"
            )
        return self
