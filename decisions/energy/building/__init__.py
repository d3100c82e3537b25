"""Home and district batteries on the CityLearn Challenge 2022 data (17 homes with PV, one year, hourly).

Modules, one job each:

- ``dataset``: ``load_district()``, the packaged data as typed arrays (``data/``, derived by ``derive``);
- ``scenario``: the validated ``Scenario`` (homes, battery overrides, tariff, split, reward);
  ``tariff``: the dynamic price and user price CSVs; ``windows``: splits, episode starts, windows;
- ``params``: ``to_params`` / ``per_building_params``, the traced ``BuildingParams``;
- ``battery``: one hour of battery physics; ``observation``: feature order, names and scales;
- ``env``: ``BuildingEnv`` (one home, or several behind one meter);
- ``simulate``: ``simulate`` / ``simulate_actions``, the one scorer, and ``Trajectory``;
- ``baselines``: no battery and rule-based controllers; ``optimum``: the perfect-foresight LP;
  ``mpc``: 24 h rolling LP; ``evaluation``: ``run_baselines`` / ``evaluate``;
- ``kpis``: CityLearn KPIs relative to no battery; ``bench``: measured figures;
- ``agents``: the RL agents' training and scoring; ``tuning``: their hyperparameters chosen on
  validation months inside the training months (the bench's); ``explain``: explanations of a
  controller; ``replay``: a run's saved policies reloaded, re-simulated and explained;
- ``spec``: the job's validated model (``BuildingJob``, ``AgentName``, ``AgentSettings``) and
  ``prepare``, on light modules (no JAX); ``job``: the batch job (``run_job``) and its ``report``.

The names of ``__all__`` are the package's public face: apps import them from
``decisions.energy.building``, never from its modules. Each is imported from its module on first
use, so importing the package (or one of its light modules) does not import JAX. A controller is
identified by the pair ``(controller, seed)`` (a baseline's name and no seed, or an agent's name
and its seed), in the run's tables as in this API.

Typical use::

    scenario = Scenario.parse({"buildings": 5})                  # or "district", [1, 2, 3]
    env, params = BuildingEnv.from_scenario(scenario, "train")   # train an agent on these
    table = evaluate(scenario, {"ppo": agent_controller(result.policy, result.params)})

    job = recorded_job(record.config)                            # a recorded run, replayed
    seed = replay_seed(job, "ppo", 0, local_copies(record))  # decisions.store.artifacts
    lines, local = seed.why(hour_index=100)
"""

from __future__ import annotations

from decisions.core.lazy import lazy_exports
from decisions.jobs.domain import Domain

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

DOMAIN = Domain(
    name="building",
    title="Building energy",
    package=__name__,
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
"""The building domain's entry in ``decisions.jobs.registry``."""
