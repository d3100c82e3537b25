"""Per-request utility-weight tuning for recommenders with Pareto sweeping and off-policy evaluation
(issue 21, after the PRL-PUTS abstract).

Typical use (each name is imported from its module on first use)::

    from decisions.recsys import utility
    job = utility.prepare({"logs": {"train_requests": 100_000}})      # InputError names the field
    study = utility.run_study(job, progress=...)                      # logs, Q-network, sweep, OPE
    logs, names = utility.read_logs("log.csv", actions=91)            # a user's log (schema: logs.py)
    study = utility.run_logged_study(job, logs)                       # the same, every value a DR estimate
    study.front; study.off_policy; study.segments; study.drift        # tables; study.figures
    utility.decide(study.model, contexts, lam=0.3)                    # serving: weight-vector indices
    inputs = utility.OpeInputs.from_policy(rewards, actions, propensity, target_probs, q_hat)
    utility.summary_table(inputs, truth=...)                          # IPS, SNIPS, DM, DR, switch-DR
    utility.standard_check()                                          # Open Bandit sample: BTS from random logs

Figures come from ``decisions.recsys.utility.bench`` (``decisions bench utility --json``).
"""

from decisions.core.lazy import lazy_exports
from decisions.jobs.domain import Domain

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

DOMAIN = Domain(
    name="utility",
    title="Utility weights",
    package=__name__,
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
"""The utility domain's entry in ``decisions.jobs.registry``."""
