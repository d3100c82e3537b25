"""Split-federated learning with a capability-aware split-point agent (after the QSplitFL abstract).

``deployable`` and ``decide`` put a run's policies to work on a round's capability reports.
"""

from decisions.core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agent": ("Committee", "load_committee", "save_committee", "train_committee", "vote"),
    "costs": ("split_costs",),
    "data": ("dirichlet_partition", "load_digits_data", "load_fashion_mnist"),
    "devices": ("DeviceScenario", "Tier"),
    "entry": ("DOMAIN",),
    "env": ("ClientSplitEnv", "RoundSplitEnv"),
    "federation": ("Federation", "History", "run_federation"),
    "model": ("SplitNet", "layer_table", "make_net"),
    "report": ("SplitFLReport",),
    "spec": ("SplitFLJob", "prepare"),
    "split": ("equivalence_error", "make_round"),
    "strategies": ("ClientAgent", "FastestSplit", "FixedSplit", "GreedyRule", "RandomSplit", "RoundAgent"),
    "study": ("Study", "run_study"),
})
