"""Fair traffic-signal control for vehicles and pedestrians on SUMO through sumo-rl.

Importing the package or its modules changes neither ``os.environ`` nor ``sys.path``: SUMO's
environment (:func:`sumo_setup.ensure_sumo`) is set when a simulation or a SUMO tool starts.
"""

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agents": ("AgentController", "TrainedAgent", "train_dqn"),
    "controllers": ("CONTROLLERS", "make_controller"),
    "demand": ("Demand",),
    "metrics": ("episode_metrics",),
    "report": ("TrafficReport",),
    "scenarios": ("SCENARIOS", "get_scenario"),
    "simulate": ("simulate", "simulate_many"),
    "spec": ("SCENARIO_NAMES", "TrafficJob", "prepare"),
    "study": ("Study", "run_study"),
})


def _spec() -> SpecModule:
    from decisions.mobility.traffic import spec

    return spec


def _job() -> JobModule:
    from decisions.mobility.traffic import job

    return job


def _bench() -> BenchModule:
    from decisions.mobility.traffic import bench

    return bench


DOMAIN = Domain(
    name="traffic",
    title="Traffic signals",
    spec=_spec,
    job=_job,
    bench=_bench,
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
"""The traffic-signal domain's entry in ``decisions.platform.registry``."""
