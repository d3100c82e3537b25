"""Score baselines and any other controllers on the same held-out window, as one KPI table."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from decisions.energy.building.baselines import no_battery_controller, rule_based_controller
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.kpis import kpi_table
from decisions.energy.building.mpc import mpc_actions
from decisions.energy.building.optimum import perfect_foresight
from decisions.energy.building.scenario import Scenario, Split
from decisions.energy.building.simulate import Controller, Trajectory, simulate, simulate_actions
from decisions.energy.building.windows import Window


def run_baselines(
    scenario: Scenario, window: Window | None = None, *, include_mpc: bool = False
) -> dict[str, Trajectory]:
    """Run the baselines of a scenario over ``window`` (default: the held-out months) through the environment:
    ``{"no_battery", "rule_based", "perfect_foresight"[, "mpc"]: Trajectory}`` (MPC: one LP per hour).
    """
    env, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    window = window or scenario.eval_window()
    out = {
        "no_battery": simulate(env, params, no_battery_controller(env), window),
        "rule_based": simulate(env, params, rule_based_controller(env, params), window),
    }
    optimum = perfect_foresight(params, window)
    out["perfect_foresight"] = simulate_actions(env, params, optimum.actions(params), window)
    if include_mpc:
        out["mpc"] = simulate_actions(env, params, mpc_actions(params, window), window)
    return out


def evaluate(
    scenario: Scenario,
    controllers: Mapping[str, Controller] | None = None,
    window: Window | None = None,
    *,
    include_mpc: bool = False,
) -> pd.DataFrame:
    """KPI table (``kpis.kpi_table``) of the baselines, then of ``controllers`` (``{name: controller(obs) -> action}``),
    on ``window`` (default: the held-out window) of ``scenario``'s continuous-action environment.
    """
    window = window or scenario.eval_window()
    trajectories = run_baselines(scenario, window, include_mpc=include_mpc)
    env, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    for name, controller in (controllers or {}).items():
        trajectories[name] = simulate(env, params, controller, window)
    return kpi_table(trajectories)
