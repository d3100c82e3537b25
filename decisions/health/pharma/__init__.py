"""Pharmaceutical 4-unit process chain (reactor, crystalliser, filter/wash, dryer) optimised with SNAPO."""

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

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


def _job() -> JobModule:
    from decisions.health.pharma import job

    return job


def _bench() -> BenchModule:
    from decisions.health.pharma import bench

    return bench


DOMAIN = Domain(
    name="pharma",
    title="Pharma process",
    spec=_spec,
    job=_job,
    bench=_bench,
    summary="Set a four-unit process chain's temperature profiles to meet specifications under uncertainty.",
    headline=("snapo_yield", "snapo_compliance", "yield_gain", "best_constant_yield"),
    example="pharma.toml",
    page="pages/4_Pharma_process.py",
    smoke_spec={
        "job": {"name": "smoke", "method": "optimise"},
        "optimise": {"steps": 5, "samples_per_step": 4, "eval_samples": 16, "log_every": 5},
        "baseline": {"samples": 8, "points": [2, 2, 2], "refinements": 0},
    },
)
"""The pharma domain's entry in ``decisions.platform.registry``."""
