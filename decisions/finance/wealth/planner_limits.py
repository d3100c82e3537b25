"""What the MetaRL planner handles and its default budgets, on light modules only (no JAX).

The job's ``prepare`` (``spec``) checks a client's problem against the planner's reach and
takes its settings' defaults from here, before the planner's modules (JAX) load; ``meta_env``,
``planner`` and ``distill`` import these constants back.
"""

from __future__ import annotations

from decisions.errors import InputError
from decisions.finance.wealth.dp import OptionSet, option_sets
from decisions.finance.wealth.families import MAX_HORIZON
from decisions.finance.wealth.problem import WealthProblem

MAX_OPTIONS = 9
"""Goal options a year the planner handles (two goals of full and partial options: 3 x 3)."""

PLANNER_NUM_ENVS = 512
"""Parallel environments of the planner's PPO (``planner.DEFAULT_CONFIG.num_envs``)."""
PLANNER_ROLLOUT_STEPS = 32
"""Rollout steps per PPO update (``planner.DEFAULT_CONFIG.rollout_steps``)."""
PLANNER_BATCH_SIZE = PLANNER_NUM_ENVS * PLANNER_ROLLOUT_STEPS
"""Environment steps of one PPO update: the least a training run can take."""
PLANNER_TRAIN_STEPS = 160_000_000
"""Default PPO environment steps of a planner training run (``planner.DEFAULT_CONFIG.total_env_steps``)."""

DISTILL_STEPS = 20_000
"""Default gradient steps of ``distill`` (batches of 1,024 states)."""
TEMPERATURE = 1e-3
"""Default softness of the targets, in units of the total attainable utility."""


def planner_option_sets(problem: WealthProblem) -> tuple[OptionSet, ...]:
    """The option sets the planner encodes (``dp.option_sets`` of ``problem.target_as_goal()``), checked.

    Args:
        problem: a validated client problem.

    Returns:
        Per year ``0 .. T``, the undominated options (a wealth ``target`` counts as a goal of the horizon).

    Raises:
        InputError: (a ``ValueError``) the horizon exceeds ``MAX_HORIZON`` or a year has more
            than ``MAX_OPTIONS`` undominated options; it names the field.
    """
    if problem.horizon > MAX_HORIZON:
        raise InputError("problem.horizon", f"the planner handles at most {MAX_HORIZON} years, got {problem.horizon}")
    targeted = problem.target is not None
    sets = option_sets(problem.target_as_goal())
    for t, opts in enumerate(sets):
        n = len(opts.costs)
        if n > MAX_OPTIONS:
            counted = " (the target counts as a goal of the horizon)" if targeted and t == problem.horizon else ""
            raise InputError(
                "problem.goals",
                f"year {t} has {n} undominated goal options{counted}; the planner handles at most {MAX_OPTIONS}",
            )
    return sets
