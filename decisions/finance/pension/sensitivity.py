"""Sensitivities of the pension objective to every input, as a pytree and as tidy tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
import pandas as pd

from decisions.finance.pension.params import FACTOR_NAMES, PensionParams

PyTree = Any


@dataclass(frozen=True)
class Sensitivities:
    """The objective and its gradient to every input.

    Attributes:
        value: the mean (hard) objective, currency.
        grads: ``d value / d input`` with the structure of ``params``.
        params: the inputs they were taken at.
    """

    value: float
    grads: PensionParams
    params: PensionParams

    @property
    def count(self) -> int:
        """Number of scalar sensitivities (every entry of every input)."""
        return count_sensitivities(self.grads)

    def tables(self) -> dict[str, pd.DataFrame]:
        """The tidy tables of ``sensitivity_tables``."""
        return sensitivity_tables(self.params, self.grads)


def sensitivity_tables(params: PensionParams, grads: PensionParams) -> dict[str, pd.DataFrame]:
    """Tidy tables of the sensitivities (currency per unit of each input).

    Returns:
        ``key_rates``: ``tenor, rate, dV_dr, dV_per_bp``; ``assets``: ``asset, parameter,
        value, dV_dinput`` (expected returns and volatilities); ``correlations``: ``first,
        second, value, dV_dinput``; ``scalars``: ``input, value, dV_dinput`` (curve
        dynamics, mortality, benefit rules, funding); ``population``: ``cohort, age,
        dV_dcount, dV_dsalary, dV_dpension``.
    """
    key_rates = pd.DataFrame(
        {
            "tenor": np.asarray(params.tenors),
            "rate": np.asarray(params.key_rates),
            "dV_dr": np.asarray(grads.key_rates),
            "dV_per_bp": np.asarray(grads.key_rates) * 1e-4,
        }
    )
    asset_rows = []
    for i, name in enumerate(params.risky_names):
        for field, label in (("risky_mean", "expected_return"), ("risky_vol", "volatility")):
            asset_rows.append(
                {
                    "asset": name,
                    "parameter": label,
                    "value": float(getattr(params, field)[i]),
                    "dV_dinput": float(getattr(grads, field)[i]),
                }
            )
    pairs = params.correlation_pairs
    correlations = pd.DataFrame(
        {
            "first": [a for a, _ in pairs],
            "second": [b for _, b in pairs],
            "value": np.asarray(params.correlation),
            "dV_dinput": np.asarray(grads.correlation),
        }
    )
    scalar_rows = []
    for name in SCALAR_INPUTS:
        scalar_rows.append(
            {"input": name, "value": float(getattr(params, name)), "dV_dinput": float(getattr(grads, name))}
        )
    for i, factor in enumerate(FACTOR_NAMES):
        for field in ("factor_speed", "factor_vol"):
            scalar_rows.append(
                {
                    "input": f"{field}.{factor}",
                    "value": float(getattr(params, field)[i]),
                    "dV_dinput": float(getattr(grads, field)[i]),
                }
            )
    population = pd.DataFrame(
        {
            "cohort": np.arange(len(params.ages)),
            "age": np.asarray(params.ages),
            "dV_dcount": np.asarray(grads.counts),
            "dV_dsalary": np.asarray(grads.salaries),
            "dV_dpension": np.asarray(grads.pensions),
        }
    )
    return {
        "key_rates": key_rates,
        "assets": pd.DataFrame(asset_rows),
        "correlations": correlations,
        "scalars": pd.DataFrame(scalar_rows),
        "population": population,
    }


SCALAR_INPUTS: tuple[str, ...] = (
    "initial_assets",
    "contribution_min",
    "contribution_max",
    "floor",
    "penalty_weight",
    "contribution_cost",
    "discount_rate",
    "mortality_scale",
    "mortality_a",
    "mortality_b",
    "mortality_c",
    "retirement_age",
    "accrual_rate",
    "salary_growth",
    "indexation",
    "ns_decay",
)
"""Scalar inputs reported one row each by ``sensitivity_tables``."""


def count_sensitivities(grads: PyTree) -> int:
    """Number of scalar sensitivities in a gradient pytree."""
    return int(sum(np.size(leaf) for leaf in jax.tree_util.tree_leaves(grads)))
