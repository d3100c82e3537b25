"""The pharma bench's finite-difference figure at the trained (smoke) operating point: a real
float64 comparison, made after the run compiled the chain in float32, so small but never 0."""

from __future__ import annotations

import pytest

from tests.smoke_runs import smoke_bench

pytestmark = pytest.mark.smoke_runs("pharma")  # the conformance kit's smoke bench, run once per process


def test_fd_figure_is_a_real_float64_comparison_at_the_trained_point() -> None:
    figures, _ = smoke_bench("pharma")
    assert 0.0 < figures["fd_max_rel_err"] < 1e-4


def test_the_jacobian_speed_is_given_as_ratios_measured_in_the_same_run() -> None:
    figures, _ = smoke_bench("pharma")
    assert figures["chain_eval_ms"] > 0 and figures["pharma_sens_ms"] > 0
    # a Jacobian (one forward and six reverse sweeps) costs more than one run of the chain
    assert figures["jacobian_over_evaluation"] > 1.0
    assert figures["bump_over_jacobian"] > 0
    assert figures["bump_method"] in {"loop_of_jitted_calls", "jitted_vmap_8"}
