"""``decisions bench wealth`` figures on a small path budget."""

from __future__ import annotations

import pytest

from decisions.finance.wealth.bench import run_bench


def test_bench_reports_dp_and_rule_figures() -> None:
    seen: list[str] = []
    figures = run_bench(lambda task, done, total: seen.append(task), paths=2_000)
    assert figures["dp_single_goal_value"] == pytest.approx(0.666, abs=0.01)
    assert figures["dp_single_goal_states"] > 100 and figures["dp_single_goal_ms"] > 0
    assert figures["dp_multi_goal_value"] > figures["rule_mc_multi_goal"] > 0
    assert 0.8 < figures["rule_vs_dp_multi_goal"] < 1.0
    assert {"DP", "funding-ratio rule"} <= set(seen)
