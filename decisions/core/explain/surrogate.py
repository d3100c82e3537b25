"""A shallow decision tree that imitates the policy on visited states: global rules, and the path
of one observation as the reason for that decision, reported with the tree's fidelity on
held-out states.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import numpy as np
from numpy.typing import ArrayLike
from sklearn.metrics import r2_score
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor, export_text

from decisions.core.explain._inputs import (
    ActionFn,
    action_shape,
    as_observation,
    as_observations,
    check_feature_names,
    check_output,
    policy_actions,
    scalar_fn,
)
from decisions.errors import InputError

Describe = Callable[[float], str]


@dataclass(frozen=True)
class SurrogateFidelity:
    """How well the tree reproduces the policy on held-out states."""

    # R^2 of the tree's action against the policy's (continuous; NaN for discrete or < 2 test states).
    r2: float
    agreement: float
    """Fraction of held-out states with the same decision: the same bin of the action (continuous,
    default bins: negative / idle within the deadband / positive) or the same level (discrete)."""
    # Fraction with ``|tree - policy| <= tolerance`` (continuous; NaN for discrete).
    within_tolerance: float
    n_train: int
    n_test: int


@dataclass(frozen=True)
class SurrogateTree:
    """A fitted surrogate tree with its feature names, fidelity and action wording."""

    model: DecisionTreeRegressor | DecisionTreeClassifier
    feature_names: tuple[str, ...]
    discrete: bool
    fidelity: SurrogateFidelity
    # Wording of an action value (continuous) or level index (discrete), e.g. ``"discharge 0.8"``.
    describe: Describe

    @property
    def rules(self) -> str:
        """All rules of the tree as indented text (``sklearn.tree.export_text``)."""
        kwargs = {}
        if self.discrete:
            kwargs["class_names"] = [self.describe(int(c)) for c in self.model.classes_]
        return export_text(self.model, feature_names=list(self.feature_names), decimals=3, **kwargs)

    def predict(self, observations: ArrayLike) -> np.ndarray:
        """The tree's action for a batch ``(N, F)`` (continuous values or level indices)."""
        obs = np.asarray(as_observations(observations), dtype=np.float64)
        if obs.shape[1] != len(self.feature_names):
            raise InputError(
                "observations", f"have {obs.shape[1]} features, the tree uses {len(self.feature_names)}"
            )
        return self.model.predict(obs)

    def decision_path(self, x: ArrayLike, *, show_values: bool = True) -> list[str]:
        """The rule lines leading the tree to its action at one observation ``(F,)``, one merged
        interval per feature then ``-> <action>``; ``show_values`` adds the observation's values
        and the leaf's support, e.g. ``["soc <= 0.3 (is 0.21)", "-> discharge 0.8 (leaf of 40 states)"]``."""
        xv = np.asarray(as_observation(x, len(self.feature_names), "x"), dtype=np.float64)
        nodes = self.model.decision_path(xv[None]).indices
        bounds = _path_bounds(self.model.tree_, nodes)
        lines = []
        for f, (lo, hi) in bounds.items():
            text = _condition(self.feature_names[f], lo, hi)
            lines.append(f"{text} (is {xv[f]:.4g})" if show_values else text)
        leaf = nodes[-1]
        pred = self.model.predict(xv[None])[0]
        action = self.describe(int(pred) if self.discrete else float(pred))
        support = int(self.model.tree_.n_node_samples[leaf])
        lines.append(f"-> {action} (leaf of {support} states)" if show_values else f"-> {action}")
        return lines

    def explain(self, x: ArrayLike) -> str:
        """One-line reason, e.g. ``price_6h > 0.45 and soc <= 0.3 -> discharge 0.8``."""
        lines = self.decision_path(x, show_values=False)
        conditions = " and ".join(lines[:-1]) or "always"
        return f"{conditions} {lines[-1]}"


def _path_bounds(tree: object, nodes: np.ndarray) -> dict[int, tuple[float | None, float | None]]:
    """Merge the tests along a root-to-leaf path into ``feature -> (lower, upper)`` (``lower < x <= upper``)."""
    bounds: dict[int, tuple[float | None, float | None]] = {}
    for node, child in zip(nodes[:-1], nodes[1:], strict=True):
        f, thr = int(tree.feature[node]), float(tree.threshold[node])  # type: ignore[attr-defined]
        lo, hi = bounds.get(f, (None, None))
        if child == tree.children_left[node]:  # type: ignore[attr-defined]
            hi = thr if hi is None else min(hi, thr)
        else:
            lo = thr if lo is None else max(lo, thr)
        bounds[f] = (lo, hi)
    return bounds


