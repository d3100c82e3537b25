"""The pension ALM job spec: its validated model and ``prepare``, with no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field, ValidationError

from decisions.core.settings import Settings, refuse_unused
from decisions.core.snapo_settings import BareTrainingSeed, SnapoSettingsBase, Temperature
from decisions.errors import InputError
from decisions.finance.pension.scenario import Population, Scenario
from decisions.kit.base import JobBase, Section, popped_path

if TYPE_CHECKING:
    from decisions.finance.pension.policy import AllocationNet


class PensionSnapoSettings(SnapoSettingsBase):
    """User settings of SNAPO training (validated; ``parse`` raises ``InputError``)."""

    paths_per_step: int = Field(128, gt=0, le=100_000, description="Paths per gradient step (antithetic).")
    steps: int = Field(600, gt=0, le=1_000_000, description="Gradient steps.")
    temperature_start: Temperature = Field(0.05, description="Initial hinge temperature (funding-ratio units).")
    temperature_end: Temperature = Field(0.005, description="Final hinge temperature (funding-ratio units).")
    width: int = Field(32, gt=0, le=1024, description="Hidden units per layer.")
    depth: int = Field(2, ge=1, le=6, description="Hidden layers.")
    seed: BareTrainingSeed = 0

    def network(self, n_assets: int) -> AllocationNet:
        """The neural policy these settings describe (imports the network, hence JAX)."""
        from decisions.finance.pension.policy import AllocationNet

        return AllocationNet(n_assets=n_assets, hidden=(self.width,) * self.depth)


class EvaluationSettings(Settings):
    """How the policies are scored."""

    paths: int = Field(1024, gt=0, le=100_000, description="Fresh common evaluation paths.")
    selection_paths: int = Field(512, gt=0, le=100_000, description="Training paths that pick the fixed mix.")


class PensionJob(JobBase, name="pension"):
    """A validated pension ALM job."""

    scenario: Section[Scenario]
    snapo: Section[PensionSnapoSettings]
    evaluation: Section[EvaluationSettings]

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """``scenario.population.members_csv`` (relative to ``base_dir``) replaces the cohorts with the
        fund's members (``members.read_members``)."""
        scenario = data.get("scenario")
        table = scenario.get("population") if isinstance(scenario, Mapping) else None
        population, path = popped_path(table, "members_csv", "scenario.population.members_csv", base_dir)
        if path is None:
            return
        from decisions.finance.pension.members import FIELD, read_members  # pandas: only for a CSV

        if "cohorts" in population:
            raise InputError(FIELD, "give the members' file or scenario.population.cohorts, not both")
        population["cohorts"] = read_members(path, _retirement_age(population))
        data["scenario"] = {**scenario, "population": population}


def _retirement_age(population: Mapping[str, Any]) -> float | None:
    """The population's retirement age when it is valid (its default when absent), else None."""
    try:
        given = {key: population[key] for key in ("retirement_age",) if key in population}
        return Population.model_validate(given).retirement_age
    except ValidationError:
        return None


JOB_MODEL = PensionJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> PensionJob:
    """Validate a job spec into a ``PensionJob``; a relative ``scenario.population.members_csv`` is read
    from ``base_dir`` (see ``PensionJob.rewrite``).

    Raises:
        InputError: naming the first bad field, also a setting the job would ignore:
            ``snapo.seed`` (the job's seed is ``job.seed``), ``initial_funding_ratio`` beside
            ``initial_assets``, or a cohort's nonzero pension while active, salary or service
            while retired.
    """
    job = PensionJob.from_spec(spec, base_dir)
    refuse_unused(job.snapo, ["seed"], prefix="snapo", problem="is not used; the job's seed is job.seed")
    funding = job.scenario.funding
    if funding.initial_assets is not None:
        refuse_unused(
            funding, ["initial_funding_ratio"], prefix="scenario.funding",
            problem="is used only when scenario.funding.initial_assets is not given",
        )
    population = job.scenario.population
    retirement = population.retirement_age
    for i, cohort in enumerate(population.cohorts):  # a zero is what the rules apply anyway: accepted
        active = cohort.age < retirement
        unused = [name for name in (("pension",) if active else ("salary", "service")) if getattr(cohort, name) != 0]
        members = "pensioners (age >= retirement_age" if active else "active members (age < retirement_age"
        refuse_unused(
            cohort, unused, prefix=f"scenario.population.cohorts.{i}",
            problem=f"is used only for {members} {retirement:g}); this cohort is aged {cohort.age:g}",
        )
    return job
