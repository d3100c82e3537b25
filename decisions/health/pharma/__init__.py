"""Pharmaceutical 4-unit process chain (reactor, crystalliser, filter/wash, dryer) optimised with SNAPO."""

from decisions.core.lazy import lazy_exports

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "chain": ("CQA_NAMES", "CQA_UNITS", "Profiles"),
    "compare": ("Comparison", "compare_with_baseline"),
    "design_space": ("design_space",),
    "entry": ("DOMAIN",),
    "params": ("CPP_NAMES",),
    "report": ("PharmaReport", "design_space_axes", "ordered_methods", "sensitivity_long"),
    "scenario": ("Cpp", "OperatingPoint", "OperatingRanges", "Scenario", "Specs"),
    "sensitivity": ("fd_check", "sensitivity_table"),
    "snapo_policy": ("OptimisedProfiles", "load_profiles", "optimise", "profile_frame", "save_profiles"),
    "spec": ("DesignSpaceSettings", "OptimiseSettings"),
    "trajectories": ("ChainFrames", "simulate_chain"),
})
