"""The pharma job spec: its validated model and ``prepare``, with no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from decisions.core.numbers import Float32
from decisions.core.settings import Settings, ints_within, refuse_unused
from decisions.core.snapo_settings import Penalty, SnapoSettingsBase, Temperature
from decisions.core.strict_input import Seed
from decisions.errors import InputError
from decisions.health.pharma.scenario import Cpp, Scenario
from decisions.kit.base import JobBase, Section

_SETTINGS_SECTIONS = ("optimise", "baseline", "design_space")

_TEMPERATURES = {Cpp.REACTOR_TEMPERATURE, Cpp.COOLING_END_TEMPERATURE, Cpp.DRYER_TEMPERATURE}

CPP_MAX = 1e3
"""Largest magnitude of an axis end: every CPP (temperatures in C, times in h, the wash ratio) fits."""
CppValue = Annotated[float, Float32(CPP_MAX)]


class Method(StrEnum):
    """What a job computes."""

    ALL = "all"
    """SNAPO against the best constant operation, then sensitivities and design space at SNAPO's point."""
    OPTIMISE = "optimise"
    """SNAPO against the best constant operation only."""
    SENSITIVITIES = "sensitivities"
    """The CQA x CPP Jacobian at the scenario's operating point."""
    DESIGN_SPACE = "design_space"
    """The design-space map at the scenario's operating point."""

    @property
    def optimises(self) -> bool:
        """Whether SNAPO (and the baseline) run."""
        return self in (Method.ALL, Method.OPTIMISE)

    @property
    def sensitivities(self) -> bool:
        """Whether the Jacobian is computed."""
        return self in (Method.ALL, Method.SENSITIVITIES)

    @property
    def design_space(self) -> bool:
        """Whether the design-space map is computed."""
        return self in (Method.ALL, Method.DESIGN_SPACE)


class OptimiseSettings(SnapoSettingsBase):
    """User settings of the SNAPO profile optimisation (``parse`` raises ``InputError``)."""

    section = "optimise"

    steps: int = Field(800, gt=0, le=100_000, description="Gradient steps.")
    samples_per_step: int = Field(64, gt=0, le=10_000, description="Draws of the constants per step.")
    learning_rate: float = Field(0.1, gt=0, le=1.0, allow_inf_nan=False, description="Peak Adam rate.")
    temperature_start: Temperature = Field(0.1, description="Initial spec temperature.")
    temperature_end: Temperature = Field(0.01, description="Final spec temperature.")
    penalty: Penalty = Field(5.0, ge=0, allow_inf_nan=False, description="Weight of the chance constraint.")
    training_compliance: float = Field(
        0.96, gt=0, lt=1, description="Smooth compliance aimed at during training (a back-off)."
    )
    compliance_target: float = Field(0.95, gt=0, le=1, description="Compliance required on fresh draws.")
    eval_samples: int = Field(2000, gt=0, le=1_000_000, description="Fresh draws of the hard re-evaluation.")
    seed: Seed = Field(0, description="Seed of training and evaluation draws.")
    log_every: int = Field(200, gt=0, description="Steps per jitted chunk (progress granularity).")


class BaselineSettings(Settings):
    """The grid search for the best constant-temperature operation (``compare_with_baseline``)."""

    samples: int = Field(256, gt=0, le=100_000, description="Draws per grid candidate.")
    points: Annotated[tuple[int, int, int], ints_within(2, 101, "grid size")] = Field(
        (11, 11, 6), description="Grid points of the reactor, cooling end and dryer temperatures."
    )
    refinements: int = Field(2, ge=0, le=10, description="Zoomed grid passes after the first.")


