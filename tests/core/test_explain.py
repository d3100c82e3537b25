"""Tests for decisions.core.explain: attributions, importance, sensitivity, surrogate rules, plots."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.text import Annotation

from decisions.core.explain import (
    LocalAttribution,
    expected_action,
    explain_decision,
    feature_gradients,
    fit_surrogate,
    gradient_x_input,
    ig_importance,
    integrated_gradients,
    make_baseline,
    permutation_importance,
    plot_attribution,
    plot_importance,
    plot_response_curve,
    plot_surrogate_tree,
    response_curve,
    sensitivity_summary,
)

NAMES = ["x0", "x1", "x2", "x3"]
W = np.array([3.0, -1.0, 0.0, 0.5])
B = 0.25


def linear(x: jax.Array) -> jax.Array:
    return x @ jnp.asarray(W, x.dtype) + B


@pytest.fixture(scope="module")
def obs() -> np.ndarray:
    return np.random.default_rng(0).uniform(0.0, 1.0, size=(120, 4))


# --- integrated gradients and gradient x input -------------------------------------------------


@pytest.mark.parametrize("method", ["trapezoid", "midpoint", "left", "right"])
def test_ig_of_linear_policy_is_weight_times_displacement(obs: np.ndarray, method: str) -> None:
    base = obs.mean(axis=0)
    attr = np.asarray(integrated_gradients(linear, obs[:10], base, steps=4, method=method))
    np.testing.assert_allclose(attr, W * (obs[:10] - base), atol=1e-5)
    single = np.asarray(integrated_gradients(linear, obs[3], base, steps=4, method=method))
    np.testing.assert_allclose(single, W * (obs[3] - base), atol=1e-5)


def test_gradient_x_input_of_linear_policy(obs: np.ndarray) -> None:
    np.testing.assert_allclose(np.asarray(gradient_x_input(linear, obs[:5])), W * obs[:5], atol=1e-6)
    np.testing.assert_allclose(np.asarray(gradient_x_input(linear, obs[0])), W * obs[0], atol=1e-6)


def test_explain_decision_linear_table_and_completeness(obs: np.ndarray) -> None:
    x = obs[7]
    local = explain_decision(linear, x, NAMES, observations=obs)
    assert isinstance(local, LocalAttribution)
    base = obs.mean(axis=0)
    assert local.action == pytest.approx(float(W @ x + B), abs=1e-5)
    assert local.baseline_action == pytest.approx(float(W @ base + B), abs=1e-5)
    assert abs(local.completeness_gap) < 1e-5
    t = local.table.set_index("feature")
    assert list(local.table.columns) == [
        "feature",
        "value",
        "baseline",
        "gradient",
        "attribution",
        "grad_x_input",
    ]
    np.testing.assert_allclose(t.loc[NAMES, "attribution"], W * (x - base), atol=1e-5)
    np.testing.assert_allclose(t.loc[NAMES, "grad_x_input"], W * x, atol=1e-5)
    np.testing.assert_allclose(t.loc[NAMES, "gradient"], W, atol=1e-6)
    np.testing.assert_allclose(t.loc[NAMES, "value"], x, atol=1e-6)
    # Sorted by |attribution|, largest first.
    mags = local.table["attribution"].abs().to_numpy()
    assert np.all(mags[:-1] >= mags[1:])


def test_completeness_of_nonlinear_policy_and_explicit_baseline(obs: np.ndarray) -> None:
    key = jax.random.PRNGKey(1)
    w1 = jax.random.normal(key, (4, 8))
    w2 = jax.random.normal(jax.random.fold_in(key, 1), (8,))

    def mlp(x: jax.Array) -> jax.Array:
        return jnp.tanh(jnp.tanh(x @ w1) @ w2)

    local = explain_decision(mlp, obs[2], NAMES, baseline=np.zeros(4), steps=64)
    assert local.baseline_action == pytest.approx(0.0, abs=1e-7)
    assert local.action == pytest.approx(float(mlp(jnp.asarray(obs[2], jnp.float32))), abs=1e-6)
    assert local.relative_gap < 1e-3
    assert local.table["attribution"].sum() == pytest.approx(local.action - local.baseline_action, abs=1e-3)


def test_vector_action_needs_output_and_explains_the_chosen_component(obs: np.ndarray) -> None:
    def two(x: jax.Array) -> jax.Array:
        return jnp.stack([linear(x), 2.0 * x[1]])

    with pytest.raises(ValueError, match=r"^output: "):
        integrated_gradients(two, obs[0], obs.mean(0))
    attr = np.asarray(integrated_gradients(two, obs[0], obs.mean(0), output=1))
    np.testing.assert_allclose(attr, [0.0, 2.0 * (obs[0, 1] - obs[:, 1].mean()), 0.0, 0.0], atol=1e-5)
    last = np.asarray(integrated_gradients(two, obs[0], obs.mean(0), output=-1))
    np.testing.assert_allclose(last, attr, atol=1e-7)


def test_make_baseline_kinds(obs: np.ndarray) -> None:
    np.testing.assert_allclose(np.asarray(make_baseline(obs, "mean")), obs.mean(0), atol=1e-6)
    np.testing.assert_allclose(np.asarray(make_baseline(obs, "median")), np.median(obs, 0), atol=1e-6)
    np.testing.assert_array_equal(np.asarray(make_baseline(obs, "zeros")), np.zeros(4))
    local = explain_decision(linear, obs[0], NAMES, baseline="zeros", observations=obs)
    np.testing.assert_allclose(
        local.table.set_index("feature").loc[NAMES, "attribution"], W * obs[0], atol=1e-5
    )


# --- global importance -------------------------------------------------------------------------


def test_ig_importance_ignored_feature_zero_and_dominant_first(obs: np.ndarray) -> None:
    imp = ig_importance(linear, obs, NAMES, steps=8)
    assert list(imp.columns) == ["feature", "importance", "std", "mean_attribution"]
    assert imp["feature"].iloc[0] == "x0"
    assert imp.set_index("feature").loc["x2", "importance"] == pytest.approx(0.0, abs=1e-9)
    expected = np.abs(W * (obs - obs.mean(0))).mean(0)
    np.testing.assert_allclose(imp.set_index("feature").loc[NAMES, "importance"], expected, rtol=1e-4)
    assert imp["importance"].is_monotonic_decreasing


def test_permutation_importance_ignored_feature_zero_and_dominant_first(obs: np.ndarray) -> None:
    imp = permutation_importance(linear, obs, NAMES, key=jax.random.PRNGKey(3), n_repeats=4)
    assert list(imp.columns) == ["feature", "importance", "std"]
    by = imp.set_index("feature")
    assert by.loc["x2", "importance"] == 0.0 and by.loc["x2", "std"] == 0.0
    assert imp["feature"].iloc[0] == "x0"
    assert by.loc["x0", "importance"] > by.loc["x1", "importance"] > by.loc["x3", "importance"] > 0.0
    assert (imp["std"] >= 0).all()


def test_permutation_importance_is_reproducible_with_the_key(obs: np.ndarray) -> None:
    a = permutation_importance(linear, obs, NAMES, key=7, n_repeats=3)
    b = permutation_importance(linear, obs, NAMES, key=7, n_repeats=3)
    c = permutation_importance(linear, obs, NAMES, key=8, n_repeats=3)
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["importance"], c["importance"])


def test_permutation_score_drop(obs: np.ndarray) -> None:
    def score(o: np.ndarray, actions: np.ndarray) -> float:  # negative error to the original actions
        return -float(np.mean(np.abs(actions - (o @ W + B))))

    imp = permutation_importance(linear, obs, NAMES, key=0, n_repeats=3, score_fn=score).set_index("feature")
    # The score drop equals the mean absolute action change here, by construction.
    np.testing.assert_allclose(imp["score_drop"], imp["importance"], rtol=1e-5, atol=1e-6)
    assert imp.loc["x2", "score_drop"] == 0.0


def test_permutation_discrete_counts_changed_decisions(obs: np.ndarray) -> None:
    def logits(x: jax.Array) -> jax.Array:
        return jnp.stack([x[0], 1.0 - x[0], 0.0 * x[2]])

    imp = permutation_importance(logits, obs, NAMES, key=1, n_repeats=3, discrete=True).set_index("feature")
    assert imp.loc["x1", "importance"] == 0.0
    assert 0.2 < imp.loc["x0", "importance"] <= 1.0


# --- groups -----------------------------------------------------------------------------------


def test_groups_aggregate_ig_and_local_attributions(obs: np.ndarray) -> None:
    groups = {"g01": ["x0", "x1"]}
    imp = ig_importance(linear, obs, NAMES, groups=groups, steps=4).set_index("feature")
    assert sorted(imp.index) == ["g01", "x2", "x3"]
    d = obs - obs.mean(0)
    signed = W[0] * d[:, 0] + W[1] * d[:, 1]
    assert imp.loc["g01", "importance"] == pytest.approx(np.abs(signed).mean(), rel=1e-4)
    assert imp.loc["g01", "mean_attribution"] == pytest.approx(signed.mean(), abs=1e-5)

    local = explain_decision(linear, obs[5], NAMES, observations=obs, groups=groups)
    t = local.table.set_index("feature")
    assert t.loc["g01", "attribution"] == pytest.approx(W[0] * d[5, 0] + W[1] * d[5, 1], abs=1e-5)
    assert np.isnan(t.loc["g01", "value"]) and t.loc["x3", "value"] == pytest.approx(obs[5, 3])
    assert abs(local.completeness_gap) < 1e-5


def test_group_permutation_is_joint(obs: np.ndarray) -> None:
    x = obs.copy()
    x[:, 1] = x[:, 0]  # x1 duplicates x0 and the policy uses x0 - x1 (always 0 on this data)

    def diff(v: jax.Array) -> jax.Array:
        return v[0] - v[1] + 0.0 * v[2]

    single = permutation_importance(diff, x, NAMES, key=2).set_index("feature")
    joint = permutation_importance(diff, x, NAMES, key=2, groups={"pair": ["x0", "x1"]}).set_index("feature")
    assert single.loc["x0", "importance"] > 0.1
    assert joint.loc["pair", "importance"] == 0.0


def test_group_with_unused_feature_matches_used_feature(obs: np.ndarray) -> None:
    alone = permutation_importance(linear, obs, NAMES, key=5).set_index("feature")
    grouped = permutation_importance(linear, obs, NAMES, key=5, groups={"g": ["x0", "x2"]}).set_index(
        "feature"
    )
    assert grouped.loc["g", "importance"] == pytest.approx(alone.loc["x0", "importance"], rel=1e-6)
    assert grouped.loc["x3", "importance"] == pytest.approx(alone.loc["x3", "importance"], rel=1e-6)


# --- sensitivity --------------------------------------------------------------------------------


def curved(x: jax.Array) -> jax.Array:
    return jnp.sin(x[0]) * x[1] + x[2] ** 2


def test_feature_gradients_match_analytic_derivative(obs: np.ndarray) -> None:
    g = feature_gradients(curved, obs[:6], NAMES, features=["x0", "x2", "x3"])
    assert list(g.columns) == ["obs_index", "feature", "value", "gradient"] and len(g) == 18
    wide = g.pivot(index="obs_index", columns="feature", values="gradient")
    np.testing.assert_allclose(wide["x0"], np.cos(obs[:6, 0]) * obs[:6, 1], atol=1e-5)
    np.testing.assert_allclose(wide["x2"], 2.0 * obs[:6, 2], atol=1e-5)
    np.testing.assert_allclose(wide["x3"], 0.0, atol=1e-7)
    summary = sensitivity_summary(g)
    assert summary["feature"].tolist()[-1] == "x3"
    assert summary.set_index("feature").loc["x2", "mean_gradient"] == pytest.approx(
        2.0 * obs[:6, 2].mean(), 1e-5
    )


def test_response_curve_values(obs: np.ndarray) -> None:
    grid = np.linspace(-1.0, 1.0, 5)
    c = response_curve(curved, obs[:3], NAMES, "x2", values=grid)
    assert list(c.columns) == ["obs_index", "feature", "value", "action"] and len(c) == 15
    for i in range(3):
        got = c[c["obs_index"] == i]["action"].to_numpy()
        np.testing.assert_allclose(got, np.sin(obs[i, 0]) * obs[i, 1] + grid**2, atol=1e-5)
    default = response_curve(curved, obs[0], NAMES, "x1", observations=obs, n_points=7)
    assert len(default) == 7
    assert default["value"].min() == pytest.approx(obs[:, 1].min()) and default[
        "value"
    ].max() == pytest.approx(obs[:, 1].max())


# --- surrogate tree -----------------------------------------------------------------------------


def threshold(x: jax.Array) -> jax.Array:
    return jnp.where(x[0] > 0.5, 1.0, -1.0)


def test_surrogate_of_threshold_policy_is_exact(obs: np.ndarray) -> None:
    tree = fit_surrogate(
        threshold, obs, NAMES, max_depth=4, describe=lambda a: "charge" if a > 0 else "discharge"
    )
    f = tree.fidelity
    assert (f.r2, f.agreement, f.within_tolerance) == (1.0, 1.0, 1.0)
    assert f.n_train + f.n_test == len(obs) and f.n_test == 30
    assert "x0" in tree.rules and tree.model.get_depth() == 1
    hi = np.array([0.9, 0.1, 0.1, 0.1])
    lo = np.array([0.1, 0.9, 0.9, 0.9])
    path = tree.decision_path(hi)
    assert path[0].startswith("x0 > 0.") and "(is 0.9)" in path[0]
    assert path[-1].startswith("-> charge")
    assert tree.explain(lo).startswith("x0 <= 0.") and tree.explain(lo).endswith("-> discharge")
    np.testing.assert_array_equal(tree.predict(np.stack([hi, lo])), [1.0, -1.0])


def test_surrogate_discrete_logits_and_level_names(obs: np.ndarray) -> None:
    def logits(x: jax.Array) -> jax.Array:  # level 2 if x1 > 0.6, else level 0
        return jnp.stack([0.6 - x[1], jnp.zeros(()) - 1.0, x[1] - 0.6])

    tree = fit_surrogate(logits, obs, NAMES, discrete=True, describe=["idle", "charge", "discharge"])
    assert tree.discrete and tree.fidelity.agreement == 1.0 and np.isnan(tree.fidelity.r2)
    assert "discharge" in tree.rules and "idle" in tree.rules
    assert tree.explain(np.array([0.2, 0.9, 0.2, 0.2])).startswith("x1 > 0.")
    assert tree.explain(np.array([0.2, 0.9, 0.2, 0.2])).endswith("-> discharge")


def test_surrogate_merges_conditions_on_one_feature() -> None:
    rng = np.random.default_rng(4)
    x = np.stack([np.linspace(0.0, 1.0, 201), rng.uniform(0.0, 1.0, 201)], axis=1)

    def band(v: jax.Array) -> jax.Array:
        return jnp.where((v[0] > 0.3) & (v[0] <= 0.7), 1.0, 0.0) + 0.0 * v[1]

    tree = fit_surrogate(band, x, ["p", "q"], max_depth=3, min_samples_leaf=1)
    lines = tree.decision_path(np.array([0.5, 0.5]), show_values=False)
    assert len(lines) == 2 and lines[0].startswith("0.") and "< p <= 0." in lines[0]
    assert lines[1] == "-> action 1"


# --- plots --------------------------------------------------------------------------------------


def test_plot_importance_bars(obs: np.ndarray) -> None:
    imp = ig_importance(linear, obs, NAMES, steps=4)
    fig = plot_importance(imp)
    assert isinstance(fig, Figure) and len(fig.axes[0].patches) == 4
    assert len(plot_importance(imp, top=2).axes[0].patches) == 2
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels[-1] == "x0"  # largest on top


def test_plot_attribution_waterfall(obs: np.ndarray) -> None:
    local = explain_decision(linear, obs[1], NAMES, observations=obs)
    fig = plot_attribution(local, top=2)
    assert isinstance(fig, Figure) and len(fig.axes[0].patches) == 3  # two features + "other"
    assert len(plot_attribution(local, top=10).axes[0].patches) == 4
    ends = [p.get_x() + p.get_width() for p in plot_attribution(local).axes[0].patches]
    assert ends[-1] == pytest.approx(local.action, abs=1e-5)  # the waterfall lands on the action


def test_plot_response_curve_lines(obs: np.ndarray) -> None:
    one = plot_response_curve(response_curve(curved, obs[0], NAMES, "x0", observations=obs))
    many = plot_response_curve(response_curve(curved, obs[:3], NAMES, "x0"))
    assert isinstance(one, Figure) and len(one.axes[0].lines) == 1
    assert len(many.axes[0].lines) == 4  # three observations and their mean


def test_plot_surrogate_tree(obs: np.ndarray) -> None:
    tree = fit_surrogate(threshold, obs, NAMES)
    fig = plot_surrogate_tree(tree)
    anns = [a for a in fig.axes[0].get_children() if isinstance(a, Annotation) and "samples" in a.get_text()]
    assert isinstance(fig, Figure) and len(anns) == tree.model.tree_.node_count == 3  # one box per node
    assert any("x0" in a.get_text() for a in anns)


# --- discrete helper ----------------------------------------------------------------------------


def test_expected_action_is_differentiable_expected_level(obs: np.ndarray) -> None:
    def logits(x: jax.Array) -> jax.Array:
        return jnp.stack([x[0], 2.0 * x[1], -x[3]])

    levels = np.array([-1.0, 0.0, 1.0])
    f = expected_action(logits, levels)
    x = jnp.asarray(obs[4], jnp.float32)
    p = jax.nn.softmax(logits(x))
    assert float(f(x)) == pytest.approx(float(p @ jnp.asarray(levels, jnp.float32)), abs=1e-6)
    local = explain_decision(f, obs[4], NAMES, observations=obs)
    assert local.relative_gap < 1e-3
    assert local.table.set_index("feature").loc["x2", "attribution"] == 0.0


# --- bad input ----------------------------------------------------------------------------------


def _one_line_error(excinfo: pytest.ExceptionInfo[ValueError], arg: str) -> None:
    msg = str(excinfo.value)
    assert msg.startswith(f"{arg}: ") and "\n" not in msg


def test_feature_names_length_mismatch(obs: np.ndarray) -> None:
    for call in (
        lambda: ig_importance(linear, obs, NAMES[:3]),
        lambda: permutation_importance(linear, obs, NAMES + ["x4"]),
        lambda: explain_decision(linear, obs[0], NAMES[:2], observations=obs),
        lambda: fit_surrogate(threshold, obs, NAMES[:3]),
        lambda: feature_gradients(linear, obs, NAMES[:3]),
    ):
        with pytest.raises(ValueError) as excinfo:
            call()
        _one_line_error(excinfo, "feature_names")


def test_bad_groups(obs: np.ndarray) -> None:
    cases = [
        {"g": ["x0", "nope"]},
        {"g": []},
        {"a": ["x0"], "b": ["x0", "x1"]},
        {"x3": ["x0", "x1"]},
    ]
    for groups in cases:
        with pytest.raises(ValueError) as excinfo:
            ig_importance(linear, obs, NAMES, groups=groups)
        _one_line_error(excinfo, "groups")
    with pytest.raises(ValueError, match="unknown feature 'nope'"):
        permutation_importance(linear, obs, NAMES, groups={"g": ["nope"]})


def test_empty_and_malformed_batches(obs: np.ndarray) -> None:
    empty = np.zeros((0, 4))
    for call in (
        lambda: ig_importance(linear, empty, NAMES),
        lambda: permutation_importance(linear, empty, NAMES),
        lambda: fit_surrogate(threshold, empty, NAMES),
        lambda: ig_importance(linear, obs[0], NAMES),
        lambda: permutation_importance(linear, obs[:1], NAMES),
    ):
        with pytest.raises(ValueError) as excinfo:
            call()
        _one_line_error(excinfo, "observations")
    with pytest.raises(ValueError, match="empty batch"):
        ig_importance(linear, empty, NAMES)


def test_other_bad_arguments(obs: np.ndarray) -> None:
    cases = [
        ("baseline", lambda: explain_decision(linear, obs[0], NAMES)),
        ("baseline", lambda: explain_decision(linear, obs[0], NAMES, baseline=np.zeros(3))),
        ("feature", lambda: response_curve(linear, obs[0], NAMES, "nope", observations=obs)),
        ("features", lambda: feature_gradients(linear, obs, NAMES, features=["x9"])),
        ("action_fn", lambda: ig_importance(lambda x: jnp.argmax(x), obs, NAMES)),
        ("method", lambda: integrated_gradients(linear, obs[0], obs[1], method="simpson")),  # type: ignore[arg-type]
        ("steps", lambda: integrated_gradients(linear, obs[0], obs[1], steps=0)),
        ("test_fraction", lambda: fit_surrogate(threshold, obs, NAMES, test_fraction=1.0)),
        ("feature_names", lambda: ig_importance(linear, obs, ["a", "a", "b", "c"])),
        ("observations", lambda: ig_importance(linear, np.full((3, 4), np.nan), NAMES)),
    ]
    for arg, call in cases:
        with pytest.raises(ValueError) as excinfo:
            call()
        _one_line_error(excinfo, arg)
