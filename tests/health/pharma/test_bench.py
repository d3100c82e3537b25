"""The pharma bench's finite-difference figure at the trained (smoke) operating point: a real
float64 comparison, made after the run compiled the chain in float32, so small but never 0."""

from __future__ import annotations

import pytest

from tests.smoke_runs import smoke_bench

pytestmark = pytest.mark.smoke_runs("pharma")  # the conformance kit's smoke bench, run once per process


def test_fd_figure_is_a_real_float64_comparison_at_the_trained_point() -> None:
    figures, _ = smoke_bench("pharma")
    assert 0.0 < figures["fd_max_rel_err"] < 1e-4
