"""Goals-based wealth management solved exactly by dynamic programming.

Modules, one job each:
"""

from decisions.core.lazy import lazy_exports

# The public names by the module that defines each (imported on first use: the package stays light).
__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "dp": ("OptionSet", "WealthResult", "solve", "transitions", "wealth_grid"),
    "entry": ("DOMAIN",),
    "market": ("Market", "efficient_frontier"),
    "problem": ("Goal", "GoalOption", "WealthProblem"),
    "report": ("WealthReport",),
})
