"""Explanations of the generalist on one home: the same importance, forecast sensitivity, surrogate tree and
"why did it act so at this hour" as a single-home agent's (``replay.ExplainedSeed``), over its own features."""

from __future__ import annotations

from collections.abc import Sequence

from decisions.core.agents.common import TrainResult
from decisions.energy.building.agents import seed_params
from decisions.energy.building.explain import explain_controller
from decisions.energy.building.generalist import BASE
from decisions.energy.building.generalist_env import GeneralistEnv, generalist_params, home_params
from decisions.energy.building.replay import ExplainedSeed, action_function
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.simulate import Trajectory, agent_controller, simulate
from decisions.energy.building.windows import Window


def explain_generalist(
    result: TrainResult,
    home: int,
    *,
    seed: int = 0,
    window: Window | None = None,
    base: Scenario = BASE,
    random_seed: int = 0,
    max_depth: int = 5,
) -> tuple[ExplainedSeed, Trajectory]:
    """Run ``seed`` of the generalist on building ``home`` over ``window`` (default: the held-out months)
    and explain it over the states it visited: ``(explained, trajectory)``; ``explained.why(i)`` answers
    for the trajectory's ``i``-th hour."""
    env = GeneralistEnv()
    single = home_params(generalist_params((home,), Split.EVAL, base), 0)
    params = seed_params(result, seed)
    trajectory = simulate(env, single, agent_controller(result.policy, params), window or base.eval_window())
    action_fn = action_function(result.policy, params)
    assert trajectory.observations is not None  # a controller's run keeps what it saw
    explanation = explain_controller(
        action_fn, trajectory.observations, env.feature_names(), seed=random_seed, max_depth=max_depth
    )
    return ExplainedSeed("ppo", int(seed), explanation, action_fn, 1), trajectory


def hours_at(trajectory: Trajectory, hour_of_day: int) -> Sequence[int]:
    """Indices of the trajectory's hours whose clock hour (CityLearn's 1-24, 24 the day's last) is ``hour_of_day``."""
    _, hour, _ = trajectory.calendar()
    return [int(i) for i in (hour == hour_of_day).nonzero()[0]]
