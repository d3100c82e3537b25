"""User-facing SNAPO training settings shared by every domain (validated at the edge).

A domain subclasses ``SnapoSettingsBase``, re-declaring a field to change its default or
bounds and adding its own (paths, network size); it inherits the cross-field check, the
one-line-error ``parse`` (``core.settings.Settings``) and the translation into
``core.snapo.SnapoConfig``. Light: JAX loads only when ``config()`` is called, so a job
spec is validated without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from pydantic import Field, ValidationInfo, field_validator

from decisions.core.numbers import PENALTY_MAX, TEMPERATURE_MAX, Float32
from decisions.core.settings import Settings
from decisions.core.strict_input import Seed

if TYPE_CHECKING:  # ``core.snapo`` imports JAX: the settings validate without it
    from decisions.core.snapo import SnapoConfig

# An annealing temperature: positive and finite in float32, at most ``TEMPERATURE_MAX`` (1e3).
Temperature = Annotated[float, Field(gt=0, allow_inf_nan=False), Float32(TEMPERATURE_MAX)]
# A penalty weight: finite in float32, at most ``PENALTY_MAX`` (1e6).
Penalty = Annotated[float, Float32(PENALTY_MAX)]
# The seed of a bare ``train_policy`` call's initialisation and training paths (a job trains with ``job.seed``).
BareTrainingSeed = Annotated[Seed, Field(
    description="Seed of the initialisation and training paths of a bare train_policy (a job's is job.seed: not in a spec).",
)]


class SnapoSettingsBase(Settings):
    """Gradient steps, learning rate, temperature annealing and progress cadence of SNAPO training."""

    section = "snapo"

    steps: int = Field(1000, gt=0, le=1_000_000, description="Gradient steps.")
    learning_rate: float = Field(1e-2, gt=0, le=1.0, allow_inf_nan=False, description="Peak Adam learning rate.")
    temperature_start: Temperature = Field(0.1, description="Initial surrogate temperature.")
    temperature_end: Temperature = Field(0.005, description="Final surrogate temperature.")
    log_every: int = Field(100, gt=0, description="Steps per jitted chunk (progress granularity).")

    @field_validator("temperature_end")
    @classmethod
    def _not_above_start(cls, value: float, info: ValidationInfo) -> float:
        start = info.data.get("temperature_start")
        if start is not None and value > start:
            raise ValueError(f"must not exceed temperature_start ({start})")
        return value

    def config(self) -> SnapoConfig:
        """The ``core.snapo`` training configuration (20 warm-up steps at most, a tenth of short runs)."""
        from decisions.core.snapo import SnapoConfig

        return SnapoConfig(
            steps=self.steps,
            learning_rate=self.learning_rate,
            warmup_steps=min(20, self.steps // 10),
            temperature_start=self.temperature_start,
            temperature_end=self.temperature_end,
            log_every=min(self.log_every, self.steps),
        )
