"""Tests for decisions.core.evaluate: hand-computed estimates and paired comparisons."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.evaluate import Z95, ValueEstimate, compare, monte_carlo_value


def test_z95_is_the_normal_quantile() -> None:
    assert Z95 == pytest.approx(1.959963984540054, abs=1e-12)


def test_value_estimate_hand_computed() -> None:
    # [1, 2, 3, 4]: mean 2.5; squared deviations 2.25+0.25+0.25+2.25 = 5; var(ddof=1) = 5/3.
    est = monte_carlo_value([1.0, 2.0, 3.0, 4.0])
    stderr = math.sqrt(5.0 / 3.0) / 2.0  # 0.6454972...
    assert est.n == 4
    assert est.mean == 2.5
    assert est.stderr == pytest.approx(stderr, rel=1e-12)
    assert est.ci95_low == pytest.approx(2.5 - 1.959963984540054 * stderr, rel=1e-12)
    assert est.ci95_high == pytest.approx(2.5 + 1.959963984540054 * stderr, rel=1e-12)
    assert est.ci95_low == pytest.approx(1.234849, abs=1e-6)
    assert est.ci95_high == pytest.approx(3.765151, abs=1e-6)
    assert "n=4" in str(est)


def test_value_estimate_accepts_jax_arrays_and_equals_classmethod() -> None:
    x = jnp.array([0.5, 1.5, 4.0])
    assert monte_carlo_value(x) == ValueEstimate.from_samples(np.asarray(x))


def test_single_sample_has_nan_stderr() -> None:
    est = ValueEstimate.from_samples([3.0])
    assert est.mean == 3.0 and est.n == 1
    assert math.isnan(est.stderr) and math.isnan(est.ci95_low)


@pytest.mark.parametrize(
    ("samples", "message"),
    [([], "no samples"), ([[1.0, 2.0]], "1-D"), ([1.0, float("nan"), 2.0], "1 of 3 values are not finite")],
)
def test_bad_samples_raise(samples, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        monte_carlo_value(samples)


def test_ci_covers_true_mean_about_95_percent() -> None:
    rng = np.random.default_rng(0)
    draws = rng.normal(loc=1.0, scale=2.0, size=(1000, 400))
    covered = [(e := ValueEstimate.from_samples(row)).ci95_low <= 1.0 <= e.ci95_high for row in draws]
    assert 0.93 <= np.mean(covered) <= 0.97


def test_compare_hand_computed_paired_difference() -> None:
    values = {"policy": [1.0, 2.0, 3.0, 4.0], "baseline": [2.0, 2.0, 4.0, 4.0]}
    table = compare(values, reference="baseline")
    assert list(table.index) == ["policy", "baseline"]
    assert table.index.name == "method"
    assert list(table.columns) == [
        "n",
        "mean",
        "stderr",
        "ci95_low",
        "ci95_high",
        "ratio_to_reference",
        "diff_mean",
        "diff_stderr",
    ]
    pol, base = table.loc["policy"], table.loc["baseline"]
    assert pol["mean"] == 2.5 and base["mean"] == 3.0
    assert pol["ratio_to_reference"] == pytest.approx(2.5 / 3.0)
    # Per-path differences [-1, 0, -1, 0]: mean -0.5, var(ddof=1) = 1/3, stderr = sqrt(1/3) / 2.
    assert pol["diff_mean"] == pytest.approx(-0.5)
    assert pol["diff_stderr"] == pytest.approx(math.sqrt(1.0 / 3.0) / 2.0)
    assert base["ratio_to_reference"] == 1.0
    assert base["diff_mean"] == 0.0 and base["diff_stderr"] == 0.0
    # Marginal columns agree with monte_carlo_value.
    est = monte_carlo_value(values["baseline"])
    assert base["stderr"] == pytest.approx(est.stderr) and base["ci95_high"] == pytest.approx(est.ci95_high)


def test_paired_stderr_smaller_than_unpaired_on_common_paths() -> None:
    rng = np.random.default_rng(1)
    common = rng.normal(size=2000) * 10.0  # shared scenario noise dominates
    values = {"a": common + 1.0 + 0.1 * rng.normal(size=2000), "b": common}
    row = compare(values, reference="b").loc["a"]
    unpaired = math.hypot(row["stderr"], compare(values).loc["b", "stderr"])
    assert row["diff_stderr"] < unpaired / 20
    assert abs(row["diff_mean"] - 1.0) < 4 * row["diff_stderr"]


def test_compare_without_reference_has_only_marginal_columns() -> None:
    table = compare({"x": np.arange(5.0)})
    assert list(table.columns) == ["n", "mean", "stderr", "ci95_low", "ci95_high"]
    assert table.loc["x", "mean"] == 2.0 and table.loc["x", "n"] == 5


def test_ratio_is_nan_for_zero_reference_mean() -> None:
    table = compare({"a": [1.0, 2.0], "ref": [-1.0, 1.0]}, reference="ref")
    assert math.isnan(table.loc["a", "ratio_to_reference"])


def test_compare_errors() -> None:
    with pytest.raises(ValueError, match="no methods"):
        compare({})
    with pytest.raises(ValueError, match="common paths"):
        compare({"a": [1.0, 2.0], "b": [1.0, 2.0, 3.0]})
    with pytest.raises(ValueError, match="reference: 'c'"):
        compare({"a": [1.0, 2.0], "b": [1.0, 2.0]}, reference="c")
    with pytest.raises(ValueError, match="^b: 1 of 2"):
        compare({"a": [1.0, 2.0], "b": [1.0, float("inf")]})
