"""Fair traffic-signal control for vehicles and pedestrians on SUMO through sumo-rl.

Importing the package or its modules changes neither ``os.environ`` nor ``sys.path``: SUMO's
environment (:func:`sumo_setup.ensure_sumo`) is set when a simulation or a SUMO tool starts.

``junctions``, ``junction_policies`` and ``decide`` put a run's policies to work on a junction's
detector readings, without SUMO.
"""

from decisions.core.lazy import lazy_exports
from decisions.kit.decide import DecideModule
from decisions.kit.domain import Domain, RunModules, SpecModule

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


def _modules() -> RunModules:
    from decisions.mobility.traffic import bench, job

    return RunModules(job, bench)


def _decider() -> DecideModule:
    from decisions.mobility.traffic import decide

    return decide


DOMAIN = Domain.declared(__file__, _spec, _modules, _decider)
"""The traffic domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
