"""Chronic care: time to control (TTC) of hypertension and type 2 diabetes, visit by visit.

- ``settings``: the validated input (pydantic, no JAX): machines, regimes, tiered reward, clinicians, data;
- ``model``: each disease as an explicit finite MDP in JAX arrays;
- ``exact``: value iteration and exact policy evaluation (value and TTC curve);
- ``logs``, ``data``, ``visit_log``: the visit logs as arrays; clinicians of capability kappa and their
  simulated logs; a user's own log read from CSV, checked cell by cell;
- ``capability``: each clinician's kappa estimated from the logs (EM);
- ``training``: counts -> estimated machine -> value iteration (uniform or kappa-weighted), behaviour cloning;
- ``cql``, ``peer_cql``, ``peer_bench``: discrete CQL (all variants in one compiled program) and d3rlpy's beside it;
- ``unlearning``, ``cohort``, ``forgetting``: forgetting patients, checked against retraining; a run's
  logs rebuilt and its patients forgotten (the CLI and app record it);
- ``scoring``, ``study``, ``study_tables``: ``run_study(...) -> Study``, every policy scored exactly in every regime;
- ``entry``, ``spec``, ``job``, ``report``, ``bench``: the platform's contract, thin wrappers around the study;
- ``deployable``, ``decide``: the run's policies saved for deployment, and today's decision from them.
"""

from decisions.core.lazy import lazy_exports

__getattr__, __dir__, __all__ = lazy_exports(__name__, {
    "entry": ("DOMAIN",),
    "report": ("ChronicReport",),
    "settings": ("ACTIONS", "Care", "Clinicians", "Data", "HtnMachine", "Neural", "Problem", "Reward", "T2dMachine"),
    "study": ("Study", "run_study"),
})
