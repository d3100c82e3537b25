"""The wealth study's shape: settings in, no function below the job taking the whole job; policies scored on common paths."""

from __future__ import annotations

import numpy as np

from decisions.finance.wealth import WealthProblem, bench, study
from decisions.finance.wealth.rule import FundingRule, rule_policy
from decisions.finance.wealth.simulate import draw_normals, evaluate, mean_and_se, never_fund
from tests.helpers import takers_of


def test_no_function_of_the_study_or_the_bench_takes_the_whole_job() -> None:
    assert takers_of("WealthJob", study, bench) == []


def test_policies_are_scored_on_the_same_paths_in_the_given_order() -> None:
    problem = WealthProblem.parse({
        "horizon": 4, "initial_wealth": 100.0, "cash_flows": [5.0, 5.0, 0.0, 0.0],
        "goals": [{"year": 4, "options": [{"cost": 90.0, "utility": 30.0}]}],
    })
    normals = draw_normals(3, 400, problem.horizon)
    policies = {"never": never_fund(), "rule": rule_policy(problem, FundingRule())}
    paths, table = study.score_policies(problem, policies, normals)
    assert list(table["policy"]) == ["never", "rule"] and list(paths) == ["never", "rule"]
    figures = study.comparison_figures(table)
    assert list(figures) == ["expected_utility_never", "stderr_never", "expected_utility_rule", "stderr_rule"]
    assert figures["expected_utility_never"] == 0.0
    mean, se = mean_and_se(evaluate(problem, policies["rule"], normals=normals))
    assert (figures["expected_utility_rule"], figures["stderr_rule"]) == (mean, se) and mean > 0
    np.testing.assert_array_equal(paths["rule"].utility, evaluate(problem, policies["rule"], normals=normals))
