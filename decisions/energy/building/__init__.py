"""Home and district batteries on the CityLearn Challenge 2022 data (17 homes with PV, one year, hourly)."""

from __future__ import annotations

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

# The public names by the module (of this package) that defines each; no name is also a module's.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "env": ("BuildingEnv",),
    "evaluation": ("evaluate", "run_baselines"),
    "explain": ("IMPORTANCE_COLUMNS", "BuildingExplanation"),
    "job": ("recorded_job", "run_job"),
    "replay": ("ExplainedSeed", "explain_policy", "is_continuous", "load_policy", "policy_path", "replay_seed",
               "seed_name", "simulate_policy"),
    "report": ("BuildingReport",),
    "scenario": ("Scenario", "Split"),
    "simulate": ("Trajectory", "agent_controller"),
    "spec": ("AgentName", "AgentSettings", "BuildingJob", "prepare"),
})


def _spec() -> SpecModule:
    from decisions.energy.building import spec

    return spec


def _job() -> JobModule:
    from decisions.energy.building import job

    return job


def _bench() -> BenchModule:
    from decisions.energy.building import bench

    return bench


DOMAIN = Domain(
    name="building",
    title="Building energy",
    spec=_spec,
    job=_job,
    bench=_bench,
    summary="Charge and discharge a home battery with PV against prices (RL agents, explained).",
    headline=("best_agent_saving_vs_lp", "lp_saving_usd", "no_battery_cost_usd"),
    example="building.toml",
    page="pages/2_Building_energy.py",
    smoke_spec={
        "job": {"name": "smoke"},
        "scenario": {"buildings": [1], "relative_reward": True},
        "agents": {"names": ["ppo"], "seeds": 1, "on_policy_steps": 10_752},
        "evaluation": {"explain": False},
    },
)
"""The building domain's entry in ``decisions.platform.registry``."""
