"""Explanations of a trained battery controller, in the building's own terms."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.core.explain import (
    LocalAttribution,
    SurrogateTree,
    explain_decision,
    feature_gradients,
    fit_surrogate,
    ig_importance,
    permutation_importance,
    sensitivity_summary,
)

ActionFn = Callable[[Array], Array]

IMPORTANCE_COLUMNS = ("group", "importance", "std", "permutation", "permutation_std")
"""Columns of ``BuildingExplanation.importance_table`` (the ``importance`` table a run records)."""


def feature_groups(feature_names: Sequence[str]) -> dict[str, list[str]]:
    """Operator-level groups of the observation features (every feature in exactly one group)."""
    rules = (
        ("calendar", ("hour_", "weekend", "holiday", "month_")),
        ("price forecasts", ("price_6h", "price_12h", "price_24h")),
        ("load and PV forecasts", ("_yesterday_",)),
        ("home", ("power_per_capacity", "pv_kw_per_capacity", "daily_")),
        ("price now", ("price_usd",)),
        ("carbon", ("carbon",)),
        ("weather forecasts", ("_6h_", "_12h_", "_24h_")),
        ("weather now", ("temperature", "irradiance")),
        ("state of charge", ("soc",)),
        ("load and PV", ("load_kwh", "pv_kwh", "prev_net_load", "load_per_capacity", "pv_per_capacity")),
    )
    groups: dict[str, list[str]] = {}
    for name in feature_names:
        for group, prefixes in rules:
            if any(p in name for p in prefixes):
                groups.setdefault(group, []).append(name)
                break
        else:
            groups.setdefault("other", []).append(name)
    return groups


def forecast_features(feature_names: Sequence[str]) -> list[str]:
    """The features that are forecasts (6, 12 or 24 h ahead)."""
    return [n for n in feature_names if any(tag in n for tag in ("_6h", "_12h", "_24h"))]


def describe_action(action: float) -> str:
    """Words for a battery action (fraction of nominal power; + charge)."""
    if action > 0.05:
        return f"charge at {action:.0%} of power"
    if action < -0.05:
        return f"discharge at {-action:.0%} of power"
    return "hold"


@dataclass
class BuildingExplanation:
    """Explanations of one controller over the states it visited.

    Attributes:
        importance: per feature group, mean |integrated gradients| (``importance``, ``std``).
        permutation: per feature group, mean |action change| when the group is shuffled.
        forecast_sensitivity: per forecast feature, mean |d action / d feature| (``importance``,
            ``std``, ``mean_gradient``).
        surrogate: the distilled decision tree (rules, fidelity, decision paths).
        feature_names: observation feature names.
        observations: the visited states ``(T, F)``.
        actions: the controller's actions on them ``(T,)``.
    """

    importance: pd.DataFrame
    permutation: pd.DataFrame
    forecast_sensitivity: pd.DataFrame
    surrogate: SurrogateTree
    feature_names: tuple[str, ...]
    observations: np.ndarray
    actions: np.ndarray

    def importance_table(self) -> pd.DataFrame:
        """Integrated-gradients and permutation importance per feature group, one row per group.

        Returns:
            ``IMPORTANCE_COLUMNS``: ``importance`` and ``std`` of the integrated gradients,
            ``permutation`` and ``permutation_std`` of the permutation importance.
        """
        permutation = self.permutation.rename(
            columns={"feature": "group", "importance": "permutation", "std": "permutation_std"}
        )[["group", "permutation", "permutation_std"]]
        return self.importance.rename(columns={"feature": "group"}).merge(permutation, on="group")

    def why(self, action_fn: ActionFn, hour_index: int, *, top: int = 5) -> tuple[list[str], LocalAttribution]:
        """Why ``action_fn`` did what it did at the visited hour ``hour_index``: ``(lines, local)``, the surrogate
        tree's rule path and the ``top`` largest attributions as text, and the full local attribution.
        """
        obs = self.observations[hour_index]
        local = explain_decision(action_fn, obs, list(self.feature_names), observations=self.observations)
        lines = [f"Action: {describe_action(float(self.actions[hour_index]))}."]
        lines.append("Rule the surrogate tree follows: " + self.surrogate.explain(obs))
        table = local.table.reindex(local.table["attribution"].abs().sort_values(ascending=False).index)
        for _, row in table.head(top).iterrows():
            direction = "towards charging" if row["attribution"] > 0 else "towards discharging"
            lines.append(f"{row['feature']} = {row['value']:.3g} pushed {direction} by {abs(row['attribution']):.3f}")
        return lines, local


def explain_controller(
    action_fn: ActionFn,
    observations: np.ndarray,
    feature_names: Sequence[str],
    *,
    seed: int = 0,
    max_depth: int = 5,
) -> BuildingExplanation:
    """Explain ``action_fn`` (``obs (F,) -> action ()``) over the ``(T, F)`` visited ``observations``;
    ``seed`` seeds the permutations and the surrogate tree's split, of depth ``max_depth``.
    """
    names = list(feature_names)
    obs = jnp.asarray(observations, jnp.float32)
    groups = feature_groups(names)
    actions = np.asarray(jax.vmap(action_fn)(obs), dtype=np.float64)
    importance = ig_importance(action_fn, obs, names, groups=groups)
    permutation = permutation_importance(action_fn, obs, names, key=jax.random.PRNGKey(seed), groups=groups)
    forecasts = forecast_features(names)
    sensitivity = sensitivity_summary(feature_gradients(action_fn, obs, names, features=forecasts))
    surrogate = fit_surrogate(action_fn, obs, names, max_depth=max_depth, seed=seed, describe=describe_action)
    return BuildingExplanation(
        importance=importance,
        permutation=permutation,
        forecast_sensitivity=sensitivity,
        surrogate=surrogate,
        feature_names=tuple(names),
        observations=np.asarray(observations, np.float32),
        actions=actions,
    )
