"""Per-request utility-weight tuning for recommenders with Pareto sweeping and off-policy evaluation."""

from decisions.core.lazy import lazy_exports
from decisions.kit.domain import BenchModule, Domain, JobModule, SpecModule

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "logged": ("run_logged_study",),
    "logs": ("read_logs", "write_logs"),
    "obd_study": ("real_front", "standard_check"),
    "ope": ("ESTIMATORS", "OpeInputs", "bootstrap", "estimate_all", "summary_table"),
    "qnet": ("QModel", "decide", "load_model", "save_model", "train"),
    "report": ("UtilityReport",),
    "scenario": ("Simulator", "WeightSet"),
    "spec": ("UtilityJob", "prepare"),
    "study": ("Study", "run_study"),
})


def _spec() -> SpecModule:
    from decisions.recsys.utility import spec

    return spec


def _job() -> JobModule:
    from decisions.recsys.utility import job

    return job


def _bench() -> BenchModule:
    from decisions.recsys.utility import bench

    return bench


DOMAIN = Domain(
    name="utility",
    title="Utility weights",
    spec=_spec,
    job=_job,
    bench=_bench,
    summary="Choose each request's utility-weight vector over a recommender's predicted outcomes, "
            "and sweep the engagement-revenue front.",
    headline=("gain_share_of_oracle", "hypervolume_ratio_vs_global", "dr_rel_error", "engagement_gain_vs_production"),
    example="utility.toml",
    page="pages/7_Utility_weights.py",
    smoke_spec={
        "job": {"name": "smoke"},
        "logs": {"train_requests": 1000, "validation_requests": 200, "evaluation_requests": 1000},
        "agent": {"steps": 20, "log_every": 10, "hidden": [16], "embedding": 8},
        "frontier": {"test_requests": 128, "oracle_draws": 2, "points": 3, "bootstrap": 10},
        "drift": {"days": 3, "requests_per_day": 300},
    },
)
"""The utility domain's entry in ``decisions.platform.registry``."""
