"""The fund's own members from a CSV: read into the scenario's cohorts, and every bad file refused
with the file, row and column named, before any run starts."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pytest

from decisions.finance.pension import DOMAIN
from decisions.finance.pension import job as pension_job
from decisions.finance.pension.members import FIELD
from tests.helpers import assert_input_error, with_sections

EXAMPLES = Path(__file__).parents[3] / "examples"
GOOD = """member,sex,age,service,salary,pension,count
A1,F,30,5,42000,0,2
A2,M,55,28.5,61000,,1
P1,F,70,0,0,18000,3
"""


def _prepare(tmp_path: Path, text: str, **population: object) -> pension_job.PensionJob:
    (tmp_path / "members.csv").write_text(text)
    spec = with_sections(DOMAIN.smoke_spec, scenario={**DOMAIN.smoke_spec["scenario"],
                                                      "population": {"members_csv": "members.csv", **population}})
    return pension_job.prepare(spec, tmp_path)


def test_the_members_become_the_scenarios_cohorts(tmp_path: Path) -> None:
    cohorts = _prepare(tmp_path, GOOD).scenario.population.cohorts
    assert [(c.age, c.count, c.salary, c.service, c.pension) for c in cohorts] == [
        (30.0, 2.0, 42000.0, 5.0, 0.0), (55.0, 1.0, 61000.0, 28.5, 0.0), (70.0, 3.0, 0.0, 0.0, 18000.0)]
    no_count = _prepare(tmp_path, "age,service,salary,pension\n40,10,50000,0\n").scenario.population.cohorts
    assert no_count[0].count == 1.0


def test_the_example_spec_prepares_with_its_members_file() -> None:
    spec = tomllib.loads((EXAMPLES / "pension_own.toml").read_text())
    job = pension_job.prepare(spec, EXAMPLES)
    cohorts = job.scenario.population.cohorts
    assert len(cohorts) >= 24 and job.scenario.funding.initial_assets is not None
    assert any(c.pension > 0 for c in cohorts) and any(c.salary > 0 for c in cohorts)


@pytest.mark.parametrize(("text", "population", "words"), [
    ("age,service,salary\n40,10,50000\n", {}, "members.csv: missing column 'pension'"),
    ("age,service,salary,pension,grade\n40,10,50000,0,B\n", {}, "members.csv: unknown column 'grade'"),
    (GOOD.replace("F,70,", "F,seventy,"), {}, "members.csv, row 4, column 'age': 'seventy' is not a finite number"),
    (GOOD.replace("M,55,", "X,55,"), {}, "row 3, column 'sex': 'X' is not one of"),
    (GOOD.replace("42000", "-42000"), {}, "row 2, column 'salary': -42000 is below 0"),
    (GOOD.replace("F,30,", "F,1996,"), {}, "row 2, column 'age': 1996 is above 110 (ages are in years: is it a year"),
    (GOOD.replace("42000", "42"), {}, "row 2, column 'salary': 42 is below 1000 for an annual salary (the file may "
                                      "be in thousands"),
    (GOOD.replace("18000", "18"), {}, "row 4, column 'pension': 18 is below 100 for an annual pension"),
    (GOOD.replace("28.5,", "340,"), {}, "row 3, column 'service': 340 is above 70 (service is in years"),
    (GOOD.replace("0,0,18000", "0,30000,18000"), {}, "row 4, column 'salary': a pensioner (age 70 >= retirement_age 65)"
                                                     " has a salary"),
    (GOOD.replace("42000,0,", "42000,900,"), {}, "row 2, column 'pension': an active member (age 30 < retirement_age"),
    (GOOD, {"retirement_age": 72}, "row 4, column 'pension': an active member (age 70 < retirement_age 72) has a "
                                   "pension in payment"),
    (GOOD.replace("F,30,5,", "F,30,20,"), {}, "row 2, column 'service': 20 years of service at age 30"),
    (GOOD.replace(",2\n", ",0\n", 1), {}, "row 2, column 'count': 0 is not above 0"),
    (GOOD, {"cohorts": []}, "not both"),
])
def test_a_bad_members_file_is_refused_naming_the_file_row_and_column(
        tmp_path: Path, text: str, population: dict, words: str) -> None:
    error = assert_input_error(lambda: _prepare(tmp_path, text, **population), field=FIELD)
    assert words in error.problem, error.problem


def test_a_missing_file_is_refused(tmp_path: Path) -> None:
    spec = with_sections(DOMAIN.smoke_spec, scenario={"population": {"members_csv": "absent.csv"}})
    assert_input_error(pension_job.prepare, spec, tmp_path, field=FIELD, words="file not found")


@pytest.mark.slow
def test_a_job_runs_on_a_small_members_file(tmp_path: Path) -> None:
    report = pension_job.run_job(_prepare(tmp_path, GOOD))
    assert set(report.comparison.index) == {"snapo", "fixed_mix"}
    assert np.isfinite(report.metrics["value_snapo"]) and np.isfinite(report.metrics["value_fixed_mix"])
