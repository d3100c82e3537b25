"""Goals-based wealth management solved exactly by dynamic programming.

Modules, one job each:
"""

from decisions.core.lazy import lazy_exports
from decisions.kit.decide import DecideModule
from decisions.kit.domain import Domain, RunModules, SpecModule

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "dp": ("OptionSet", "WealthResult", "solve", "transitions", "wealth_grid"),
    "market": ("Market", "efficient_frontier"),
    "problem": ("Goal", "GoalOption", "WealthProblem"),
    "report": ("WealthReport",),
})


def _spec() -> SpecModule:
    from decisions.finance.wealth import spec

    return spec


def _modules() -> RunModules:
    from decisions.finance.wealth import bench, job

    return RunModules(job, bench)


def _decider() -> DecideModule:
    from decisions.finance.wealth import decide

    return decide


DOMAIN = Domain.declared(__file__, _spec, _modules, _decider)
"""The wealth domain's entry in ``decisions.platform.registry`` (its facts in ``domain.toml``)."""
