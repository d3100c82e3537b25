"""Per-request utility-weight tuning for recommenders with Pareto sweeping and off-policy evaluation."""

from decisions.core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "entry": ("DOMAIN",),
    "logged": ("run_logged_study",),
    "logs": ("read_logs", "write_logs"),
    "obd_study": ("real_front", "standard_check"),
    "ope": ("ESTIMATORS", "OpeInputs", "bootstrap", "estimate_all", "summary_table"),
    "qnet": ("QModel", "load_model", "save_model", "train"),
    "report": ("UtilityReport",),
    "scenario": ("Simulator", "WeightSet"),
    "spec": ("UtilityJob", "prepare"),
    "study": ("Study", "run_study"),
})
