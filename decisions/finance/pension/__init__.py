"""Pension asset-liability management trained with SNAPO."""

from __future__ import annotations

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

# The public names by the module (of this package) that defines each, imported on first use.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "bench": ("with_key_rates",),
    "report": ("PensionReport",),
    "scenario": ("Scenario",),
    "speedup": ("QUICK_KEY_RATES", "SPEEDUP_COLUMNS", "measure_speedups", "speedup_table"),
})


def _spec() -> SpecModule:
    from decisions.finance.pension import spec

    return spec


def _job() -> JobModule:
    from decisions.finance.pension import job

    return job


def _bench() -> BenchModule:
    from decisions.finance.pension import bench

    return bench


DOMAIN = Domain(
    name="pension",
    title="Pension ALM",
    spec=_spec,
    job=_job,
    bench=_bench,
    summary="Allocate a pension fund's assets and set contributions against its liabilities.",
    headline=("value_snapo", "value_fixed_mix", "snapo_minus_fixed_mix"),
    example="pension.toml",
    page="pages/3_Pension_ALM.py",
    smoke_spec={
        "job": {"name": "smoke"},
        "scenario": {"horizon_years": 2},
        "snapo": {"steps": 10, "paths_per_step": 32, "width": 8, "log_every": 5},
        "evaluation": {"paths": 64, "selection_paths": 32},
    },
)
"""The pension domain's entry in ``decisions.platform.registry``."""
