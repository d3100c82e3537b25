"""Batch-job plumbing, free of domain code: TOML specs, sweeps and runners.

A job is a module-level function of one config dict. ``load_toml`` reads a
spec, ``expand_sweep`` turns its ``[sweep]`` table into one config per grid
point, and a ``Runner`` (``SerialRunner``, ``LocalProcessRunner``, or Ray's
``RayRunner``) runs the job over the configs.
"""

from decisions.jobs.runner import JobOutcome, LocalProcessRunner, Runner, SerialRunner
from decisions.jobs.spec import SpecError, expand_sweep, load_toml, sweep_grid

__all__ = [
    "JobOutcome",
    "LocalProcessRunner",
    "Runner",
    "SerialRunner",
    "SpecError",
    "expand_sweep",
    "load_toml",
    "sweep_grid",
]
