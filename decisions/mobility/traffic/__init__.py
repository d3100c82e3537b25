"""Fair traffic-signal control for vehicles and pedestrians on SUMO through sumo-rl (issue 23).

Importing this package points ``SUMO_HOME`` at the installed SUMO wheel and selects libsumo
(:func:`sumo_setup.ensure_sumo`), so its modules can import ``sumo_rl``, ``traci`` and
``sumolib`` directly. Modules:

- :mod:`.sumo_setup`: SUMO_HOME, libsumo, binaries;
- :mod:`.scenarios`: the scenario registry and pedestrian networks (netconvert, cached);
- :mod:`.demand`: held-out demand draws and pedestrian flows;
- :mod:`.metrics`: delays, waits, fairness and throughput from tripinfo output;
- :mod:`.env`: sumo-rl environments with a vehicle + pedestrian observation, fair rewards and
  action masks;
- :mod:`.controllers`: fixed-time, Webster, actuated, max-pressure and greedy baselines;
- :mod:`.simulate`: one episode per spawned process, and a pool of them;
- :mod:`.agents`: the core DQN on parallel SUMO processes (one network shared by every signal);
- :mod:`.study`: agents trained on training demand, every controller scored on held-out demand;
- :mod:`.survey`: the baselines on the scenarios (``python -m decisions.mobility.traffic.survey``).

Typical use (each name is imported from its module on first use)::

    from decisions.mobility import traffic
    job = traffic.prepare({"scenarios": {"names": ["cologne1"]}})   # InputError names the field
    study = traffic.run_study(job, progress=...)
    study.summary; study.headline
    traffic.simulate("cologne1", traffic.make_controller("max_pressure"), traffic.Demand(seed=100))

Figures come from ``decisions.mobility.traffic.bench`` (``decisions bench traffic --json``).
"""

from decisions.core.lazy import lazy_exports
from decisions.jobs.domain import Domain
from decisions.mobility.traffic.sumo_setup import ensure_sumo

ensure_sumo()

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agents": ("AgentController", "TrainedAgent", "train_dqn"),
    "controllers": ("CONTROLLERS", "make_controller"),
    "demand": ("Demand",),
    "metrics": ("episode_metrics",),
    "report": ("TrafficReport",),
    "scenarios": ("SCENARIOS", "get_scenario"),
    "simulate": ("simulate", "simulate_many"),
    "spec": ("TrafficJob", "prepare"),
    "study": ("Study", "run_study"),
})

DOMAIN = Domain(
    name="traffic",
    title="Traffic signals",
    package=__name__,
    summary="Time traffic signals for vehicles and pedestrians on the SUMO simulator, fairly to both, "
            "against fixed-time, Webster, actuated, max-pressure and greedy control.",
    headline=("veh_delay_vs_best_heuristic_cologne1", "ped_p95_wait_vs_best_heuristic_cologne1",
              "training_sim_seconds_per_wall_second"),
    example="traffic.toml",
    page="pages/9_Traffic_signals.py",
    smoke_spec={
        "job": {"name": "smoke"},
        "scenarios": {"names": ["single-intersection"], "seconds": 90},
        "demand": {"train_seeds": [0], "test_seeds": [100]},
        "agent": {"env_steps": 200, "num_envs": 1},
        "study": {"controllers": ["fixed", "max_pressure"], "vehicle_only": False, "default_reward": False, "ppo": False},
    },
)
"""The traffic-signal domain's entry in ``decisions.jobs.registry``."""
