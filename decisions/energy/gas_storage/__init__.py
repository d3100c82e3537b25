"""Natural gas storage valued against a forward curve: SNAPO beside the LP intrinsic value,
rolling intrinsic, least-squares Monte Carlo, do-nothing and black-box PPO.
"""

from math import cos, pi

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "curve_io": ("load_forward_curve_csv",),
    "report": ("GasStorageReport",),
    "scenario": ("ExponentialOU", "Facility", "Scenario", "SeasonalOU", "TerminalRule", "seasonal_forward_curve"),
})

_SMOKE_DAYS = 30


def _spec() -> SpecModule:
    from decisions.energy.gas_storage import spec

    return spec


def _job() -> JobModule:
    from decisions.energy.gas_storage import job

    return job


def _bench() -> BenchModule:
    from decisions.energy.gas_storage import bench

    return bench


DOMAIN = Domain(
    name="gas_storage",
    title="Gas storage",
    spec=_spec,
    job=_job,
    bench=_bench,
    summary="Value a natural gas storage lease against a forward curve and trade it.",
    headline=("value_snapo", "value_intrinsic_lp", "snapo_vs_rolling_intrinsic", "snapo_vs_lsmc"),
    example="gas_storage.toml",
    page="pages/1_Gas_storage.py",
    smoke_spec={
        "job": {"name": "smoke", "method": "snapo"},
        "scenario": {
            "forward_curve": [20.0 + 4.0 * cos(2 * pi * d / _SMOKE_DAYS) for d in range(_SMOKE_DAYS)],
            "facility": {"max_inventory": 100.0, "max_injection": 25.0, "max_withdrawal": 50.0},
        },
        "snapo": {"steps": 20, "paths_per_step": 16, "log_every": 10},
        "evaluation": {"paths": 32},
    },
    demo_spec={"job": {"name": "demo", "method": "compare"}, "evaluation": {"paths": 256}},
)
"""The gas storage domain's entry in ``decisions.platform.registry``."""
