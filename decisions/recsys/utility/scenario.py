"""The simulated recommender's settings and the utility layer's action set (pydantic and numpy: no JAX)."""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
from pydantic import Field, field_validator, model_validator

from decisions.core.settings import Settings, finite_items, finite_numbers
from decisions.core.strict_input import Seed

OUTCOMES = ("success", "hides", "revenue")
"""Per-request outcomes: a successful session (at least one save), hides, revenue (currency units)."""
HEADS = ("save", "hide", "revenue")
"""The ranker's prediction heads the utility weighs (hide with a minus sign)."""
OBJECTIVES = ("engagement", "revenue")
"""The two objectives of the front: engagement = success - hide_cost * hides (primary), revenue."""

Unit = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class Simulator(Settings):
    """The ground-truth recommender: requests, candidates, the ranker and the users' response."""

    section = "simulator"

    candidates: int = Field(100, ge=2, le=1000, description="Candidate items per request.")
    slate_size: int = Field(10, ge=1, le=100, description="Items shown per request (top-N of the utility).")
    position_decay: float = Field(
        0.8, ge=0.0, le=5.0, allow_inf_nan=False,
        description="Position bias: the item at position p (0-based) is examined with (1 + p) ** -decay.",
    )
    topics: int = Field(8, ge=1, le=64, description="Dimension of the latent user and item preferences.")
    ranker_noise: float = Field(
        0.5, ge=0.0, le=5.0, allow_inf_nan=False, description="Standard deviation of the ranker's logit noise."
    )
    miscalibration: Unit = Field(
        1.0, description="How much the ranker's calibration differs by segment and device (0: calibrated)."
    )
    hide_cost: float = Field(
        0.5, ge=0.0, le=10.0, allow_inf_nan=False,
        description="Successful sessions one hide costs in the engagement objective.",
    )
    drift_per_day: Unit = Field(
        0.35, description="How fast preferences drift away from what the ranker learnt, per day (drift scenario)."
    )
    world_seed: Seed = Field(0, description="Seed of the world itself (segments, ranker miscalibration).")

    @model_validator(mode="after")
    def _slate_fits(self) -> Simulator:
        if self.slate_size > self.candidates:
            raise ValueError(f"slate_size: {self.slate_size} exceeds candidates ({self.candidates})")
        return self


class WeightSet(Settings):
    """The agent's actions: utility-weight vectors ``(w_save, w_hide, w_revenue)``."""

    section = "weights"

    grid_step: int = Field(
        12, ge=1, le=40,
        description="Simplex grid with this many steps per axis: (step+1)(step+2)/2 vectors (12 -> 91).",
    )
    vectors: list[tuple[float, float, float]] | None = Field(
        None, description="Explicit weight vectors instead of the grid (each non-negative, not all zero)."
    )
    production: Annotated[tuple[float, float, float], finite_items("production")] = Field(
        (0.5, 0.25, 0.25), description="The hand-set production weights (snapped to the nearest vector)."
    )

    @field_validator("vectors", mode="before")
    @classmethod
    def _finite(cls, value: object) -> object:
        if value is None:
            return value
        if not isinstance(value, list | tuple) or not value:
            raise ValueError("must be a non-empty list of [w_save, w_hide, w_revenue] vectors")
        for row in value:
            finite_numbers(row, "vectors")
        return value

    @field_validator("vectors")
    @classmethod
    def _usable(cls, value: list[tuple[float, float, float]] | None) -> list[tuple[float, float, float]] | None:
        for i, row in enumerate(value or ()):
            if min(row) < 0 or not math.fsum(row) > 0:
                raise ValueError(f"vector {i}: weights must be non-negative and not all zero, got {list(row)}")
        return value

    @field_validator("production")
    @classmethod
    def _not_all_zero(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if not math.fsum(value) > 0:
            raise ValueError(f"weights must sum to more than 0 (they are normalised to sum one), got {list(value)}")
        return value

    def matrix(self) -> np.ndarray:
        """The weight vectors, ``(A, 3)`` float32, each summing to one."""
        rows = np.asarray(self.vectors, dtype=np.float64) if self.vectors else simplex_grid(self.grid_step)
        return (rows / rows.sum(axis=1, keepdims=True)).astype(np.float32)

    def production_index(self) -> int:
        """Index of the vector nearest to the production weights (normalised to sum one)."""
        target = np.asarray(self.production, dtype=np.float64)
        total = target.sum()
        if not total > 0:
            raise ValueError("production: weights must not all be zero")
        return int(np.argmin(np.abs(self.matrix() - target / total).sum(axis=1)))


def simplex_grid(steps: int) -> np.ndarray:
    """Every ``(a, b, c) / steps`` with non-negative integers summing to ``steps``: ``(steps+1)(steps+2)/2`` rows."""
    rows = [(a, b, steps - a - b) for a in range(steps + 1) for b in range(steps + 1 - a)]
    return np.asarray(rows, dtype=np.float64) / steps


def lambda_grid(points: int) -> np.ndarray:
    """``points`` scalarisation values evenly spaced on [0, 1] (0: engagement only, 1: revenue only)."""
    return np.linspace(0.0, 1.0, points)
