"""Pension asset-liability management trained with SNAPO."""

from __future__ import annotations

from decisions.core.lazy import lazy_exports
from decisions.kit.decide import DecideModule
from decisions.kit.domain import Domain, RunModules, SpecModule

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


def _modules() -> RunModules:
    from decisions.finance.pension import bench, job

    return RunModules(job, bench)


def _decider() -> DecideModule:
    from decisions.finance.pension import decide

    return decide


DOMAIN = Domain.declared(__file__, _spec, _modules, _decider)
"""The pension domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
