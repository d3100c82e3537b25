"""Natural gas storage valued against a forward curve: SNAPO beside the LP intrinsic value,
rolling intrinsic, least-squares Monte Carlo, do-nothing and black-box PPO.

Modules, one job each:

- ``scenario``: the validated ``Scenario`` (facility, ratchets, forward curve, price model);
  ``facility``, ``prices``, ``params``: the traced ``StorageParams`` and spot paths;
- ``simulator``: the differentiable daily rollout; ``policy``: the trading network;
- ``snapo_policy``: train / evaluate / sensitivities / save / load;
- ``intrinsic``, ``rolling``, ``lsmc``, ``baselines``: the exact and industry baselines;
  ``valuation``: bump-and-revalue; ``rl``: black-box PPO on the same simulator;
- ``curve_io``: forward curve CSVs; ``report`` and ``job``: the batch job and its tables;
- ``bench``: the measured figures (``decisions bench gas_storage --json``).
"""

from math import cos, pi

from decisions.core.lazy import lazy_exports
from decisions.jobs.domain import Domain

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "curve_io": ("load_forward_curve_csv",),
    "report": ("GasStorageReport",),
    "scenario": ("ExponentialOU", "Facility", "Scenario", "SeasonalOU", "TerminalRule", "seasonal_forward_curve"),
})

_SMOKE_DAYS = 30

DOMAIN = Domain(
    name="gas_storage",
    title="Gas storage",
    package=__name__,
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
"""The gas storage domain's entry in ``decisions.jobs.registry``."""