def _condition(name: str, lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f"{lo:.4g} < {name} <= {hi:.4g}"
    if hi is not None:
        return f"{name} <= {hi:.4g}"
    return f"{name} > {lo:.4g}"


def _describer(describe: Describe | Sequence[str] | None, discrete: bool) -> Describe:
    if callable(describe):
        return describe
    if describe is None:
        return (lambda k: f"action {int(k)}") if discrete else (lambda a: f"action {a:.3g}")
    if not discrete:
        raise InputError("describe", "a list of level names needs discrete=True; pass a function instead")
    names = [str(n) for n in describe]
    return lambda k: names[int(k)] if 0 <= int(k) < len(names) else f"action {int(k)}"


def _policy_targets(action_fn: ActionFn, obs: jax.Array, discrete: bool, output: int | None) -> np.ndarray:
    """Continuous: the (selected) scalar action. Discrete: argmax of a vector, else the rounded scalar."""
    if discrete:
        out = action_shape(action_fn, obs[0])
        acts = np.asarray(policy_actions(action_fn, obs))
        labels = np.argmax(acts, axis=-1) if out.shape and out.shape[0] > 1 else np.rint(acts.reshape(-1))
        return labels.astype(np.int64)
    sel = check_output(action_fn, obs[0], output, differentiable=False)
    return np.asarray(jax.jit(jax.vmap(scalar_fn(action_fn, sel)))(obs), dtype=np.float64)


def fit_surrogate(
    action_fn: ActionFn,
    observations: ArrayLike,
    feature_names: Sequence[str],
    *,
    discrete: bool = False,
    max_depth: int = 5,
    min_samples_leaf: int = 5,
    test_fraction: float = 0.25,
    seed: int = 0,
    bins: Sequence[float] | None = None,
    deadband: float = 0.05,
    tolerance: float = 0.1,
    output: int | None = None,
    describe: Describe | Sequence[str] | None = None,
) -> SurrogateTree:
    """Fit a shallow decision tree to the policy's actions on visited states.

    Args:
        discrete: Classifier on levels instead of a regressor on the action value.
        max_depth: Tree depth (shallow trees are readable; 4-6 is typical).
        min_samples_leaf: Smallest leaf, so no rule rests on a handful of states.
        test_fraction: Share of states held out for the fidelity, in (0, 1).
        seed: Seed of the train/test split and the tree.
        bins: Bin edges of the continuous action for ``agreement``; default ``(-deadband, deadband)``,
            i.e. the sign of the action with an idle zone.
        deadband: Half-width of the idle bin in the default ``bins``.
        tolerance: Absolute tolerance for ``within_tolerance``.
        describe: Wording of an action: a function of the value (continuous) or level (discrete),
            or, for discrete, a list of level names.
    """
    obs = as_observations(observations)
    names = check_feature_names(feature_names, obs.shape[1])
    if obs.shape[0] < 2:
        raise InputError("observations", "need at least 2 observations to fit and hold out")
    if not 0.0 < test_fraction < 1.0:
        raise InputError("test_fraction", f"must be in (0, 1), got {test_fraction}")
    if max_depth < 1:
        raise InputError("max_depth", f"must be >= 1, got {max_depth}")
    wording = _describer(describe, discrete)
    y = _policy_targets(action_fn, obs, discrete, output)
    x = np.asarray(obs, dtype=np.float64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=seed)
    cls = DecisionTreeClassifier if discrete else DecisionTreeRegressor
    model = cls(max_depth=max_depth, min_samples_leaf=min_samples_leaf, random_state=seed).fit(x_tr, y_tr)
    edges = np.asarray((-deadband, deadband) if bins is None else bins, dtype=np.float64).ravel()
    if edges.size == 0 or np.any(np.diff(edges) <= 0):
        raise InputError("bins", "must be a non-empty, strictly increasing list of edges")
    fidelity = _fidelity(model.predict(x_te), y_te, discrete, edges, tolerance, len(y_tr))
    return SurrogateTree(model, tuple(names), discrete, fidelity, wording)


def _fidelity(
    pred: np.ndarray, y: np.ndarray, discrete: bool, edges: np.ndarray, tolerance: float, n_train: int
) -> SurrogateFidelity:
    if discrete:
        return SurrogateFidelity(np.nan, float(np.mean(pred == y)), np.nan, n_train, len(y))
    r2 = float(r2_score(y, pred)) if len(y) > 1 else np.nan
    same_bin = float(np.mean(np.digitize(pred, edges) == np.digitize(y, edges)))
    within = float(np.mean(np.abs(pred - y) <= tolerance))
    return SurrogateFidelity(r2, same_bin, within, n_train, len(y))
