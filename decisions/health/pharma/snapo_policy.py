"""SNAPO for the process chain: robust profile optimisation through the differentiable chain."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from flax import struct
from jax import Array

from decisions.core.checkpoint import load_trained, save_trained
from decisions.core.smooth import smooth_relu
from decisions.core.snapo import StepLog, train, training_curve
from decisions.health.pharma import chain
from decisions.health.pharma.chain import Profiles
from decisions.health.pharma.evaluation import Evaluation, evaluate
from decisions.health.pharma.params import (
    CPP_NAMES,
    Constants,
    Grid,
    SpecLimits,
    constants,
    cpp_vector,
    draw_constants,
    grid,
    spec_limits,
    uncertainty_cv,
)
from decisions.health.pharma.policy import (
    Bounds,
    PolicyParams,
    bounds,
    init_params,
    operating_point,
    profiles_of,
)
from decisions.health.pharma.scenario import Scenario
from decisions.health.pharma.spec import OptimiseSettings  # defined in the light spec module
from decisions.health.pharma.specs import smooth_compliance

FORMAT = "decisions.health.pharma.profiles/1"

ProgressFn = Callable[[int, int, float], None]


@struct.dataclass
class Problem:
    """Traced inputs of the SNAPO objective (its sensitivities come back in this structure)."""

    nominal: Constants
    cv: Constants
    cpps: Array  # (7,) scenario CPPs (times and wash ratio used as they are)
    bounds: Bounds
    limits: SpecLimits


def problem(scenario: Scenario, dtype: jnp.dtype = jnp.float32) -> Problem:
    """The traced problem of a validated scenario."""
    return Problem(
        nominal=constants(scenario, dtype),
        cv=uncertainty_cv(scenario, dtype),
        cpps=cpp_vector(scenario, dtype),
        bounds=bounds(scenario, dtype),
        limits=spec_limits(scenario, dtype),
    )


@lru_cache(maxsize=32)
def make_objective(
    g: Grid, samples: int, penalty: float, target: float
) -> Callable[[PolicyParams, Problem, Array, Array], Array]:
    """The SNAPO objective (cached: the same function object reuses the compiled training loop).

    Args:
        samples: draws of the constants per evaluation.
        penalty: weight of the smooth chance constraint.

    Returns:
        ``objective(policy_params, problem, key, temperature) -> scalar`` to maximise.
    """

    def objective(params: PolicyParams, p: Problem, key: Array, temperature: Array) -> Array:
        draws = draw_constants(key, p.nominal, p.cv, samples)
        cpps, profiles = operating_point(params, p.cpps, p.bounds)
        q = jax.vmap(lambda c: chain.cqas(cpps, profiles, c, g))(draws)  # (samples, 6)
        compliance = jnp.mean(smooth_compliance(q, p.limits, temperature))
        return jnp.mean(q[:, 0]) / 100.0 - penalty * smooth_relu(target - compliance, 0.01)

    return objective


@dataclasses.dataclass
class OptimisedProfiles:
    """A SNAPO result: the profiles, their hard evaluation and the training record.

    Attributes:
        scenario: the scenario optimised.
        params: policy parameters (``policy``).
        cpps: CPP vector of the trained operating point ``(7,)``.
        profiles: profile shapes around it.
        settings: settings used.
        evaluation: hard re-evaluation (nominal and fresh draws); None after ``load_profiles``.
        log: per-step smooth objective, gradient norm, temperature; None after loading.
        sensitivities: ``d objective / d problem`` from SNAPO's final reverse pass; None after loading.
        train_seconds: training wall time, compile included.
        eval_key: PRNG key of the evaluation draws (compare baselines on the same draws).
    """

    scenario: Scenario
    params: PolicyParams
    cpps: np.ndarray
    profiles: Profiles
    settings: OptimiseSettings
    evaluation: Evaluation | None = None
    log: StepLog | None = None
    sensitivities: Problem | None = None
    train_seconds: float = float("nan")
    eval_key: Array | None = None

    def curve(self) -> pd.DataFrame:
        """Training curve: ``step, value, grad_norm, temperature`` (empty if no log)."""
        return training_curve(self.log)

    def cpp_series(self) -> pd.Series:
        """The CPPs of the operating point by name."""
        return pd.Series(self.cpps.astype(float), index=list(CPP_NAMES), name="value")

    def profile_frame(self) -> pd.DataFrame:
        """The temperature set points of the three profiles (see ``profile_frame``)."""
        return profile_frame(self.cpps, self.profiles, self.scenario.physics.crystalliser.start_temperature)

    def cqa_table(self) -> pd.DataFrame:
        """CQAs with limits, nominal values, hard checks and means on fresh draws (needs ``evaluation``)."""
        if self.evaluation is None:
            raise ValueError("no evaluation: re-evaluate loaded profiles with evaluation.evaluate")
        return self.evaluation.cqa_table(spec_limits(self.scenario))


def profile_frame(cpps: np.ndarray | Array, profiles: Profiles, start_temperature: float) -> pd.DataFrame:
    """Temperature set points of every unit: columns ``unit, segment, start_h, end_h, temperature_start, temperature_end``.

    Args:
        cpps: CPP vector (times give the segment boundaries).
        start_temperature: crystalliser seeding temperature, C.

    Returns:
        One row per profile segment (reactor, crystalliser, dryer).
    """
    cpps = np.asarray(cpps, float)
    reactor, knots, dryer = (
        np.asarray(a, float)
        for a in chain.temperatures(jnp.asarray(cpps), profiles, jnp.asarray(start_temperature))
    )
    rows = []
    for unit, values, duration, linear in (
        ("reactor", reactor, cpps[1], False),
        ("crystalliser", knots, cpps[3], True),
        ("dryer", dryer, cpps[6], False),
    ):
        n = len(values) - 1 if linear else len(values)
        for k in range(n):
            t0, t1 = duration * k / n, duration * (k + 1) / n
            end = values[k + 1] if linear else values[k]
            rows.append((unit, k, t0, t1, values[k], end))
    return pd.DataFrame(
        rows, columns=["unit", "segment", "start_h", "end_h", "temperature_start", "temperature_end"]
    )


def optimise(
    scenario: Scenario,
    settings: OptimiseSettings | None = None,
    key: Array | None = None,
    progress: ProgressFn | None = None,
    *,
    init: tuple[float, float, float] | None = None,
) -> OptimisedProfiles:
    """Optimise the temperature profiles for expected yield under a chance constraint on every spec.

    Args:
        settings: SNAPO settings (default ``OptimiseSettings()``).
        key: PRNG key (default from ``settings.seed``); split into training and evaluation keys.
        progress: optional ``(done, total, smooth objective)`` callback between jitted chunks.
        init: optional starting ``(reactor, cooling end, dryer)`` temperatures (constant
            profiles, linear cooling); default the scenario's CPPs.

    Returns:
        The ``OptimisedProfiles``, re-evaluated with the hard checks on ``settings.eval_samples``
        fresh draws.
    """
    settings = OptimiseSettings() if settings is None else settings
    key = jax.random.PRNGKey(settings.seed) if key is None else key
    train_key, eval_key = jax.random.split(key)
    g = grid(scenario)
    p = problem(scenario)
    cpps0 = scenario.cpps
    r0, c0, d0 = init or (cpps0.reactor_temperature, cpps0.cooling_end_temperature, cpps0.dryer_temperature)
    params0 = init_params(g, p.bounds, reactor=r0, cooling_end=c0, dryer=d0)
    objective = make_objective(g, settings.samples_per_step, settings.penalty, settings.training_compliance)
    result = train(objective, params0, p, settings.config(), key=train_key, progress=progress)
    cpps, profiles = operating_point(result.params, p.cpps, p.bounds)
    ev = evaluate(cpps, profiles, p.nominal, p.cv, p.limits, g, key=eval_key, samples=settings.eval_samples)
    return OptimisedProfiles(
        scenario=scenario,
        params=result.params,
        cpps=np.asarray(cpps),
        profiles=profiles,
        settings=settings,
        evaluation=ev,
        log=result.log,
        sensitivities=result.sensitivities,
        train_seconds=result.train_seconds,
        eval_key=eval_key,
    )


def evaluation_key(settings: OptimiseSettings) -> Array:
    """The key ``optimise`` evaluates on by default (to compare baselines on the same draws)."""
    return jax.random.split(jax.random.PRNGKey(settings.seed))[1]


def save_profiles(path: str | os.PathLike[str], result: OptimisedProfiles) -> None:
    """Save optimised profiles (policy parameters, settings and scenario) as msgpack."""
    description = {
        "settings": result.settings.model_dump(mode="json"),
        "scenario": result.scenario.model_dump(mode="json"),
        "train_seconds": result.train_seconds,
    }
    save_trained(path, kind=FORMAT, description=description, params=result.params)


def _params_like(description: dict[str, Any]) -> PolicyParams:
    """Policy parameters shaped for the described scenario (values ignored)."""
    scenario = Scenario.model_validate(description["scenario"])
    return init_params(grid(scenario), problem(scenario).bounds, reactor=0.0, cooling_end=0.0, dryer=0.0)


def load_profiles(path: str | os.PathLike[str]) -> OptimisedProfiles:
    """Load profiles saved by ``save_profiles`` (without evaluation, log or sensitivities).

    Returns:
        The ``OptimisedProfiles``: exactly the saved operating point and profiles.

    Raises:
        InputError: the file is corrupt or not saved pharma profiles (of this format version).
    """
    meta, params = load_trained(path, kind=FORMAT, target=_params_like, field="profiles")
    scenario = Scenario.model_validate(meta["scenario"])
    settings = OptimiseSettings.model_validate(meta["settings"])
    p = problem(scenario)
    cpps, profiles = operating_point(params, p.cpps, p.bounds)
    return OptimisedProfiles(
        scenario=scenario,
        params=params,
        cpps=np.asarray(cpps),
        profiles=profiles,
        settings=settings,
        train_seconds=float(meta["train_seconds"]),
    )


def describe_profiles(params: PolicyParams, b: Bounds) -> dict[str, Any]:
    """The policy's temperatures as plain lists (for JSON reports)."""
    reactor, end, fractions, dryer = profiles_of(params, b)
    return {
        "reactor": np.asarray(reactor).tolist(),
        "cooling_end": float(end),
        "cooling_fractions": np.asarray(fractions).tolist(),
        "dryer": np.asarray(dryer).tolist(),
    }
