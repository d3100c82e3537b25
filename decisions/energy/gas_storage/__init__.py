"""Natural gas storage valued against a forward curve: SNAPO beside the LP intrinsic value,
rolling intrinsic, least-squares Monte Carlo, do-nothing and black-box PPO.
"""

from decisions.core.lazy import lazy_exports

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "curve_io": ("load_forward_curve_csv",),
    "entry": ("DOMAIN",),
    "report": ("GasStorageReport",),
    "scenario": ("ExponentialOU", "Facility", "Scenario", "SeasonalOU", "TerminalRule", "seasonal_forward_curve"),
})
