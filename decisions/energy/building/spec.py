"""The building job's spec: its validated model and ``prepare``, on light modules only (no JAX)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import Field, model_validator

from decisions.core.settings import Settings, refuse_unused
from decisions.energy.building.scenario import Scenario, read_home
from decisions.errors import InputError
from decisions.kit.base import JobBase, Section, spec_path


class AgentName(StrEnum):
    """The core agents a building job can train."""

    PPO = "ppo"
    A2C = "a2c"
    SAC = "sac"
    DQN = "dqn"

    @property
    def on_policy(self) -> bool:
        """PPO and A2C learn from their own fresh rollouts; SAC and DQN from a replay buffer."""
        return self in (AgentName.PPO, AgentName.A2C)

    @property
    def continuous(self) -> bool:
        """PPO, A2C and SAC act continuously (gradient explanations apply); DQN picks discrete levels."""
        return self is not AgentName.DQN

    @property
    def module(self) -> ModuleType:
        """The ``decisions.core.agents`` module of the agent (imported on first use: JAX)."""
        from decisions.core.agents import a2c, dqn, ppo, sac

        return {AgentName.PPO: ppo, AgentName.A2C: a2c, AgentName.SAC: sac, AgentName.DQN: dqn}[self]


class AgentSettings(Settings):
    """Which agents to train and with what budget (validated; ``parse`` raises ``InputError``)."""

    section = "agents"

    names: tuple[AgentName, ...] = Field(tuple(AgentName), min_length=1, description="Agents to train.")
    seeds: int = Field(3, ge=1, le=16, description="Seeds per agent, trained one after another.")
    on_policy_steps: int = Field(
        5_000_000, ge=10_000, le=200_000_000, description="Environment steps per seed for PPO and A2C."
    )
    off_policy_steps: int = Field(
        200_000, ge=5_000, le=20_000_000, description="Environment steps per seed for SAC and DQN."
    )

    @model_validator(mode="after")
    def _distinct(self) -> AgentSettings:
        if len(set(self.names)) != len(self.names):
            raise ValueError("names: agents must be distinct")
        return self


class EvaluationSettings(Settings):
    """How controllers are scored and explained."""

    include_mpc: bool = Field(False, description="Also run the 24 h MPC baseline (one LP per hour).")
    explain: bool = Field(True, description="Explain the best continuous-action agent.")
    tree_depth: int = Field(5, ge=1, le=12, description="Depth of the surrogate decision tree.")


class BuildingJob(JobBase, name="building"):
    """A validated building job."""

    SPEC_PATHS = ("scenario.home",)

    scenario: Section[Scenario]
    agents: Section[AgentSettings]
    evaluation: Section[EvaluationSettings]

    @classmethod
    def rewrite(cls, data: dict[str, Any], base_dir: Path | None) -> None:
        """A CSV tariff's ``path`` is relative to ``base_dir`` (the spec file's folder)."""
        scenario = data.setdefault("scenario", {})
        tariff = scenario.get("tariff")
        if base_dir is None:
            return
        if isinstance(tariff, Mapping) and isinstance(tariff.get("path"), str):
            scenario["tariff"] = {**tariff, "path": str(spec_path(tariff["path"], base_dir))}
        elif isinstance(tariff, str) and tariff.lower().endswith(".csv"):
            scenario["tariff"] = str(spec_path(tariff, base_dir))


JOB_MODEL = BuildingJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> BuildingJob:
    """Validate a job spec into a ``BuildingJob`` (see ``BuildingJob.rewrite`` for tariff files; an own
    home's file, ``scenario.home``, is also read relative to ``base_dir``).

    Raises:
        InputError: naming the first bad field, also a setting the job would ignore: the steps of
            agents not trained, ``explain = true`` with no continuous-action agent, ``tree_depth``
            with no explanation, and with an own home the buildings, the months, or a tariff beside
            the file's own price.
    """
    job = BuildingJob.from_spec(spec, base_dir)
    _refuse_unused_with_home(job.scenario)
    names = job.agents.names
    if AgentName.DQN in names and job.scenario.num_buildings > 1:
        raise InputError("agents.names", "dqn acts on discrete levels of one battery; choose one building")
    if not any(name.on_policy for name in names):
        refuse_unused(job.agents, ["on_policy_steps"], prefix="agents", problem="is used only when agents.names includes ppo or a2c")
    if all(name.on_policy for name in names):
        refuse_unused(job.agents, ["off_policy_steps"], prefix="agents", problem="is used only when agents.names includes sac or dqn")
    evaluation = job.evaluation
    continuous = any(name.continuous for name in names)
    if evaluation.explain and not continuous:
        refuse_unused(
            evaluation, ["explain"], prefix="evaluation",
            problem="is used only when agents.names includes a continuous-action agent (ppo, a2c or sac); set it to false",
        )
    if not (evaluation.explain and continuous):
        refuse_unused(
            evaluation, ["tree_depth"], prefix="evaluation",
            problem="is used only with evaluation.explain = true and a continuous-action agent (ppo, a2c or sac)",
        )
    return job


def _refuse_unused_with_home(scenario: Scenario) -> None:
    """With an own home, refuse the settings its file replaces (given explicitly)."""
    if scenario.home is None:
        return
    refuse_unused(scenario, ["buildings"], prefix="scenario", problem="an own home (scenario.home) is the one home "
                  "of its file: leave buildings out")
    refuse_unused(scenario, ["train_months", "eval_months"], prefix="scenario", problem="an own home's file splits "
                  "by days, not months: set scenario.eval_days, the number of its last days held out")
    if read_home(scenario.home).has_price:
        refuse_unused(scenario, ["tariff"], prefix="scenario", problem=f"{Path(scenario.home).name} gives its own "
                      "price_usd_per_kwh column: leave tariff out")
