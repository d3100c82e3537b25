"""Pension asset-liability management trained with SNAPO.

Modules, one job each:

- ``scenario``: validated user input (pydantic; errors name the field);
- ``params``: the traced ``PensionParams`` pytree, the ``inputs`` of every sensitivity;
- ``curve``: key-rate zero curve, Nelson-Siegel factor shocks, OU factors;
- ``liabilities``: Gompertz-Makeham survival, projected benefits, payroll, bucketed discounting;
- ``assets``: cash and bond buckets priced on the simulated curve, correlated lognormal assets;
- ``policy``: the allocation network (and the fixed mix as the same network with its state gate closed);
- ``simulator``: the monthly ``lax.scan`` over vmapped paths and the objective;
- ``snapo_policy``: train / evaluate / sensitivities / save / load;
- ``sensitivity``: the gradient to every input as a pytree and as tidy tables;
- ``baselines``: the fixed-mix search;
- ``valuation``: PV, key-rate durations, DV01, duration and convexity of any cash flows;
- ``report`` and ``job``: the tables the app charts and the batch job;
- ``bench``: the measured figures (``python -m decisions.finance.pension.bench``);
  ``speedup``: a quick bump-versus-adjoint measurement (the app's timing panel).

The names of ``__all__`` are the package's public face for the app, each imported from its
module on first use (importing the package does not import JAX).
"""

from __future__ import annotations

from decisions.core.lazy import lazy_exports
from decisions.jobs.domain import Domain

# The public names by the module (of this package) that defines each, imported on first use.
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "bench": ("with_key_rates",),
    "report": ("PensionReport",),
    "scenario": ("Scenario",),
    "speedup": ("QUICK_KEY_RATES", "SPEEDUP_COLUMNS", "measure_speedups", "speedup_table"),
})

DOMAIN = Domain(
    name="pension",
    title="Pension ALM",
    package=__name__,
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
"""The pension domain's entry in ``decisions.jobs.registry``."""
