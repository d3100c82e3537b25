"""Pharmaceutical 4-unit process chain (reactor, crystalliser, filter/wash, dryer) optimised with SNAPO."""

from decisions.core.lazy import lazy_exports
from decisions.kit.decide import DecideModule
from decisions.kit.domain import Domain, RunModules, SpecModule

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "chain": ("CQA_NAMES", "CQA_UNITS", "Profiles"),
    "compare": ("Comparison", "compare_with_baseline"),
    "design_space": ("design_space",),
    "params": ("CPP_NAMES",),
    "report": ("PharmaReport", "design_space_axes", "ordered_methods", "sensitivity_long"),
    "scenario": ("Cpp", "OperatingPoint", "OperatingRanges", "Scenario", "Specs"),
    "sensitivity": ("fd_check", "sensitivity_table"),
    "snapo_policy": ("OptimisedProfiles", "load_profiles", "optimise", "profile_frame", "save_profiles"),
    "spec": ("DesignSpaceSettings", "OptimiseSettings"),
    "trajectories": ("ChainFrames", "simulate_chain"),
})


def _spec() -> SpecModule:
    from decisions.health.pharma import spec

    return spec


def _modules() -> RunModules:
    from decisions.health.pharma import bench, job

    return RunModules(job, bench)


def _decider() -> DecideModule:
    from decisions.health.pharma import decide

    return decide


DOMAIN = Domain.declared(__file__, _spec, _modules, _decider)
"""The pharma domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
