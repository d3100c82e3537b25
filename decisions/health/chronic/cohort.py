"""The cohort a run learnt from: per disease, its exact case and the visit logs of its tabular kappa
learner (the unlearning check's logs), with each logged patient's identifier."""

from __future__ import annotations

from typing import NamedTuple

import jax

from decisions.health.chronic.data import Logs
from decisions.health.chronic.scoring import Case, draw_logs, make_case
from decisions.health.chronic.settings import ACTIONS, Care
from decisions.health.chronic.visit_log import read_visit_log


class DiseaseCohort(NamedTuple):
    """One disease's exact case, its visit logs, ``patient_ids[n]`` (the identifier of log row ``n``)
    and whether the logs are the user's own."""

    case: Case
    logs: Logs
    patient_ids: tuple[str, ...]
    user_log: bool


def simulated_ids(disease: str, patients: int) -> tuple[str, ...]:
    """The identifiers of simulated patients: ``"<disease>-<index>"`` (``t2d-0``, ``t2d-1``, ...)."""
    return tuple(f"{disease}-{index}" for index in range(patients))


def disease_key(seed: int, index: int) -> jax.Array:
    """The key of the ``index``-th disease studied: ``fold_in(PRNGKey(seed), index)``."""
    return jax.random.fold_in(jax.random.PRNGKey(seed), index)


def cohort(care: Care, seed: int) -> dict[str, DiseaseCohort]:
    """Each disease's case and the logs its learners are fitted on: the user's visit log
    (``data.log``) for ``data.log_disease``, otherwise logs drawn with ``fold_in(disease_key, 0)``."""
    problem, clinicians, data = care.problem, care.clinicians, care.data
    machines = {"htn": care.htn, "t2d": care.t2d}
    found = {}
    for index, name in enumerate(problem.diseases):
        case = make_case(name, machines[name], problem, care.reward, clinicians.habit)
        if data.log is not None and name == data.log_disease:
            visits = read_visit_log(data.log, problem.horizon, habit=ACTIONS.index(clinicians.habit))
            found[name] = DiseaseCohort(case, visits.logs, tuple(visits.patients), True)
            continue
        logs = draw_logs(case, clinicians, data.patients, jax.random.fold_in(disease_key(seed, index), 0))
        found[name] = DiseaseCohort(case, logs, simulated_ids(name, data.patients), False)
    return found
