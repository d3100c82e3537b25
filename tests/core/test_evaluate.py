"""Tests for decisions.core.evaluate: hand-computed estimates and paired comparisons."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pytest

from decisions.core.evaluate import Z95, ValueEstimate, compare, control_variate, monte_carlo_value


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


def test_control_variate_keeps_the_mean_and_removes_the_explained_variance() -> None:
    rng = np.random.default_rng(0)
    control = rng.normal(size=20_000)  # known mean 0
    noise = rng.normal(scale=0.1, size=20_000)
    samples = 5.0 + 3.0 * control + noise
    fit = control_variate(samples, control)
    assert fit.coefficients == pytest.approx([3.0], abs=0.01)
    assert fit.adjusted.mean() == pytest.approx(5.0, abs=0.005)  # plain mean: 5 +- 0.02
    assert fit.variance_reduction == pytest.approx(np.var(samples) / np.var(noise), rel=0.02)  # ~900
    unrelated = control_variate(samples, rng.normal(size=(20_000, 2)))
    assert unrelated.variance_reduction == pytest.approx(1.0, abs=0.01)


def test_control_variate_refuses_mismatched_controls() -> None:
    with pytest.raises(ValueError, match="controls: expected shape"):
        control_variate(np.ones(5), np.ones(4))
    with pytest.raises(ValueError, match="controls: not all finite"):
        control_variate(np.ones(3), np.array([0.0, np.nan, 1.0]))


def test_compare_with_controls_adjusts_methods_and_their_paired_differences() -> None:
    rng = np.random.default_rng(1)
    shock = rng.normal(size=4_000)
    values = {"a": 10.0 + 4.0 * shock + rng.normal(size=4_000), "b": 9.0 + 2.0 * shock + rng.normal(size=4_000)}
    plain = compare(values, reference="b")
    table = compare(values, reference="b", controls={"a": shock, "b": shock})
    assert table.loc["a", "variance_reduction"] > 10 and table.loc["a", "diff_variance_reduction"] > 2
    assert table.loc["a", "diff_stderr"] < plain.loc["a", "diff_stderr"] / 1.4
    assert table.loc["a", "diff_mean"] == pytest.approx(1.0, abs=4 * table.loc["a", "diff_stderr"])
    assert table.loc["b", "diff_mean"] == 0.0 and table.loc["b", "diff_variance_reduction"] == 1.0
    only_a = compare(values, controls={"a": shock})
    assert only_a.loc["b", "variance_reduction"] == 1.0
    with pytest.raises(ValueError, match="controls: .*'c'"):
        compare(values, controls={"c": shock})
