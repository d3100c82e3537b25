"""Split-federated learning with a capability-aware split-point agent (issue 22, after the QSplitFL abstract).

Clients run a network up to a split point, the server runs the rest; the client parts are averaged
(FedAvg) each round (SFLV1). A split ``s`` is the number of client-side layers: ``s`` in ``[1, L-1]``
is split training, ``s = L`` the whole network on the client (plain FedAvg). The split does not
change what is learnt (``split.equivalence_error``: 0.0); it changes time, energy, memory and who
makes the round, through a fleet whose batteries the splits drain (``fleet``).

Typical use (each name is imported from its module on first use)::

    from decisions.telecom import splitfl
    job = splitfl.prepare({"data": {"concentration": 0.1}})      # InputError names the field
    study = splitfl.run_study(job, progress=...)                 # agents, every strategy, every seed
    study.summary; study.headline; study.histories[0]["dqn_client"].test_acc
    splitfl.equivalence_error("mobilenet", key, (x, y))           # split == unsplit training
    committee = splitfl.load_committee("committee_dqn_client.msgpack")

Figures come from ``decisions.telecom.splitfl.bench`` (``decisions bench splitfl --json``).
"""

from decisions.core.lazy import lazy_exports
from decisions.jobs.domain import Domain

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

DOMAIN = Domain(
    name="splitfl",
    title="Split learning",
    package=__name__,
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
"""The split-learning domain's entry in ``decisions.jobs.registry``."""
