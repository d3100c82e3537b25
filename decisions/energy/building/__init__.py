"""Home and district batteries on the CityLearn Challenge 2022 data (17 homes with PV, one year, hourly), or on
one home's own hourly data (``home.py``)."""

from __future__ import annotations

from decisions.core.lazy import lazy_exports

# The public names by the module (of this package) that defines each; no name is also a module's.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "entry": ("DOMAIN",),
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
