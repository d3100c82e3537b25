"""The utility-weight job spec: its validated model and ``prepare``, with no JAX."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from decisions.core.settings import Settings, finite_numbers, network_widths, refuse_unused
from decisions.core.strict_input import Seed
from decisions.kit.base import JobBase, Section
from decisions.recsys.utility.scenario import Simulator, WeightSet

WideWidths = network_widths(max_width=2048)
"""The context tower's widths: up to 2048 units a layer."""


class Logger(StrEnum):
    """Who chose the logged weight vectors."""

    UNIFORM = "uniform"
    """Uniformly random exploration over the weight set (propensity 1 / A)."""
    PRODUCTION = "production"
    """The production weights, with an epsilon-uniform exploration."""


class LogSettings(Settings):
    """Where the training and evaluation logs come from."""

    section = "logs"

    path: str | None = Field(
        None, description="A request log CSV to learn from instead of simulating (schema: decisions.recsys.utility.logs)."
    )
    logger: Logger = Field(Logger.UNIFORM, description="The simulated logging policy.")
    epsilon: float = Field(0.1, gt=0.0, le=1.0, allow_inf_nan=False, description="Exploration of the production logger.")
    train_requests: int = Field(100_000, ge=100, le=5_000_000, description="Simulated training log requests.")
    validation_requests: int = Field(20_000, ge=100, le=1_000_000, description="Validation log requests.")
    evaluation_requests: int = Field(
        100_000, ge=100, le=5_000_000, description="Held-out log requests the off-policy estimates use."
    )
    seed: Seed = Field(0, description="Seed of the simulated logs.")


class Conditioning(StrEnum):
    """How the scalarisation parameter reaches the Q-network."""

    VECTOR = "vector"
    """Predict the outcome vector; lam weighs it at decision time (also serves Chebyshev)."""
    LAMBDA = "lambda"
    """lam is an input; the network predicts the lam-utility (linear scalarisation only)."""


class QNetSettings(Settings):
    """The Q-network and its offline training."""

    section = "agent"

    hidden: WideWidths = Field((128, 128), description="Context tower widths.")
    embedding: int = Field(32, ge=1, le=512, description="Width of the towers' shared embedding.")
    conditioning: Conditioning = Field(Conditioning.VECTOR, description="vector | lambda.")
    steps: int = Field(8000, ge=1, le=1_000_000, description="Adam steps.")
    batch_size: int = Field(1024, ge=1, le=65_536, description="Examples per step.")
    learning_rate: float = Field(3e-4, gt=0.0, le=1.0, allow_inf_nan=False, description="Adam's step size.")
    log_every: int = Field(500, ge=1, description="Steps per jitted chunk (progress, early-stopping checks).")
    ensemble: int = Field(3, ge=1, le=16, description="Networks trained with successive seeds; decisions use their mean.")
    importance_weighted: bool = Field(False, description="Weigh examples by 1 / (A propensity) (biased logs).")
    seed: Seed = Field(0, description="Seed of initialisation and minibatches.")


