"""Split-federated learning with a capability-aware split-point agent (after the QSplitFL abstract)."""

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "agent": ("Committee", "load_committee", "save_committee", "train_committee", "vote"),
    "costs": ("split_costs",),
    "data": ("dirichlet_partition", "load_digits_data", "load_fashion_mnist"),
    "devices": ("DeviceScenario", "Tier"),
    "env": ("ClientSplitEnv", "RoundSplitEnv"),
    "federation": ("Federation", "History", "run_federation"),
    "model": ("SplitNet", "layer_table", "make_net"),
    "report": ("SplitFLReport",),
    "spec": ("SplitFLJob", "prepare"),
    "split": ("equivalence_error", "make_round"),
    "strategies": ("ClientAgent", "FastestSplit", "FixedSplit", "GreedyRule", "RandomSplit", "RoundAgent"),
    "study": ("Study", "run_study"),
})


def _spec() -> SpecModule:
    from decisions.telecom.splitfl import spec

    return spec


def _job() -> JobModule:
    from decisions.telecom.splitfl import job

    return job


def _bench() -> BenchModule:
    from decisions.telecom.splitfl import bench

    return bench


DOMAIN = Domain(
    name="splitfl",
    title="Split learning",
    spec=_spec,
    job=_job,
    bench=_bench,
    summary="Choose where to split a network between edge devices and the server in split-federated "
            "learning, round by round or client by client, from the devices' capability.",
    headline=("time_to_target_ratio_vs_best_fixed", "final_test_acc_vs_best_fixed", "dropout_rate_agent",
              "split_equivalence_max_err"),
    example="splitfl.toml",
    page="pages/8_Split_learning.py",
    smoke_spec={
        "job": {"name": "smoke"},
        "training": {"rounds": 2, "seeds": [0], "local_steps": 2},
        "agent": {"env_steps": 200, "modes": ["client"], "committee": 1},
        "study": {"committees": [], "decays": [], "fixed_splits": [3, 9]},
    },
)
"""The split-learning domain's entry in ``decisions.platform.registry``."""
