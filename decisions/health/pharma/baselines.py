"""The baseline: the best constant-temperature operation found by a vmapped grid search."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.health.pharma import chain
from decisions.health.pharma.chain import Profiles
from decisions.health.pharma.params import Constants, Grid, SpecLimits, draw_constants
from decisions.health.pharma.policy import Bounds
from decisions.health.pharma.specs import meets_specs


@dataclass(frozen=True)
class GridSearch:
    """Outcome of the grid search.

    Attributes:
        cpps: CPP vector of the chosen candidate (the best constant operation).
        profiles: its (flat / linear) profile shapes.
        feasible: whether any candidate reached the required compliance (else the most
            compliant one is returned).
        table: every candidate of every pass: reactor_temperature, cooling_end_temperature,
            dryer_temperature, mean_yield (%), compliance.
    """

    cpps: np.ndarray
    profiles: Profiles
    feasible: bool
    table: pd.DataFrame


@partial(jax.jit, static_argnames=("grid", "batch"))
def _score(
    candidates: Array, profiles: Profiles, draws: Constants, limits: SpecLimits, grid: Grid, batch: int
) -> tuple[Array, Array]:
    """``(mean yield, compliance)`` of each candidate CPP vector ``(N, 7)`` on common draws."""

    def one(cpps: Array) -> tuple[Array, Array]:
        q = jax.vmap(lambda c: chain.cqas(cpps, profiles, c, grid))(draws)
        return jnp.mean(q[:, 0]), jnp.mean(meets_specs(q, limits).astype(q.dtype))

    return jax.lax.map(one, candidates, batch_size=batch)


def best_constant(
    base_cpps: Array,
    nominal: Constants,
    cv: Constants,
    limits: SpecLimits,
    b: Bounds,
    grid: Grid,
    *,
    key: Array,
    samples: int = 256,
    points: tuple[int, int, int] = (11, 11, 6),
    required_compliance: float = 0.95,
    refinements: int = 2,
    batch: int = 16,
) -> GridSearch:
    """Grid search for the best constant reactor / linear cooling / constant dryer operation.

    Args:
        base_cpps: scenario CPP vector (times and wash ratio are kept).
        cv: relative standard deviations of the uncertain constants.
        key: PRNG key of the common draws.
        points: grid points for reactor temperature, cooling end temperature, dryer temperature.
        required_compliance: smallest share of draws meeting every specification.
        refinements: zoomed passes after the first: a grid of the same size spanning one
            previous step either side of the best point so far.
        batch: candidates simulated together (memory vs speed).
    """
    ranges = [(float(r[0]), float(r[1])) for r in (b.reactor, b.cooling_end, b.dryer)]
    base = np.asarray(base_cpps)
    profiles = chain.constant_profiles(grid, base_cpps.dtype)
    draws = draw_constants(key, nominal, cv, samples)
    frames = []
    centre: np.ndarray | None = None
    for _ in range(1 + refinements):
        axes = []
        for k, ((lo, hi), n) in enumerate(zip(ranges, points, strict=True)):
            if centre is not None:  # zoom: one previous grid step either side of the best point
                step = (hi - lo) / max(n - 1, 1)
                lo, hi = max(lo, centre[k] - step), min(hi, centre[k] + step)
            axes.append(np.linspace(lo, hi, n))
        ranges = [(float(a[0]), float(a[-1])) for a in axes]
        mesh = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        candidates = np.repeat(base[None], len(mesh), axis=0)
        candidates[:, [0, 2, 5]] = mesh
        mean_yield, compliance = _score(
            jnp.asarray(candidates, base_cpps.dtype), profiles, draws, limits, grid, batch
        )
        frames.append(
            pd.DataFrame(
                {
                    "reactor_temperature": mesh[:, 0],
                    "cooling_end_temperature": mesh[:, 1],
                    "dryer_temperature": mesh[:, 2],
                    "mean_yield": np.asarray(mean_yield),
                    "compliance": np.asarray(compliance),
                }
            )
        )
        table = pd.concat(frames, ignore_index=True)
        ok = table["compliance"].to_numpy() >= required_compliance
        score = (
            np.where(ok, table["mean_yield"].to_numpy(), -np.inf)
            if ok.any()
            else table["compliance"].to_numpy()
        )
        centre = table.iloc[int(np.argmax(score))][
            ["reactor_temperature", "cooling_end_temperature", "dryer_temperature"]
        ].to_numpy(float)
    assert centre is not None
    best = base.copy()
    best[[0, 2, 5]] = centre
    return GridSearch(cpps=best, profiles=profiles, feasible=bool(ok.any()), table=table)