class FrontierSettings(Settings):
    """The inference-time Pareto sweep and how its points are scored."""

    section = "frontier"

    points: int = Field(11, ge=2, le=201, description="Lambda values evenly spaced on [0, 1].")
    lambdas: list[float] | None = Field(None, description="Explicit lambda values instead of the even grid.")
    chebyshev: bool = Field(True, description="Also sweep the Chebyshev scalarisation.")
    test_requests: int = Field(8192, ge=64, le=1_000_000, description="Fresh requests every policy is scored on exactly.")
    oracle_draws: int = Field(48, ge=1, le=1024, description="Users per context the per-context oracle averages over.")
    bootstrap: int = Field(200, ge=1, le=10_000, description="Bootstrap resamples of the off-policy intervals.")
    ope_replications: int = Field(
        1, ge=1, le=100,
        description="Independent held-out logs the estimator errors at lambda 0.5 are averaged over (simulation).",
    )
    switch_tau: float = Field(20.0, gt=0.0, allow_inf_nan=False, description="Switch-DR's importance-weight threshold.")
    linucb_alphas: list[float] = Field(
        [0.0, 0.1, 0.3, 1.0], min_length=1, description="LinUCB exploration bonuses tried on validation logs."
    )

    @field_validator("lambdas", "linucb_alphas", mode="before")
    @classmethod
    def _finite(cls, value: object) -> object:
        return value if value is None else finite_numbers(value, "values")

    @field_validator("lambdas")
    @classmethod
    def _unit(cls, values: list[float] | None) -> list[float] | None:
        if values is not None:
            if not values:
                raise ValueError("must list at least one lambda")
            for lam in values:
                if not 0.0 <= lam <= 1.0:
                    raise ValueError(f"each lambda must lie in [0, 1], got {lam}")
        return values

    @field_validator("linucb_alphas")
    @classmethod
    def _non_negative(cls, values: list[float]) -> list[float]:
        if min(values) < 0:
            raise ValueError(f"bonuses must be non-negative, got {min(values)}")
        return values

    def grid(self) -> list[float]:
        """The lambda values of the sweep, ascending."""
        if self.lambdas is not None:
            return sorted(set(self.lambdas))
        return [i / (self.points - 1) for i in range(self.points)]


class DriftSettings(Settings):
    """The drifting-preferences scenario: weights tuned on day 0 against retraining on the latest day."""

    section = "drift"

    days: int = Field(0, ge=0, le=60, description="Days simulated (0: no drift study).")
    requests_per_day: int = Field(20_000, ge=100, le=1_000_000, description="Logged requests per day.")
    lam: float = Field(0.5, ge=0.0, le=1.0, allow_inf_nan=False, description="The operating lambda compared.")


class UtilityJob(JobBase, name="utility"):
    """A validated utility-weight tuning job."""

    SPEC_PATHS = ("logs.path",)

    simulator: Section[Simulator]
    weights: Section[WeightSet]
    logs: Section[LogSettings]
    agent: Section[QNetSettings]
    frontier: Section[FrontierSettings]
    drift: Section[DriftSettings]

    @model_validator(mode="after")
    def _lambda_conditioning(self) -> UtilityJob:
        if self.agent.conditioning is Conditioning.LAMBDA and self.frontier.chebyshev:
            raise ValueError(
                "frontier.chebyshev: a lambda-conditioned Q-network learns the linear utility only; "
                "set chebyshev = false or agent.conditioning = 'vector'"
            )
        return self



JOB_MODEL = UtilityJob


def prepare(spec: Mapping[str, Any], base_dir: Path | None = None) -> UtilityJob:
    """Validate a job spec into a ``UtilityJob``.

    Raises:
        InputError: naming the first bad field; with ``logs.path``, also a file ``logs.read_logs``
            refuses (naming the column and row of a bad cell) and the settings only a simulation uses (``[simulator]`` except ``hide_cost``, the simulated logs'
            sizes and logger, the test requests and oracle of ``[frontier]``, ``[drift]``).
    """
    job = UtilityJob.from_spec(spec, base_dir)
    if job.logs.path is not None:
        problem = "is used only when the logs are simulated (no logs.path)"
        refuse_unused(job.logs, ("logger", "epsilon", "train_requests", "validation_requests", "evaluation_requests"),
                      prefix="logs", problem=problem)
        refuse_unused(job.simulator, [f for f in Simulator.model_fields if f != "hide_cost"], prefix="simulator",
                      problem=problem)
        refuse_unused(job.frontier, ("test_requests", "oracle_draws"), prefix="frontier", problem=problem)
        refuse_unused(job.drift, prefix="drift", problem=problem)
        from decisions.recsys.utility.logs import read_logs  # pandas: only for a log file

        read_logs(job.logs.path, int(job.weights.matrix().shape[0]))  # every row checked before the run starts
    return job
