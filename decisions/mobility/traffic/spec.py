"""The traffic-signal job spec: its validated model and ``prepare``, with no JAX and no SUMO simulation
(SUMO's netconvert runs only to convert an OpenStreetMap extract of the 'custom' scenario, cached)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, field_validator

from decisions.core.numbers import INT32_MAX
from decisions.core.settings import NetworkWidths, Settings
from decisions.core.strict_input import Seed
from decisions.errors import InputError
from decisions.kit.base import JobBase, Section

SCENARIO_NAMES = ("single-intersection", "cologne1", "ingolstadt1", "grid4x4", "arterial4x4")
"""The scenarios ``scenarios.SCENARIOS`` registers (a test keeps them equal)."""

CONTROLLER_NAMES = ("fixed", "webster", "actuated", "max_pressure", "queue_greedy", "ped_greedy")
"""The baseline controllers ``controllers.CONTROLLERS`` registers (a test keeps them equal)."""

CUSTOM = "custom"
"""The scenario name of a user's own network (``scenarios.net_file`` or ``osm_file``, and its demand)."""
CUSTOM_FILES = ("net_file", "osm_file", "route_file", "counts_file")
"""The 'custom' scenario's files in ``[scenarios]``: one network, one demand."""

HEURISTICS = ("fixed", "webster", "actuated", "max_pressure", "queue_greedy")
"""The heuristics the fair agent's vehicle delay is held against (the best per scenario)."""

SumoSeed = Annotated[int, Field(ge=0, le=INT32_MAX)]
"""A demand seed: SUMO's ``--seed``, a 32-bit signed integer."""


def _known(values: list[str], known: tuple[str, ...], what: str) -> list[str]:
    unknown = [v for v in values if v not in known]
    if unknown:
        raise ValueError(f"unknown {what} {unknown}; known: {', '.join(known)}")
    if len(set(values)) != len(values):
        raise ValueError(f"each {what} at most once, got {values}")
    return values


def _weights_in_range(weights: list[float], what: str) -> list[float]:
    for w in weights:
        if not 0.0 <= w <= 1e4:
            raise ValueError(f"each {what} weight must lie in [0, 1e4], got {w}")
    return weights


def _seeds(seeds: list[int]) -> list[int]:
    if len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise ValueError(f"must be distinct non-negative integers, got {seeds}")
    return seeds


class ScenarioSettings(Settings):
    """Which networks run, and for how long."""

    section = "scenarios"

    names: list[str] = Field(
        ["single-intersection", "cologne1", "ingolstadt1"],
        description="Scenarios with pedestrians ([] with study.without_pedestrians: only those, without).",
    )
    pedestrians: bool = Field(True, description="Add sidewalks, crossings and pedestrian flows.")
    seconds: int | None = Field(
        None, ge=30, le=86_400, description="Simulated seconds per episode (default: the scenario's window)."
    )
    net_file: str | None = Field(None, description="Network of the 'custom' scenario (.net.xml).")
    route_file: str | None = Field(None, description="Vehicle demand of the 'custom' scenario (.rou.xml).")
    osm_file: str | None = Field(
        None, description="Network of the 'custom' scenario as an OpenStreetMap extract (.osm), converted by netconvert."
    )
    counts_file: str | None = Field(
        None, description="Vehicle demand of the 'custom' scenario as counts per approach (CSV: edge, vehicles_per_hour).",
    )
    begin: int = Field(0, ge=0, description="First simulated second of the 'custom' scenario.")

    @field_validator("names")
    @classmethod
    def _names(cls, names: list[str]) -> list[str]:
        return _known(names, (*SCENARIO_NAMES, CUSTOM), "scenario")


