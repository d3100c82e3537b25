"""The gas storage job spec: its validated model and ``prepare``, with no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from decisions.core.settings import Settings, refuse_unused
from decisions.core.snapo_settings import BareTrainingSeed, Penalty, SnapoSettingsBase, Temperature
from decisions.energy.gas_storage.scenario import Scenario, TerminalRule
from decisions.kit.base import JobBase, Section, spec_path

if TYPE_CHECKING:
    from decisions.energy.gas_storage.policy import BaseStockPolicy


class Method(StrEnum):
    """What a job computes."""

    COMPARE = "compare"
    """SNAPO and every baseline on common paths (the demo)."""
    SNAPO = "snapo"
    """SNAPO only (plus the LP intrinsic value as a reference)."""
    BASELINES = "baselines"
    """LP intrinsic, rolling intrinsic, LSMC and do-nothing only."""


class SnapoSettings(SnapoSettingsBase):
    """User settings of SNAPO training (validated; ``parse`` raises ``InputError``)."""

    paths_per_step: int = Field(
        64, gt=0, le=100_000, description="Price paths per gradient step (antithetic pairs)."
    )
    steps: int = Field(8000, gt=0, le=1_000_000, description="Gradient steps.")
    learning_rate: float = Field(
        2e-2, gt=0, le=1.0, allow_inf_nan=False, description="Peak Adam learning rate."
    )
    temperature_start: Temperature = Field(0.2, description="Initial temperature (x max rate).")
    temperature_end: Temperature = Field(0.01, description="Final temperature (x max rate).")
    width: int = Field(32, gt=0, le=4096, description="Hidden units per layer of the target network.")
    depth: int = Field(2, ge=1, le=8, description="Hidden layers of the target network.")
    seed: BareTrainingSeed = 0
    log_every: int = Field(500, gt=0, description="Steps per jitted chunk (progress granularity).")
    target_penalty: Penalty = Field(
        5e-3,
        ge=0,
        allow_inf_nan=False,
        description="Weight of the annealed penalty on target logits (x temperature).",
    )

    overshoot: float | None = Field(
        None,
        ge=0,
        le=0.5,
        allow_inf_nan=False,
        description="Target overshoot e (x capacity); None: 0.05 with stochastic prices, 0 with deterministic.",
    )

    def policy(self, *, stochastic: bool = True) -> BaseStockPolicy:
        """The policy architecture these settings describe (imports the network, hence JAX).

        Args:
            stochastic: whether prices are stochastic (chooses the default overshoot: on stochastic
                prices an overshoot lets a target say "fill up" or "empty" without saturating its
                sigmoid, +0.1% over LSMC on 4096 common paths; on a deterministic curve it creates
                flat regions that trap training, so it is off there).
        """
        from decisions.energy.gas_storage.policy import BaseStockPolicy

        overshoot = self.overshoot if self.overshoot is not None else (0.05 if stochastic else 0.0)
        return BaseStockPolicy(hidden=(self.width,) * self.depth, overshoot=overshoot)


DEFAULT_LSMC_PATHS = 16_384
"""Regression paths of LSMC wherever none are given (job, baselines, app)."""


class EvaluationSettings(Settings):
    """How methods are scored."""

    paths: int = Field(256, gt=0, le=100_000, description="Common out-of-sample evaluation paths.")
    lsmc_paths: int = Field(
        DEFAULT_LSMC_PATHS, gt=0, le=200_000, description="Training paths of the LSMC regressions (16k: fewer overfit)."
    )


class GasStorageJob(JobBase, name="gas-storage"):
    """A validated gas storage job."""

    method: Method = Method.COMPARE
    scenario: Section[Scenario]
    snapo: Section[SnapoSettings]
    evaluation: Section[EvaluationSettings]

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """``scenario.forward_curve_csv`` (relative to ``base_dir``) replaces ``scenario.forward_curve``;
        its first date, if any, sets ``start_date``."""
        scenario = data.setdefault("scenario", {})
        csv = scenario.pop("forward_curve_csv", None)
        if csv is not None:
            from decisions.energy.gas_storage.curve_io import load_forward_curve_csv  # pandas: only for a CSV

            curve, first = load_forward_curve_csv(spec_path(csv, base_dir), field="scenario.forward_curve_csv")
            scenario["forward_curve"] = curve
            if first is not None:
                scenario.setdefault("start_date", first)


JOB_MODEL = GasStorageJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> GasStorageJob:
    """Validate a job spec into a ``GasStorageJob`` (see ``GasStorageJob.rewrite`` for the curve CSV).

    Raises:
        InputError: naming the first bad field, also a setting the job would ignore: ``[snapo]``
            when the method runs no SNAPO, ``snapo.seed`` (the job's seed is ``job.seed``),
            ``evaluation.lsmc_paths`` when the baselines do not run, ``end_inventory`` when the
            terminal rule values the gas left at spot.
    """
    job = GasStorageJob.from_spec(spec, base_dir)
    if job.method is Method.BASELINES:
        refuse_unused(job.snapo, prefix="snapo", problem="is used only when job.method runs SNAPO ('compare' or 'snapo')")
    refuse_unused(job.snapo, ["seed"], prefix="snapo", problem="is not used; the job's seed is job.seed")
    if job.method is Method.SNAPO:
        refuse_unused(
            job.evaluation, ["lsmc_paths"], prefix="evaluation",
            problem="is used only when job.method runs the baselines, LSMC among them ('compare' or 'baselines')",
        )
    facility = job.scenario.facility
    if facility.terminal is not TerminalRule.REQUIRED:
        refuse_unused(
            facility, ["end_inventory"], prefix="scenario.facility",
            problem=f"is used only with scenario.facility.terminal = '{TerminalRule.REQUIRED.value}'",
        )
    return job
