"""Pharma's decide contract (``kit.decide.DecideModule``): a batch's measured raw material and process
inputs in, the operating point's temperature profiles out, with the batch's predicted quality, from
a run's saved profiles, comparison table and scenario (``deploy``), without retraining."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import jax.numpy as jnp
import numpy as np
from pydantic import Field

from decisions.core.numbers import Float32
from decisions.core.settings import Settings
from decisions.health.pharma.chain import CQA_NAMES, Profiles, constant_profiles, temperatures
from decisions.health.pharma.deploy import answer
from decisions.health.pharma.params import CPP_NAMES, constants, grid, spec_limits, uncertainty_cv
from decisions.health.pharma.scenario import Scenario
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative
from decisions.kit.decide_batch import bucket, padded
from decisions.kit.run_files import saved_comparison, saved_scenario

OUTCOME = "the batch's purity (% of the dried product)"
"""What an outcome's number is."""

CANDIDATES = {"snapo": "SNAPO temperature profiles (learnt)",
              "best_constant": "best constant temperatures (grid search)",
              "nominal": "the scenario's own operating point (constant temperatures)"}
"""The operating points a run can offer, by their method name in the study's comparison table."""

PROFILES_FILE = "snapo_profiles.msgpack"
"""SNAPO's saved profiles (``report.PharmaReport.save_files``)."""

Amount = Annotated[float, Field(gt=0, le=1e4, allow_inf_nan=False), Float32()]
Hours = Annotated[float, Field(gt=0, le=1000.0, allow_inf_nan=False), Float32()]


class BatchState(Settings):
    """One batch: its measured raw material and the process inputs the operating point takes as given."""

    section = "state"

    substrate: Amount = Field(description="Measured initial substrate concentration, mol/L.")
    seed_loading: Amount = Field(description="Measured seed mass (pure product), g/L.")
    seed_size: Annotated[float, Field(gt=0, le=1e5, allow_inf_nan=False), Float32()] = Field(
        description="Measured seed size, um.")
    reaction_time: Hours = Field(description="Reaction time, h.")
    cooling_time: Hours = Field(description="Cooling (crystallisation) time, h.")
    wash_ratio: Annotated[float, Field(ge=0, le=20.0, allow_inf_nan=False), Float32()] = Field(
        description="Wash volume over retained liquor volume.")
    dryer_time: Hours = Field(description="Drying time, h.")


STATE_MODEL = BatchState
MATERIAL_FIELDS = ("substrate", "seed_loading", "seed_size")
PROCESS_FIELDS = ("reaction_time", "cooling_time", "wash_ratio", "dryer_time")


@dataclass(frozen=True)
class BatchPolicy:
    """A run's deployed operating point (``name``) and the best other (``alternative``), each a CPP
    vector and profile shapes with its temperatures as plain JSON, and the run's problem (its
    discretisation, nominal constants, their uncertainty and the specification limits)."""

    name: str
    alternative: str
    points: Mapping[str, tuple[Any, Profiles]]
    actions: Mapping[str, dict[str, Any]]
    scenario: Scenario
    problem: tuple[Any, ...]


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's operating points with the study's expected yield on its fresh draws (%; SNAPO only
    where the run saved its profiles)."""
    del metrics
    table = saved_comparison(run_folder)
    offered = [n for n in CANDIDATES if n in table.index and (n != "snapo" or (run_folder / PROFILES_FILE).is_file())]
    return [Candidate(n, CANDIDATES[n], float(table.loc[n, "mean_yield"]), "mean_yield", learnt=n == "snapo")
            for n in offered]


def _point(run_folder: Path, name: str, scenario: Scenario) -> tuple[Any, Profiles]:
    """A candidate's CPP vector and profile shapes."""
    if name == "snapo":
        from decisions.health.pharma.snapo_policy import load_profiles

        saved = load_profiles(run_folder / PROFILES_FILE)
        return jnp.asarray(saved.cpps, jnp.float32), saved.profiles
    row = saved_comparison(run_folder).loc[name]
    return jnp.asarray([float(row[c]) for c in CPP_NAMES], jnp.float32), constant_profiles(grid(scenario))


def _temperatures(point: tuple[Any, Profiles], scenario: Scenario) -> dict[str, Any]:
    start = jnp.asarray(scenario.physics.crystalliser.start_temperature, jnp.float32)
    reactor, knots, dryer = (np.asarray(t).tolist() for t in temperatures(point[0], point[1], start))
    return {"reactor_temperature": reactor, "cooling_knots": knots, "dryer_temperature": dryer}


def load(run_folder: Path, candidate: str) -> BatchPolicy:
    """The run's ``candidate`` with the best other beside it, compiled on the example batch.

    Raises:
        InputError: the candidate is not one the run offers, or the run saved no scenario.
    """
    candidate, alternative = deployed_and_alternative(candidates(run_folder, {}), candidate)
    scenario = saved_scenario(run_folder, Scenario)
    points = {name: _point(run_folder, name, scenario) for name in dict.fromkeys((candidate, alternative))}
    actions = {name: _temperatures(point, scenario) for name, point in points.items()}
    problem = (grid(scenario), constants(scenario), uncertainty_cv(scenario), spec_limits(scenario))
    loaded = BatchPolicy(candidate, alternative, points, actions, scenario, problem)
    decide(loaded, [BatchState.parse(example_state(run_folder))])
    return loaded


def decide(policy: BatchPolicy, states: Sequence[BatchState]) -> list[Decision]:
    """The operating point's temperature profiles (C) for each batch, with the batch's expected yield
    (%, the value), its expected purity and the central 95% over the uncertain constants, the
    alternative's expected yield, the compliance and predicted CQAs (its reasons) and the expected
    yield's derivatives by each measured input."""
    if not states:
        return []
    size = bucket(len(states))
    material = np.array([[getattr(s, f) for f in MATERIAL_FIELDS] for s in states], np.float32)
    process = np.array([[getattr(s, f) for f in PROCESS_FIELDS] for s in states], np.float32)
    g, nominal, cv, limits = policy.problem
    found = answer(g, policy.points[policy.name], policy.points[policy.alternative], nominal, cv, limits,
                   padded(material, size), padded(process, size))
    out = {k: np.asarray(v)[: len(states)].tolist() for k, v in found.items()}
    action, other = policy.actions[policy.name], policy.actions[policy.alternative]
    decisions = []
    for i in range(len(states)):
        decisions.append(Decision(
            action=action, expected=out["mean"][i], value=out["value"][i], interval=(out["low"][i], out["high"][i]),
            alternative={"policy": CANDIDATES[policy.alternative], "action": other, "value": out["alt_value"][i]},
            reasons={"compliance": out["compliance"][i], "cqas": dict(zip(CQA_NAMES, out["cqas"][i], strict=True))},
            sensitivities={**dict(zip(MATERIAL_FIELDS, out["d_material"][i], strict=True)),
                           **dict(zip(PROCESS_FIELDS, out["d_process"][i], strict=True))}))
    return decisions


def example_state(run_folder: Path) -> dict[str, Any]:
    """A batch at the run's nominal raw material and process times."""
    scenario = saved_scenario(run_folder, Scenario)
    physics, cpps = scenario.physics, scenario.cpps
    return {"substrate": physics.reactor.substrate, "seed_loading": physics.crystalliser.seed_loading,
            "seed_size": physics.crystalliser.seed_size, **{f: getattr(cpps, f) for f in PROCESS_FIELDS}}