class DemandSettings(Settings):
    """The demand draws: training seeds for the agents, held-out seeds for every comparison."""

    section = "demand"

    ped_rate_per_hour: float = Field(
        120.0, ge=0.0, le=5_000.0, allow_inf_nan=False, description="Pedestrians per hour per pedestrian flow."
    )
    vehicle_scale: float = Field(
        1.0, gt=0.0, le=5.0, allow_inf_nan=False, description="Factor on the scenario's vehicle demand."
    )
    depart_jitter_s: float = Field(
        60.0, ge=0.0, le=3_600.0, allow_inf_nan=False, description="Random shift of each departure (s)."
    )
    train_seeds: list[SumoSeed] = Field(
        [0, 1, 2, 3], min_length=1, max_length=64, description="Demand seeds the agents train on."
    )
    test_seeds: list[SumoSeed] = Field(
        [100, 101, 102], min_length=1, max_length=64, description="Held-out demand seeds every controller is scored on."
    )
    validation_seeds: list[SumoSeed] = Field(
        [50, 51], min_length=1, max_length=64,
        description="Demand seeds the pedestrian weight is chosen on (reward.ped_weight_grid); neither trained nor tested on.",
    )  # fmt: skip

    @field_validator("train_seeds", "test_seeds", "validation_seeds")
    @classmethod
    def _distinct(cls, seeds: list[int]) -> list[int]:
        return _seeds(seeds)


class RewardSettings(Settings):
    """The fair agent's reward: minus weighted halted vehicles, waiting pedestrians and the longest wait."""

    section = "reward"

    veh_weight: float = Field(1.0, ge=0.0, le=1e4, allow_inf_nan=False, description="Weight of halted vehicles.")
    ped_weight: float = Field(1.0, ge=0.0, le=1e4, allow_inf_nan=False, description="Weight of waiting pedestrians.")
    fairness_weight: float = Field(
        1.0, ge=0.0, le=1e4, allow_inf_nan=False, description="Weight of the longest single wait (either group)."
    )
    ped_weight_grid: list[float] = Field(
        [], max_length=6,
        description="Pedestrian weights to choose from per scenario on validation demand (study.veh_delay_tolerance); [] keeps ped_weight.",
    )  # fmt: skip

    @field_validator("ped_weight_grid")
    @classmethod
    def _grid(cls, weights: list[float]) -> list[float]:
        _weights_in_range(weights, "pedestrian")
        if len(set(weights)) != len(weights):
            raise ValueError(f"each weight at most once, got {weights}")
        return weights


class AgentSettings(Settings):
    """The core DQN, one network shared by every signal of a scenario, trained on parallel SUMO processes."""

    section = "agent"

    env_steps: int = Field(20_000, ge=100, le=10_000_000, description="Decisions (signal-steps) of training.")
    num_envs: int = Field(2, ge=1, le=64, description="SUMO simulations run in parallel processes.")
    hidden: NetworkWidths = Field((64, 64), description="Q-network widths.")
    gamma: float = Field(0.95, ge=0.0, lt=1.0, description="Discount per decision.")
    learning_rate: float = Field(1e-3, gt=0.0, le=1.0, allow_inf_nan=False, description="Adam step size.")
    max_green_s: int = Field(
        60, ge=0, le=3_600, description="Longest green an agent may hold (s; 0: no limit), through its action mask."
    )
    seed: Seed = Field(0, description="Seed of the agents' training.")
    scenario_env_steps: dict[str, int] = Field(
        {}, description="Decisions of training per scenario where it differs from env_steps (e.g. the 16-signal grids)."
    )

    @field_validator("scenario_env_steps")
    @classmethod
    def _scenario_steps(cls, steps: dict[str, int]) -> dict[str, int]:
        for name, count in steps.items():
            if name not in (*SCENARIO_NAMES, CUSTOM):
                raise ValueError(f"unknown scenario {name!r}; choose from {[*SCENARIO_NAMES, CUSTOM]}")
            if not 100 <= count <= 10_000_000:
                raise ValueError(f"{name}: decisions must lie in [100, 10000000], got {count}")
        return steps

    def steps_for(self, scenario: str) -> int:
        """Decisions of training on ``scenario``: its ``scenario_env_steps`` entry, else ``env_steps``."""
        return self.scenario_env_steps.get(scenario, self.env_steps)


