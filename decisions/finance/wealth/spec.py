"""The wealth job's spec: its validated model and ``prepare``, on light modules only (no JAX)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, ValidationInfo, field_validator

from decisions.core.settings import Settings, one_per, refuse_unused
from decisions.errors import InputError
from decisions.finance.wealth.planner_limits import (
    DISTILL_STEPS,
    PLANNER_BATCH_SIZE,
    PLANNER_TRAIN_STEPS,
    TEMPERATURE,
    planner_option_sets,
)
from decisions.finance.wealth.problem import WealthProblem
from decisions.finance.wealth.rule import FundingRule
from decisions.kit.base import JobBase, Section, popped_path, spec_path

RoundSteps = Annotated[int, Field(ge=1, le=10**7)]
"""Gradient steps of one refinement round."""


class PlannerSettings(Settings):
    """Which planner plans: the shipped one, a file, or one trained for this run."""

    path: str | None = Field(None, description="A planner file written by a training run (default: the shipped planner).")
    train_problems: int = Field(0, ge=0, le=1_000_000, description="> 0: train a new planner on this many sampled problems.")
    train_steps: int = Field(PLANNER_TRAIN_STEPS, ge=PLANNER_BATCH_SIZE, le=10**9, description="PPO environment steps when training.")
    distill_problems: int = Field(0, ge=0, le=100_000, description="> 0: refine the planner on the exact DP action values of this many training problems (distill.py).")
    distill_rounds: int = Field(1, ge=1, le=100, description="DAgger rounds of the refinement (the problems are split between them).")
    distill_steps: RoundSteps | list[RoundSteps] = Field(
        DISTILL_STEPS, description="Gradient steps of the refinement: one number for every round, or a list with one per round."
    )
    distill_learning_rate: float = Field(1e-4, gt=0, le=1.0, description="Peak learning rate of the refinement (cosine decay).")
    distill_temperature: float = Field(TEMPERATURE, gt=0, le=10.0, description="Softness of the refinement's targets (units of total utility).")


class RuleSettings(Settings):
    """The funding-ratio rule's parameters (defaults: tuned on training problems by ``decisions bench wealth``)."""

    margin: float = Field(FundingRule.margin, ge=0.0, le=100.0)
    r1: float = Field(FundingRule.r1, ge=0.0, le=100.0)
    r2: float = Field(FundingRule.r2, ge=0.0, le=100.0)


class EvaluationSettings(Settings):
    """How the policies are scored."""

    paths: int = Field(10_000, gt=1, le=1_000_000, description="Common Monte Carlo paths.")
    dp: bool = Field(True, description="Also solve the exact DP (skipped when its grid is too large).")
    dp_max_states: int = Field(4_000, gt=1, le=100_000, description="Largest DP grid to solve.")


class Clients(Settings):
    """Many clients' problems planned in one run (``[clients] csv``, read by ``clients.read_clients``)."""

    names: list[str] = Field(min_length=1, description="Each client's name, in file order.")
    problems: list[WealthProblem] = Field(min_length=1, description="Each client's problem (default market).")

    @field_validator("problems")
    @classmethod
    def _one_per_name(cls, value: list[WealthProblem], info: ValidationInfo) -> list[WealthProblem]:
        one_per(value, info.data.get("names"), "problem per client name")
        return value


class WealthJob(JobBase, name="wealth"):
    """A validated wealth-planning job: one client's ``problem`` or many ``clients``."""

    problem: WealthProblem | None = None
    clients: Clients | None = None
    planner: Section[PlannerSettings]
    rule: Section[RuleSettings]
    evaluation: Section[EvaluationSettings]

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """``clients.csv`` (relative to ``base_dir``) becomes the clients' names and problems."""
        clients, path = popped_path(data.get("clients"), "csv", "clients.csv", base_dir)
        if path is None:
            return
        from decisions.finance.wealth.clients import read_clients  # pandas: only for a CSV

        clients["names"], clients["problems"] = read_clients(path)
        data["clients"] = clients


JOB_MODEL = WealthJob

_ENABLED_BY = {
    "train_steps": "train_problems",
    **dict.fromkeys(("distill_rounds", "distill_steps", "distill_learning_rate", "distill_temperature"), "distill_problems"),
}
"""Planner settings that only a stage run by a positive count uses: setting -> that count."""


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> WealthJob:
    """Validate a job spec into a ``WealthJob``; a relative ``planner.path`` or ``clients.csv`` is read
    from ``base_dir``.

    Raises:
        InputError: naming the first bad field (also neither or both of ``problem`` and ``clients``, a
            clients' file naming its row and column, a planner file that does not exist or one
            given with ``train_problems``, a setting of a stage that does not run, a rule with
            ``r2 <= r1``, or a problem beyond the planner's reach).
    """
    job = WealthJob.from_spec(spec, base_dir)
    if (job.problem is None) == (job.clients is None):
        raise InputError("problem", "give one client's [problem] or a [clients] csv file, not both"
                         if job.problem is not None else "is required (or a [clients] csv file of many clients)")
    if job.planner.path is not None:
        path = spec_path(job.planner.path, base_dir)
        if not path.is_file():
            raise InputError("planner.path", f"no planner file at {path}")
        job = job.model_copy(update={"planner": job.planner.model_copy(update={"path": str(path)})})
    settings = job.planner
    if settings.distill_problems and settings.distill_rounds > settings.distill_problems:
        raise InputError(
            "planner.distill_rounds", f"at most planner.distill_problems ({settings.distill_problems}), got {settings.distill_rounds}"
        )
    if isinstance(settings.distill_steps, list) and len(settings.distill_steps) != settings.distill_rounds:
        raise InputError(
            "planner.distill_steps", f"one number per round ({settings.distill_rounds}), got {len(settings.distill_steps)}"
        )
    if settings.path is not None and settings.train_problems > 0:
        raise InputError("planner.path", "give a planner file or planner.train_problems > 0, not both (training starts afresh)")
    for name, needs in _ENABLED_BY.items():  # a setting of a stage that does not run would be ignored
        if getattr(settings, needs) == 0:
            refuse_unused(settings, [name], prefix="planner", problem=f"is used only with planner.{needs} > 0")
    if not job.evaluation.dp:
        refuse_unused(job.evaluation, ["dp_max_states"], prefix="evaluation", problem="is used only with evaluation.dp = true")
    if job.rule.r2 <= job.rule.r1:
        raise InputError("rule.r2", f"must exceed rule.r1 ({job.rule.r1:g}), got {job.rule.r2:g}")
    if job.problem is not None:
        planner_option_sets(job.problem)  # raises InputError for a problem beyond the planner's padding
    return job
