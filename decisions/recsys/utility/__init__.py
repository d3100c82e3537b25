"""Per-request utility-weight tuning for recommenders with Pareto sweeping and off-policy evaluation."""

from decisions.core.lazy import lazy_exports
from decisions.kit.decide import DecideModule
from decisions.kit.domain import Domain, RunModules, SpecModule

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "logged": ("run_logged_study",),
    "logs": ("read_logs", "write_logs"),
    "obd_study": ("real_front", "standard_check"),
    "ope": ("ESTIMATORS", "OpeInputs", "bootstrap", "estimate_all", "summary_table"),
    "qnet": ("QModel", "load_model", "save_model", "train"),
    "report": ("UtilityReport",),
    "scenario": ("Simulator", "WeightSet"),
    "spec": ("UtilityJob", "prepare"),
    "study": ("Study", "run_study"),
})


def _spec() -> SpecModule:
    from decisions.recsys.utility import spec

    return spec


def _modules() -> RunModules:
    from decisions.recsys.utility import bench, job

    return RunModules(job, bench)


def _decider() -> DecideModule:
    from decisions.recsys.utility import decide

    return decide


DOMAIN = Domain.declared(__file__, _spec, _modules, _decider)
"""The utility domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