class StudySettings(Settings):
    """What runs beside the fair agent."""

    section = "study"

    controllers: list[str] = Field(list(CONTROLLER_NAMES), description="Baseline controllers scored.")
    vehicle_only: bool = Field(True, description="Train the vehicle-only agent (the ablation).")
    default_reward: bool = Field(True, description="Train an agent on sumo-rl's default reward (diff-waiting-time).")
    ppo: bool = Field(True, description="Train the core PPO on the fair reward beside the DQN (ppo_fair).")
    without_pedestrians: list[str] = Field(
        [], description="Scenarios also run without pedestrians (DQN vs fixed-time, max-pressure, queue-greedy)."
    )
    plain_candidates: int = Field(
        1, ge=1, le=8,
        description="DQNs trained per plain scenario (seeds agent.seed onwards); the lowest vehicle delay on the validation seeds is kept.",
    )  # fmt: skip
    fairness_weights: list[float] = Field(
        [], max_length=8, description="Fairness weights of the trade-off sweep (one fair agent each; [] to skip)."
    )
    veh_delay_tolerance: float = Field(
        0.05, ge=0.0, le=10.0, allow_inf_nan=False,
        description="The operator's rule choosing the pedestrian weight: vehicle delay within this share of the best heuristic's.",
    )  # fmt: skip

    @field_validator("controllers")
    @classmethod
    def _controllers(cls, names: list[str]) -> list[str]:
        return _known(names, CONTROLLER_NAMES, "controller")

    @field_validator("without_pedestrians")
    @classmethod
    def _plain(cls, names: list[str]) -> list[str]:
        return _known(names, SCENARIO_NAMES, "scenario")

    @field_validator("fairness_weights")
    @classmethod
    def _weights(cls, weights: list[float]) -> list[float]:
        return _weights_in_range(weights, "fairness")


class TrafficJob(JobBase, name="traffic"):
    """A validated traffic-signal study."""

    SPEC_PATHS = ("scenarios.net_file", "scenarios.route_file", "scenarios.osm_file", "scenarios.counts_file")

    scenarios: Section[ScenarioSettings]
    demand: Section[DemandSettings]
    reward: Section[RewardSettings]
    agent: Section[AgentSettings]
    study: Section[StudySettings]


JOB_MODEL = TrafficJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> TrafficJob:
    """Validate a job spec into a ``TrafficJob``.

    Raises:
        InputError: naming the first bad field: also no scenario at all, fair-reward weights that are all zero,
            training seeds that overlap the held-out ones, and a custom network or demand file that is
            missing or bad (``own_network.own_scenario``: naming the file, its row or element and field).
    """
    job = TrafficJob.from_spec(spec, base_dir)
    s = job.scenarios
    if not s.names and not job.study.without_pedestrians:
        raise InputError("scenarios.names", "name at least one scenario (or some in study.without_pedestrians)")
    if CUSTOM in s.names:
        _check_custom(s)
    else:
        for key in CUSTOM_FILES:
            if getattr(s, key) is not None:
                raise InputError(f"scenarios.{key}", "is used only with the 'custom' scenario in scenarios.names")
    r = job.reward
    if r.veh_weight == r.ped_weight == r.fairness_weight == 0.0:
        raise InputError("reward.weights", "veh_weight, ped_weight and fairness_weight are all zero")
    d = job.demand
    overlap = sorted(set(d.train_seeds) & set(d.test_seeds))
    if overlap:
        raise InputError("demand.test_seeds", f"{overlap} are also training seeds; test demand must be held out")
    if r.ped_weight_grid or (job.study.plain_candidates > 1 and job.study.without_pedestrians):
        overlap = sorted(set(d.validation_seeds) & (set(d.train_seeds) | set(d.test_seeds)))
        if overlap:
            problem = f"{overlap} are also training or test seeds; validation demand must be neither"
            raise InputError("demand.validation_seeds", problem)
    return job


def _check_custom(s: ScenarioSettings) -> None:
    """One network and one demand for the custom scenario, each file checked (``own_network.own_scenario``)."""
    from decisions.mobility.traffic.own_network import own_scenario

    for one, other in (("net_file", "osm_file"), ("route_file", "counts_file")):
        given = (getattr(s, one) is not None, getattr(s, other) is not None)
        if not any(given):
            raise InputError(f"scenarios.{one}", f"is required with the 'custom' scenario (or scenarios.{other})")
        if all(given):
            raise InputError(f"scenarios.{other}", f"give scenarios.{one} or scenarios.{other}, not both")
    own_scenario(s)
