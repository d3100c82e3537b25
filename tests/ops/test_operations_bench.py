"""The platform's bench (``decisions bench platform``) at a tiny budget, on one domain."""

from __future__ import annotations

from decisions.platform import operations_bench


def test_the_platform_bench_times_one_domain_at_a_tiny_budget() -> None:
    figures = operations_bench.run_bench(states=20, repeats=3, batch_repeats=2, domains=("chronic",), drift=False)
    assert figures["domains"] == "chronic" and figures["states"] == 20 and figures["batch_repeats"] == 2
    assert 0 < figures["chronic_decide_p50_ms"] <= figures["chronic_decide_p99_ms"] == figures["decide_p99_ms"]
    assert figures["chronic_decide_states_per_s"] > 0 and figures["chronic_decide_only_states_per_s"] > 0
