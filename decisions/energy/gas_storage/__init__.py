"""Natural gas storage valued against a forward curve: SNAPO beside the LP intrinsic value,
rolling intrinsic, least-squares Monte Carlo, do-nothing and black-box PPO.
"""

from decisions.core.lazy import lazy_exports
from decisions.kit.decide import DecideModule
from decisions.kit.domain import Domain, RunModules, SpecModule

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "curve_io": ("load_forward_curve_csv",),
    "report": ("GasStorageReport",),
    "scenario": ("ExponentialOU", "Facility", "Scenario", "SeasonalOU", "TerminalRule", "seasonal_forward_curve"),
})

def _spec() -> SpecModule:
    from decisions.energy.gas_storage import spec

    return spec


def _modules() -> RunModules:
    from decisions.energy.gas_storage import bench, job

    return RunModules(job, bench)


def _decider() -> DecideModule:
    from decisions.energy.gas_storage import decide

    return decide


DOMAIN = Domain.declared(__file__, _spec, _modules, _decider)
"""The gas_storage domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
