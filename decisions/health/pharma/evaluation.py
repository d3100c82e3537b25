"""Hard re-evaluation of an operating point: CQAs at nominal constants and under uncertainty."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.health.pharma import chain
from decisions.health.pharma.chain import CQA_NAMES, CQA_UNITS, Profiles
from decisions.health.pharma.params import Constants, Grid, SpecLimits, draw_constants
from decisions.health.pharma.specs import LIMIT_NAMES, meets_specs, violations


@dataclass(frozen=True)
class Evaluation:
    """Hard evaluation of one operating point.

    Attributes:
        nominal_cqas: CQAs at the nominal constants, ``(6,)``.
        nominal_meets: every specification met at the nominal constants.
        mean_yield: expected yield over the draws, %.
        compliance: share of draws meeting every specification.
        limit_compliance: share of draws meeting each limit (``LIMIT_NAMES`` order), ``(6,)``.
        mean_cqas: mean CQAs over the draws, ``(6,)``.
        samples: number of draws.
    """

    nominal_cqas: np.ndarray
    nominal_meets: bool
    mean_yield: float
    compliance: float
    limit_compliance: np.ndarray
    mean_cqas: np.ndarray
    samples: int

    def cqa_table(self, limits: SpecLimits) -> pd.DataFrame:
        """CQAs with units, limits, nominal value, hard check and mean under uncertainty."""
        lo = {"purity": float(limits.purity_min), "d50": float(limits.d50_min)}
        hi = {
            "impurity": float(limits.impurity_max),
            "degradant": float(limits.degradant_max),
            "d50": float(limits.d50_max),
            "residual_solvent": float(limits.residual_solvent_max),
        }
        v = np.asarray(violations(jnp.asarray(self.nominal_cqas), limits))
        ok = dict.fromkeys(CQA_NAMES, True)
        for name, value in zip(LIMIT_NAMES, v, strict=True):
            key = "d50" if name.startswith("d50") else name
            ok[key] = ok[key] and bool(value <= 0)
        return pd.DataFrame(
            {
                "cqa": list(CQA_NAMES),
                "unit": [CQA_UNITS[n] for n in CQA_NAMES],
                "low": [lo.get(n, np.nan) for n in CQA_NAMES],
                "high": [hi.get(n, np.nan) for n in CQA_NAMES],
                "nominal": self.nominal_cqas.astype(float),
                "meets": [ok[n] for n in CQA_NAMES],
                "mean": self.mean_cqas.astype(float),
            }
        )


@partial(jax.jit, static_argnames=("grid",))
def batch_cqas(cpps: Array, profiles: Profiles, draws: Constants, grid: Grid) -> Array:
    """CQAs ``(n, 6)`` of one operating point for ``n`` draws of the constants (leading axis)."""
    return jax.vmap(lambda c: chain.cqas(cpps, profiles, c, grid))(draws)


def evaluate(
    cpps: Array,
    profiles: Profiles,
    nominal: Constants,
    cv: Constants,
    limits: SpecLimits,
    grid: Grid,
    *,
    key: Array,
    samples: int,
) -> Evaluation:
    """Hard evaluation at the nominal constants and on ``samples`` fresh draws.

    Args:
        cv: relative standard deviations (``params.uncertainty_cv``).
        key: PRNG key of the draws (pass the same key to compare candidates on common draws).
    """
    draws = draw_constants(key, nominal, cv, samples)
    # The nominal constants ride along as one more draw: one compiled program for both.
    both = jax.tree_util.tree_map(lambda n, d: jnp.concatenate([n[None], d]), nominal, draws)
    q_all = batch_cqas(cpps, profiles, both, grid)
    nominal_q, q = np.asarray(q_all[0]), q_all[1:]
    ok_limits = np.asarray(violations(q, limits) <= 0.0)
    return Evaluation(
        nominal_cqas=nominal_q,
        nominal_meets=bool(meets_specs(jnp.asarray(nominal_q), limits)),
        mean_yield=float(jnp.mean(q[:, 0])),
        compliance=float(np.mean(np.all(ok_limits, axis=-1))),
        limit_compliance=ok_limits.mean(axis=0),
        mean_cqas=np.asarray(jnp.mean(q, axis=0)),
        samples=samples,
    )
