"""Validated input for a goals-based wealth management problem.

Conventions:

Every error names its field: ``WealthProblem.parse(data)`` raises
``decisions.errors.InputError("problem.goals", "goals[1].year: ...")``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, ValidationInfo, field_validator

from decisions.core.numbers import MONEY_MAX, UTILITY_MAX, Float32
from decisions.core.settings import Settings
from decisions.finance.wealth.market import Market

Finite = Annotated[float, Field(allow_inf_nan=False), Float32()]
"""A finite number that stays finite in float32 (the planner's precision); its field sets the range."""
Money = Annotated[float, Field(allow_inf_nan=False), Float32(MONEY_MAX)]
"""An amount of money (wealth, a cash flow, a goal's cost): magnitude at most ``MONEY_MAX`` (1e12)."""
Utility = Annotated[float, Field(allow_inf_nan=False), Float32(UTILITY_MAX)]
"""A goal option's utility, in the client's units: at most ``UTILITY_MAX`` (1e9)."""


class GoalOption(Settings):
    """One way of funding a goal: what it costs and what it is worth to the client."""

    cost: Money = Field(ge=0.0)
    utility: Utility = Field(ge=0.0)


class Goal(Settings):
    """A goal due in ``year`` with its funding options (full, partial, ...)."""

    year: int = Field(ge=0, le=200)  # checked against the horizon (at most 200) by WealthProblem
    options: list[GoalOption] = Field(min_length=1)

    @field_validator("options")
    @classmethod
    def _utility_increases_with_cost(cls, value: list[GoalOption]) -> list[GoalOption]:
        ranked = sorted(value, key=lambda o: (o.cost, o.utility))
        for lo, hi in zip(ranked, ranked[1:], strict=False):
            if hi.cost > lo.cost and hi.utility < lo.utility:
                raise ValueError(
                    f"utility must not decrease with cost (cost {hi.cost:g} gives {hi.utility:g} "
                    f"< {lo.utility:g} at cost {lo.cost:g})"
                )
        return value


class WealthProblem(Settings):
    """A client's goals-based wealth problem and the DP grid settings.

    ``target`` is the wealth goal of the single-goal problem (maximise ``P[W(T) >= target]``);
    ``goals`` are the goals of the multi-goal problem (maximise expected total utility).
    """

    section = "problem"

    horizon: int = Field(ge=1, le=200)
    initial_wealth: Money = Field(gt=0.0)
    cash_flows: list[Money] | None = None
    target: Money | None = Field(default=None, gt=0.0)
    goals: list[Goal] = Field(default_factory=list)
    market: Market = Field(default_factory=Market)
    rho: Finite = Field(default=3.0, gt=0.0, le=100.0)
    n_sd: Finite = Field(default=3.0, gt=0.0, le=10.0)

    @field_validator("cash_flows")
    @classmethod
    def _one_per_year(cls, value: list[float] | None, info: ValidationInfo) -> list[float] | None:
        horizon = info.data.get("horizon")
        if value is not None and horizon is not None and len(value) != horizon:
            raise ValueError(f"needs one cash flow per year 0 .. {horizon - 1} ({horizon}), got {len(value)}")
        return value

    @field_validator("goals")
    @classmethod
    def _within_horizon(cls, value: list[Goal], info: ValidationInfo) -> list[Goal]:
        horizon = info.data.get("horizon")
        for i, goal in enumerate(value):
            if horizon is not None and goal.year > horizon:
                raise ValueError(f"goals[{i}].year: {goal.year} is after the horizon {horizon}")
        return value

    def target_as_goal(self) -> WealthProblem:
        """The same problem with ``target`` as one more goal at the horizon: cost ``target``, utility 1."""
        if self.target is None:
            return self
        wealth_goal = Goal(year=self.horizon, options=[GoalOption(cost=self.target, utility=1.0)])
        return self.model_copy(update={"target": None, "goals": [*self.goals, wealth_goal]})

    def flows(self) -> list[float]:
        """Cash flow per year ``0 .. horizon - 1`` (zeros when none were given)."""
        return list(self.cash_flows) if self.cash_flows is not None else [0.0] * self.horizon
