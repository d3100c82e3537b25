"""Fair traffic-signal control for vehicles and pedestrians on SUMO through sumo-rl.

Importing the package or its modules changes neither ``os.environ`` nor ``sys.path``: SUMO's
environment (:func:`sumo_setup.ensure_sumo`) is set when a simulation or a SUMO tool starts.

``junctions``, ``junction_policies`` and ``decide`` put a run's policies to work on a junction's
detector readings, without SUMO.
"""

from decisions.core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agents": ("AgentController", "TrainedAgent", "train_dqn"),
    "controllers": ("CONTROLLERS", "make_controller"),
    "demand": ("Demand",),
    "entry": ("DOMAIN",),
    "metrics": ("episode_metrics",),
    "report": ("TrafficReport",),
    "scenarios": ("SCENARIOS", "get_scenario"),
    "simulate": ("simulate", "simulate_many"),
    "spec": ("SCENARIO_NAMES", "TrafficJob", "prepare"),
    "study": ("Study", "run_study"),
})
