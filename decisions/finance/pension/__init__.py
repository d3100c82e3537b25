"""Pension asset-liability management trained with SNAPO."""

from __future__ import annotations

from decisions.core.lazy import lazy_exports

# The public names by the module (of this package) that defines each, imported on first use.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "bench": ("with_key_rates",),
    "entry": ("DOMAIN",),
    "report": ("PensionReport",),
    "scenario": ("Scenario",),
    "speedup": ("QUICK_KEY_RATES", "SPEEDUP_COLUMNS", "measure_speedups", "speedup_table"),
})