class DesignSpaceSettings(Settings):
    """Axes and sampling of a design-space map (``parse`` raises ``InputError`` naming the field)."""

    section = "design_space"

    cpp_x: Cpp = Field(Cpp.REACTOR_TEMPERATURE, description="CPP on the x axis.")
    x_low: CppValue = Field(60.0, allow_inf_nan=False, description="Lowest x value.")
    x_high: CppValue = Field(90.0, allow_inf_nan=False, description="Highest x value.")
    cpp_y: Cpp = Field(Cpp.COOLING_END_TEMPERATURE, description="CPP on the y axis.")
    y_low: CppValue = Field(0.0, allow_inf_nan=False, description="Lowest y value.")
    y_high: CppValue = Field(30.0, allow_inf_nan=False, description="Highest y value.")
    points: int = Field(25, ge=1, le=1000, description="Grid points per axis.")
    samples: int = Field(256, ge=1, le=100_000, description="Draws of the uncertain constants.")
    seed: Seed = Field(0, description="Seed of the draws.")

    @model_validator(mode="after")
    def _check(self) -> DesignSpaceSettings:
        if self.cpp_x == self.cpp_y:
            raise ValueError(f"cpp_y: must differ from cpp_x ({self.cpp_x.value})")
        for axis, cpp, low, high in (
            ("x", self.cpp_x, self.x_low, self.x_high),
            ("y", self.cpp_y, self.y_low, self.y_high),
        ):
            if low > high:
                raise ValueError(f"{axis}_low: {low} exceeds {axis}_high ({high})")
            if cpp in _TEMPERATURES and not (-40.0 <= low and high <= 200.0):
                raise ValueError(f"{axis}_low/{axis}_high: temperatures must lie in [-40, 200] C")
            if cpp in (Cpp.REACTION_TIME, Cpp.COOLING_TIME, Cpp.DRYER_TIME) and low <= 0:
                raise ValueError(f"{axis}_low: a time must be positive, got {low}")
            if cpp is Cpp.WASH_RATIO and low < 0:
                raise ValueError(f"{axis}_low: the wash ratio cannot be negative, got {low}")
        return self


class PharmaJob(JobBase, name="pharma"):
    """A validated pharma job."""

    method: Method = Method.ALL
    scenario: Section[Scenario]
    optimise: Section[OptimiseSettings]
    baseline: Section[BaselineSettings]
    design_space: Section[DesignSpaceSettings]

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """``[job] seed`` becomes the default ``seed`` of ``[optimise]`` and ``[design_space]``."""
        data.setdefault("scenario", {})
        seed = data.get("seed", 0)
        for section in _SETTINGS_SECTIONS:
            table = data.setdefault(section, {})
            if section != "baseline" and isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
                table.setdefault("seed", seed)


JOB_MODEL = PharmaJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> PharmaJob:
    """Validate a job spec into a ``PharmaJob``.

    Args:
        spec: the TOML tables (``[job]``, ``[scenario]``, ``[optimise]``, ``[baseline]``,
            ``[design_space]``; ``[sweep]`` is handled by the runner before this).
        base_dir: the spec file's folder (unused: a pharma spec refers to no files).

    Raises:
        InputError: naming the first bad field, also a setting the method would ignore
            (``[baseline]``, ``[optimise]`` training and ``scenario.ranges`` without optimising,
            ``[design_space]`` without the map, a ``[job] seed`` every used seed overrides).
    """
    job = PharmaJob.from_spec(spec, base_dir)
    _check_axes(job)
    _refuse_unused(job, spec)
    return job


_TRAINING = ("steps", "samples_per_step", "learning_rate", "temperature_start", "temperature_end", "penalty",
             "training_compliance", "log_every")
"""``[optimise]`` settings of SNAPO training only (its ``seed``, ``eval_samples`` and ``compliance_target``
also serve the evaluation of the scenario's own operating point)."""


def _refuse_unused(job: PharmaJob, spec: Mapping[str, Any]) -> None:
    """Refuse a setting of a step the job's method does not run, or a ``[job] seed`` that every used seed overrides."""
    given = {section: set(spec.get(section) or ()) for section in _SETTINGS_SECTIONS}  # the user's keys (rewrite adds seeds)
    method = job.method
    if not method.optimises:
        problem = "is used only when job.method optimises ('all' or 'optimise')"
        refuse_unused(job.optimise, _TRAINING, prefix="optimise", problem=problem, given=given["optimise"])
        refuse_unused(job.baseline, prefix="baseline", problem=problem, given=given["baseline"])
        refuse_unused(job.scenario, ["ranges"], prefix="scenario", problem=problem)
    if not method.design_space:
        refuse_unused(
            job.design_space, prefix="design_space", given=given["design_space"],
            problem="is used only when job.method maps the design space ('all' or 'design_space')",
        )
    if "seed" in job.model_fields_set and "seed" in given["optimise"]:
        if not method.design_space:
            raise InputError("job.seed", "is not used: it is the default of optimise.seed, which is given")
        if "seed" in given["design_space"]:
            raise InputError("job.seed", "is not used: it is the default of optimise.seed and design_space.seed, both given")


def _check_axes(job: PharmaJob) -> None:
    """A design-space axis over the cooling end temperature must stay below the seeding temperature."""
    start = job.scenario.physics.crystalliser.start_temperature
    ds = job.design_space
    for axis, cpp, high in (("x", ds.cpp_x, ds.x_high), ("y", ds.cpp_y, ds.y_high)):
        if cpp is Cpp.COOLING_END_TEMPERATURE and high >= start:
            raise InputError(
                f"design_space.{axis}_high",
                f"{high} must be below the crystalliser start temperature ({start}) for {cpp.value}",
            )
