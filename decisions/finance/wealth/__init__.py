"""Goals-based wealth management solved exactly by dynamic programming.

Modules, one job each:
"""

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

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


def _job() -> JobModule:
    from decisions.finance.wealth import job

    return job


def _bench() -> BenchModule:
    from decisions.finance.wealth import bench

    return bench


DOMAIN = Domain(
    name="wealth",
    title="Wealth planning",
    spec=_spec,
    job=_job,
    bench=_bench,
    summary="Plan a client's portfolio and goal choices over time (MetaRL planner beside the exact DP).",
    headline=("planner_vs_dp", "expected_utility_planner", "expected_utility_dp", "rule_vs_dp"),
    example="wealth.toml",
    page="pages/5_Wealth_planning.py",
    smoke_spec={
        "job": {"name": "smoke"},
        "problem": {
            "horizon": 6,
            "initial_wealth": 100.0,
            "cash_flows": [5.0, 5.0, 5.0, 0.0, 0.0, 0.0],
            "goals": [
                {"year": 2, "options": [{"cost": 20.0, "utility": 10.0}, {"cost": 40.0, "utility": 16.0}]},
                {"year": 6, "options": [{"cost": 90.0, "utility": 30.0}]},
            ],
        },
        "evaluation": {"paths": 500},
    },
)
"""The wealth domain's entry in ``decisions.platform.registry``."""
