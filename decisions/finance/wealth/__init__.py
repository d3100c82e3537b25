"""Goals-based wealth management solved exactly by dynamic programming.

Modules, one job each:

- ``market``: fund means and covariance, the closed-form efficient frontier;
- ``problem``: validated client input (pydantic; errors name the field);
- ``dp``: the log-wealth grid, transition matrices, backward induction and forward pass.
"""

from decisions.finance.wealth.dp import OptionSet, WealthResult, solve, transitions, wealth_grid
from decisions.finance.wealth.market import Market, efficient_frontier
from decisions.finance.wealth.problem import Goal, GoalOption, WealthProblem

__all__ = [
    "Goal",
    "GoalOption",
    "Market",
    "OptionSet",
    "WealthProblem",
    "WealthResult",
    "efficient_frontier",
    "solve",
    "transitions",
    "wealth_grid",
]
