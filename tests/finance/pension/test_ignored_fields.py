"""Pension input that a job would accept and then ignore is refused, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from decisions.finance.pension.spec import prepare
from tests.helpers import assert_input_error

ACTIVE = {"age": 40.0, "count": 10.0, "salary": 50.0, "service": 15.0}
RETIRED = {"age": 70.0, "count": 5.0, "pension": 20.0}


def _spec(**sections: dict[str, Any]) -> dict[str, Any]:
    return {"job": {"kind": "pension"}, **sections}


def _cohorts(*cohorts: dict[str, Any]) -> dict[str, Any]:
    return {"population": {"cohorts": list(cohorts)}}


@pytest.mark.parametrize(
    ("spec", "field", "words"),
    [
        (_spec(snapo={"seed": 4}), "snapo.seed", "is not used; the job's seed is job.seed"),
        (_spec(scenario={"funding": {"initial_assets": 500.0, "initial_funding_ratio": 1.1}}),
         "scenario.funding.initial_funding_ratio", "is used only when scenario.funding.initial_assets is not given"),
        (_spec(scenario=_cohorts(ACTIVE, {**RETIRED, "salary": 30.0})), "scenario.population.cohorts.1.salary",
         "is used only for active members (age < retirement_age 65); this cohort is aged 70"),
        (_spec(scenario=_cohorts({**RETIRED, "service": 30.0})), "scenario.population.cohorts.0.service",
         "is used only for active members"),
        (_spec(scenario=_cohorts({**ACTIVE, "pension": 12.0})), "scenario.population.cohorts.0.pension",
         "is used only for pensioners (age >= retirement_age 65); this cohort is aged 40"),
        (_spec(scenario={"population": {"retirement_age": 60.0, "cohorts": [{**ACTIVE, "age": 62.0, "pension": 9.0}]}}),
         "scenario.population.cohorts.0.salary", "is used only for active members (age < retirement_age 60)"),
    ],
)
def test_a_field_the_job_would_ignore_is_refused(spec: dict[str, Any], field: str, words: str) -> None:
    assert_input_error(prepare, spec, field=field, words=words)


def test_the_same_fields_are_accepted_where_they_are_used() -> None:
    job = prepare(_spec(scenario={"funding": {"initial_funding_ratio": 1.1}}, snapo={"steps": 5}))
    assert job.scenario.funding.initial_funding_ratio == 1.1 and job.snapo.steps == 5
    job = prepare(_spec(scenario={"funding": {"initial_assets": 500.0}}))
    assert job.scenario.funding.initial_assets == 500.0
    job = prepare(_spec(job={"kind": "pension", "seed": 4}, scenario=_cohorts(ACTIVE, RETIRED)))
    assert job.seed == 4 and [c.age for c in job.scenario.population.cohorts] == [40.0, 70.0]


def test_a_zero_where_the_rules_apply_zero_is_accepted() -> None:
    """A table with every column (zeros where a field does not apply) says nothing the job ignores."""
    job = prepare(_spec(scenario=_cohorts({**ACTIVE, "pension": 0.0}, {**RETIRED, "salary": 0.0, "service": 0.0})))
    assert len(job.scenario.population.cohorts) == 2


def test_defaults_never_trip() -> None:
    job = prepare(_spec(scenario={"population": {"retirement_age": 65.0}}))
    assert len(job.scenario.population.cohorts) > 1 and job.snapo.seed == 0
