"""Many clients from one CSV: read into their problems, every bad file refused with the file, row and
column named before any run starts, and a small batch planned with the DP beside the planner."""

from __future__ import annotations

import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from decisions.finance.wealth import job as wealth_job
from decisions.finance.wealth.clients import FIELD
from decisions.finance.wealth.report import WealthReport
from tests.helpers import assert_input_error

EXAMPLES = Path(__file__).parents[3] / "examples"
GOOD = """client,initial_wealth,horizon,contribution,contribution_years,goal,year,cost,utility
Ann,100,4,5,2,car,2,20,10
Ann,,,,,car,2,40,16
Ann,100,4,,,pot,4,90,30
Bob,50,3,,,trip,1,10,5
"""


def _prepare(tmp_path: Path, text: str, **sections: object) -> wealth_job.WealthJob:
    (tmp_path / "clients.csv").write_text(text)
    return wealth_job.prepare({"job": {"kind": "wealth"}, "clients": {"csv": "clients.csv"}, **sections}, tmp_path)


def test_the_rows_become_each_clients_problem(tmp_path: Path) -> None:
    clients = _prepare(tmp_path, GOOD).clients
    assert clients is not None and clients.names == ["Ann", "Bob"]
    ann, bob = clients.problems
    assert (ann.horizon, ann.initial_wealth, ann.cash_flows) == (4, 100.0, [5.0, 5.0, 0.0, 0.0])
    assert [(g.year, [(o.cost, o.utility) for o in g.options]) for g in ann.goals] == [
        (2, [(20.0, 10.0), (40.0, 16.0)]), (4, [(90.0, 30.0)])]
    assert bob.cash_flows == [0.0, 0.0, 0.0] and len(bob.goals) == 1


def test_the_example_spec_prepares_with_its_clients_file() -> None:
    spec = tomllib.loads((EXAMPLES / "wealth_clients.toml").read_text())
    clients = wealth_job.prepare(spec, EXAMPLES).clients
    assert clients is not None and len(clients.names) == 20 == len(set(clients.names))


@pytest.mark.parametrize(("text", "words"), [
    (GOOD.replace(",utility\n", ",utility,risk\n"), "clients.csv: unknown column 'risk'"),
    ("client,initial_wealth,horizon,goal,year,cost\nAnn,100,4,car,2,20\n", "clients.csv: missing column 'utility'"),
    (GOOD.replace("Bob,50,", "Bob,fifty,"), "clients.csv, row 5, column 'initial_wealth': 'fifty' is not a finite"),
    (GOOD.replace("car,2,40,", "car,2,-40,"), "row 3, column 'cost': -40 is below 0"),
    (GOOD.replace("trip,1,", "trip,2027,"), "row 5, column 'year': 2027 is above 30 (years count from 0 (this year), "
                                            "not calendar years)"),
    (GOOD.replace("Bob,50,3,", "Bob,50,36,"), "row 5, column 'horizon': 36 is above 30 (horizons are in years"),
    (GOOD.replace("pot,4,90,", "pot,4,90000,"), "row 4, column 'cost': 90000 is over 100 times the client's wealth "
                                                "and contributions (110): are the costs and the wealth in the same unit"),
    (GOOD.replace("pot,4,", "pot,1,"), "row 4, column 'year': 1 comes after year 2 of the row before: list a "
                                       "client's goals in year order"),
    (GOOD.replace("trip,1,", "trip,4,"), "row 5, column 'year': 4 is after the client's horizon (3 years)"),
    (GOOD.replace("Ann,100,4,,,pot", "Ann,120,4,,,pot"), "row 4, column 'initial_wealth': 120 differs from the "
                                                         "client's first row (row 2"),
    (GOOD + "Ann,,,,,late,4,1,1\n", "row 6, column 'client': 'Ann' already had rows before row 2"),
    (GOOD.replace("car,2,40,16", "car,2,40,6"), "row 3, column 'utility': 6 at cost 40 is below 10"),
    (GOOD.replace("4,5,2,", "4,5,6,"), "row 2, column 'contribution_years': 6 is beyond the horizon (4 years)"),
    (GOOD.replace("Bob,50,3,", "Bob,50,2.5,"), "row 5, column 'horizon': '2.5' is not a whole number"),
    (GOOD.replace("Bob,50,3,,", "Bob,50,3,,2"), "row 5, column 'contribution_years': is used only with a "
                                                "contribution"),
])
def test_a_bad_clients_file_is_refused_naming_the_file_row_and_column(tmp_path: Path, text: str, words: str) -> None:
    error = assert_input_error(lambda: _prepare(tmp_path, text), field=FIELD)
    assert words in error.problem, error.problem


def test_one_client_or_many_not_both_nor_neither(tmp_path: Path) -> None:
    (tmp_path / "clients.csv").write_text(GOOD)
    problem = {"horizon": 2, "initial_wealth": 10.0}
    both = {"job": {"kind": "wealth"}, "clients": {"csv": "clients.csv"}, "problem": problem}
    assert_input_error(wealth_job.prepare, both, tmp_path, field="problem", words="not both")
    assert_input_error(wealth_job.prepare, {"job": {"kind": "wealth"}}, tmp_path, field="problem", words="required")


@pytest.mark.slow
def test_a_batch_plans_every_client_with_the_dp_where_it_fits(tmp_path: Path) -> None:
    job = _prepare(tmp_path, GOOD, evaluation={"paths": 500, "dp_max_states": 680})
    report = wealth_job.run_job(job)
    clients = report.clients.set_index("client")
    assert list(clients["dp_solved"]) == [False, True]  # Ann's grid is over 680 states, Bob's under
    assert np.isnan(clients.loc["Ann", "planner_vs_dp"]) and 0.9 < clients.loc["Bob", "planner_vs_dp"] <= 1.05
    assert report.plans.groupby("client").size().to_dict() == {"Ann": 5, "Bob": 4}  # years 0 .. horizon
    assert report.metrics["clients"] == 2 and report.metrics["clients_dp"] == 1
    assert list(report.comparison["policy"]) == ["dp", "planner", "funding_rule"]
    written = report.save(tmp_path / "run")
    assert pd.read_csv(written["plans"]).shape == report.plans.shape and "chart" not in written
    back = WealthReport.load(tmp_path / "run")
    for name in ("clients", "plans", "goals", "comparison"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(report, name), check_exact=True)
    assert back.plan is None and back.wealth_fan is None and back.metrics == report.metrics
