"""The public API of the pharma chain, for analysts, the CLI and the app (one import).

from decisions.health.pharma import api
scenario = api.Scenario.parse(toml_table)                   # InputError names the field
result = api.optimise(scenario, api.OptimiseSettings(), progress=...)
result.cqa_table(); result.profile_frame(); result.curve()
api.compare_with_baseline(result).table                     # SNAPO vs best constant
api.sensitivity_table(scenario, result.cpps, result.profiles)   # rows CQAs, columns CPPs
api.design_space(scenario, api.DesignSpaceSettings(), result.cpps, result.profiles)
frames = api.simulate_chain(scenario, result.cpps, result.profiles)
api.save_profiles(path, result); api.load_profiles(path)
"""

from __future__ import annotations

from decisions.health.pharma.chain import CQA_NAMES, CQA_UNITS, Profiles
from decisions.health.pharma.compare import Comparison, compare_with_baseline
from decisions.health.pharma.design_space import DesignSpaceSettings, design_space
from decisions.health.pharma.optimise import (
    OptimisedProfiles,
    OptimiseSettings,
    load_profiles,
    optimise,
    profile_frame,
    save_profiles,
)
from decisions.health.pharma.params import CPP_NAMES
from decisions.health.pharma.scenario import Cpp, Scenario
from decisions.health.pharma.sensitivity import fd_check, sensitivity_table
from decisions.health.pharma.trajectories import ChainFrames, simulate_chain

__all__ = [
    "CPP_NAMES",
    "CQA_NAMES",
    "CQA_UNITS",
    "ChainFrames",
    "Comparison",
    "Cpp",
    "DesignSpaceSettings",
    "OptimiseSettings",
    "OptimisedProfiles",
    "Profiles",
    "Scenario",
    "compare_with_baseline",
    "design_space",
    "fd_check",
    "load_profiles",
    "optimise",
    "profile_frame",
    "save_profiles",
    "sensitivity_table",
    "simulate_chain",
]
