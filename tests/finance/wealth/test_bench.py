"""``decisions bench wealth`` figures on its smoke budget (the full bench runs 64 held-out problems)."""

from __future__ import annotations

import pytest

from decisions.finance.wealth.bench import tuned_rule
from decisions.finance.wealth.rule import FundingRule
from tests.smoke_runs import smoke_bench

pytestmark = pytest.mark.smoke_runs("wealth")


def test_bench_reports_dp_rule_and_planner_figures() -> None:
    """The bench at its smoke budget (500 paths, one held-out single-goal problem): the figures
    that do not depend on the budget are exact, the others in their plausible ranges."""
    figures, seen = smoke_bench("wealth")
    assert figures["dp_single_goal_value"] == pytest.approx(0.666, abs=0.01)
    assert figures["dp_single_goal_states"] > 100 and figures["dp_single_goal_ms"] > 0
    assert figures["dp_multi_goal_value"] > figures["rule_mc_multi_goal"] > 0
    assert figures["dp_policy_mc_multi_goal"] == pytest.approx(figures["dp_multi_goal_value"], abs=4 * figures["dp_policy_mc_multi_goal_stderr"])
    assert 0.8 < figures["rule_vs_dp_multi_goal"] < 1.0
    assert (figures["rule_margin"], figures["rule_r1"], figures["rule_r2"]) == (
        FundingRule.margin, FundingRule.r1, FundingRule.r2,
    )
    assert figures["held_out_problems"] == 1 and figures["held_out_families"] == 1
    assert figures["held_out_in_training"] == 0 and figures["planner_problems"] > 1000
    assert 0.8 < figures["metarl_mean_ratio"] < 1.1 and figures["metarl_min_ratio"] <= figures["metarl_mean_ratio"]
    assert figures["metarl_plan_ms"] > 0 and figures["dp_ms_same_problems"] > 0
    assert {"family_single_goal_planner_vs_dp_mean", "family_single_goal_planner_vs_rule"} <= set(figures)
    assert figures["regime_shift_problems"] == 1 and 0.5 < figures["regime_shift_mean_ratio"] < 1.2
    assert figures["beyond_problems"] == 2 and figures["beyond_planner_vs_glide_greedy"] > 0
    assert {"DP", "funding-ratio rule", "held-out problems"} <= set(seen)


@pytest.mark.slow  # tunes the rule on every family's training problems: minutes
def test_the_rule_defaults_are_the_tuned_parameters() -> None:
    """``FundingRule``'s defaults are what ``decisions bench wealth`` tunes (and prints)."""
    rule, _ = tuned_rule()
    assert (rule.margin, rule.r1, rule.r2) == (FundingRule.margin, FundingRule.r1, FundingRule.r2)
