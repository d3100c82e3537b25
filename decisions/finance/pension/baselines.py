"""Fixed-mix baselines: constant weights and a constant contribution rate."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array
from pydantic import Field, field_validator

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.finance.pension import snapo_policy as sp
from decisions.finance.pension.params import PensionParams
from decisions.finance.pension.policy import fixed_mix_params
from decisions.finance.pension.simulator import draw_normals


class FixedMixSpec(Settings):
    """A user-given fixed mix (validated): weights per asset and a contribution rate."""

    weights: dict[str, float] = Field(description="Asset name -> weight (>= 0, summing to 1); missing = 0.")
    contribution_rate: float = Field(ge=0, le=1.0, allow_inf_nan=False, description="Rate x payroll.")

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        if not value:
            raise ValueError("needs at least one asset")
        for name, w in value.items():
            if not np.isfinite(w) or w < 0:
                raise ValueError(f"{name}: weight must be a finite number >= 0, got {w}")
        total = sum(value.values())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"weights must sum to 1, got {total:.6g}")
        return value

    def to_policy(self, params: PensionParams, settings: sp.PensionSnapoSettings) -> sp.TrainedPensionPolicy:
        """The fixed-mix policy of this spec for a problem (raises ``InputError`` on unknown assets)."""
        names = params.asset_names
        unknown = sorted(set(self.weights) - set(names))
        if unknown:
            raise InputError("fixed_mix.weights", f"unknown asset {unknown[0]!r} (known: {', '.join(names)})")
        lo, hi = float(params.contribution_min), float(params.contribution_max)
        if not lo - 1e-12 <= self.contribution_rate <= hi + 1e-12:
            raise InputError("fixed_mix.contribution_rate", f"must lie in the bounds [{lo:g}, {hi:g}]")
        share = 0.5 if hi <= lo else (self.contribution_rate - lo) / (hi - lo)
        weights = [self.weights.get(n, 0.0) for n in names]
        policy = settings.network(len(names))
        return sp.TrainedPensionPolicy(
            policy=policy,
            params=fixed_mix_params(policy, weights, share),
            settings=settings,
            asset_names=names,
        )


def named_mixes(params: PensionParams) -> dict[str, np.ndarray]:
    """The grid's weight vectors by name (growth = risky assets, bonds split evenly across buckets,
    ``all_<asset>`` the single-asset corners, where a linear objective puts its optimum)."""
    names = params.asset_names
    n_bonds, n_risky = len(params.bond_durations), len(params.risky_names)
    bonds = np.array([1.0 if n.startswith("bond_") else 0.0 for n in names])
    growth = np.array([1.0 if n in params.risky_names else 0.0 for n in names])
    longest = np.array([1.0 if n == names[n_bonds] else 0.0 for n in names])  # the longest bond bucket
    mixes: dict[str, np.ndarray] = {"equal_weight": np.full(len(names), 1.0 / len(names))}
    if n_bonds:
        mixes["liability_hedge"] = 0.5 * bonds / n_bonds + 0.5 * longest
    if n_bonds and n_risky:
        for share in (0.4, 0.6, 0.8):
            mixes[f"growth_{int(share * 100)}"] = share * growth / n_risky + (1 - share) * bonds / n_bonds
    if n_risky:
        mixes["growth_100"] = growth / n_risky
    for i, name in enumerate(names):  # the corners: all in one asset
        mixes[f"all_{name}"] = np.eye(len(names))[i]
    return mixes


@dataclasses.dataclass
class FixedMixResult:
    """The chosen fixed-mix baseline.

    Attributes:
        policy: the best fixed mix (``is_fixed_mix`` is True).
        name: which candidate won (a grid name with its contribution share, or ``snapo_fixed_mix``).
        candidates: one row per candidate: ``name``, ``contribution_share``, ``train_value``
            (mean hard objective on the common training paths).
    """

    policy: sp.TrainedPensionPolicy
    name: str
    candidates: pd.DataFrame


def best_fixed_mix(
    params: PensionParams,
    settings: sp.PensionSnapoSettings,
    *,
    key: Array,
    selection_paths: int = 512,
    progress: Callable[[int, int, float], None] | None = None,
) -> FixedMixResult:
    """Search fixed mixes on training paths: a grid, then SNAPO on the fixed mix from the grid's best.

    Args:
        settings: SNAPO settings (the fixed mix is trained with the same ones, so the
            compiled training loop of the network is reused).
        key: PRNG key of the selection paths and the fixed-mix training.
        selection_paths: common training paths on which candidates are compared.
        progress: optional SNAPO progress callback of the fixed-mix training.
    """
    select_key, train_key = jax.random.split(key)
    normals = draw_normals(select_key, selection_paths, params.months, params.n_shocks)
    rows, policies = [], {}
    network = settings.network(params.n_assets)
    for mix_name, weights in named_mixes(params).items():
        for share in (0.0, 0.5, 1.0):
            name = f"{mix_name}@{share:g}"
            trained = sp.TrainedPensionPolicy(
                policy=network,
                params=fixed_mix_params(network, weights, share),
                settings=settings,
                asset_names=params.asset_names,
            )
            policies[name] = trained
            value = float(jnp.mean(sp.evaluate(trained, params, normals)))
            rows.append({"name": name, "contribution_share": share, "train_value": value})
    best_grid = max(rows, key=lambda r: r["train_value"])["name"]
    tuned = sp.train_policy(
        params, settings, fixed_mix=True, key=train_key, init_params=policies[best_grid].params, progress=progress
    )
    policies["snapo_fixed_mix"] = tuned
    value = float(jnp.mean(sp.evaluate(tuned, params, normals)))
    rows.append({"name": "snapo_fixed_mix", "contribution_share": float("nan"), "train_value": value})
    table = pd.DataFrame(rows)
    best = str(table.loc[table["train_value"].idxmax(), "name"])
    return FixedMixResult(policy=policies[best], name=best, candidates=table)
