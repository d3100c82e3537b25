"""The pension ALM job spec: its validated model and ``prepare``, with no JAX.

``prepare(spec, base_dir)`` validates a job spec (TOML tables ``[job]``, ``[scenario]``,
``[snapo]``, ``[evaluation]``) into a ``PensionJob``; a bad spec is refused naming the field
before any JAX module loads (``decisions.jobs.domain``). The SNAPO training settings live
here too (``snapo_policy`` re-exports them), so the job model needs no heavy module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import Field

from decisions.core.settings import Settings
from decisions.core.snapo_settings import SnapoSettingsBase, Temperature
from decisions.finance.pension.scenario import Scenario
from decisions.jobs.base import JobBase

if TYPE_CHECKING:
    from decisions.finance.pension.policy import AllocationNet


class PensionSnapoSettings(SnapoSettingsBase):
    """User settings of SNAPO training (validated; ``parse`` raises ``InputError``)."""

    paths_per_step: int = Field(128, gt=0, le=100_000, description="Paths per gradient step (antithetic).")
    steps: int = Field(600, gt=0, le=1_000_000, description="Gradient steps.")
    learning_rate: float = Field(1e-2, gt=0, le=1.0, allow_inf_nan=False, description="Peak Adam learning rate.")
    temperature_start: Temperature = Field(
        0.05, gt=0, allow_inf_nan=False, description="Initial hinge temperature (funding-ratio units)."
    )
    temperature_end: Temperature = Field(
        0.005, gt=0, allow_inf_nan=False, description="Final hinge temperature (funding-ratio units)."
    )
    width: int = Field(32, gt=0, le=1024, description="Hidden units per layer.")
    depth: int = Field(2, ge=1, le=6, description="Hidden layers.")
    seed: int = Field(0, ge=0, description="Seed of the initialisation and the training paths.")
    log_every: int = Field(100, gt=0, description="Steps per jitted chunk (progress granularity).")

    def network(self, n_assets: int) -> AllocationNet:
        """The neural policy these settings describe (imports the network, hence JAX)."""
        from decisions.finance.pension.policy import AllocationNet

        return AllocationNet(n_assets=n_assets, hidden=(self.width,) * self.depth)


class EvaluationSettings(Settings):
    """How the policies are scored."""

    paths: int = Field(1024, gt=0, le=100_000, description="Fresh common evaluation paths.")
    selection_paths: int = Field(512, gt=0, le=100_000, description="Training paths that pick the fixed mix.")


class PensionJob(JobBase):
    """A validated pension ALM job."""

    SECTIONS = ("scenario", "snapo", "evaluation")

    name: str = Field("pension", min_length=1, max_length=200)
    scenario: Scenario = Field(default_factory=Scenario)
    snapo: PensionSnapoSettings = Field(default_factory=PensionSnapoSettings)
    evaluation: EvaluationSettings = Field(default_factory=EvaluationSettings)


JOB_MODEL = PensionJob


prepare = PensionJob.from_spec
"""``prepare(spec, base_dir=None)``: validate a job spec into a ``PensionJob`` (``JobBase.from_spec``; the
pension spec refers to no files); raises ``InputError`` naming the first bad field."""
