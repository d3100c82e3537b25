"""Building's decide contract (``kit.decide.DecideModule``): the hour about to be decided in, each
battery's charge or discharge out, from the controllers a run saved (``deployable``), without retraining.

Every candidate answers a batch of hours with one compiled program (``CHUNK`` rows a call): its action,
the homes' net load after it and its reasons, the integrated-gradient attributions of the first home's
action by the run's feature groups (``explain.feature_groups``) or, for DQN, the Q-value of each level.
The hour's load and PV are forecasts: the expected bill and its 95% interval price the net load under
the errors the seasonal forecast made at that hour of the day in the training months (``forecast_error``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array

from decisions.core.monitor_design import InControl
from decisions.energy.building.deployable import (
    BASELINES,
    Controller,
    controller,
    load_scenario,
    reference_observation,
)
from decisions.energy.building.env import BuildingEnv
from decisions.energy.building.explain import describe_action, feature_groups
from decisions.energy.building.forecast_error import ForecastErrors, bill_forecast, in_control
from decisions.energy.building.hour_state import STATE_HOME_FIELDS, HourState, observations, state_at
from decisions.energy.building.observation import NUM_PER_BUILDING, NUM_SHARED
from decisions.energy.building.params import BuildingParams
from decisions.energy.building.scenario import Scenario, Split
from decisions.errors import InputError
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative

OUTCOME = "the hour's electricity bill of the run's homes on their shared meter, $ (imports less exports)"
"""What an outcome's number is."""

STATE_MODEL = HourState

CHUNK = 256
"""Rows of one compiled call (a batch is padded to a multiple)."""
IG_STEPS = 16
"""Midpoint steps of the integrated gradients."""
SCORE = "saving_fraction_of_lp"
"""The study's figure of a candidate: its share of the perfect-foresight LP's saving, held-out months."""


@dataclass(frozen=True)
class BuildingPolicy:
    """A run's candidate ``name`` deployed, its best other candidate ``alternative`` beside it, and
    ``answer(obs (B, F)) -> arrays``, their compiled answers on a batch, and the forecast's ``errors``
    and the ``feed_in_price`` that price an hour's bill."""

    name: str
    alternative: str
    homes: int
    groups: tuple[str, ...]
    levels: tuple[float, ...]
    answer: Callable[[Array], dict[str, Array]]
    errors: ForecastErrors
    feed_in_price: float


def _offered(run_folder: Path) -> dict[str, tuple[str, float, int | None]]:
    """Each candidate the run's ``kpis`` table offers: ``name -> (label, score, seed)``, an agent by its
    best seed on the held-out months."""
    kpis = pd.read_csv(run_folder / "kpis.csv")
    offered: dict[str, tuple[str, float, int | None]] = {}
    for name, rows in kpis[kpis["seed"].notna() & kpis[SCORE].notna()].groupby("controller", sort=False):
        best = rows.loc[rows[SCORE].idxmax()]
        seed = int(best["seed"])
        offered[str(name)] = (f"{str(name).upper()} (seed {seed}, the best of {len(rows)})", float(best[SCORE]), seed)
    baselines = kpis[kpis["seed"].isna()].set_index("controller")
    for name, label in BASELINES.items():
        if name in baselines.index:
            offered[name] = (label, float(baselines.loc[name, SCORE]), None)
    return offered


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's agents (each by its best seed) and its one-hour baselines, with their share of the
    perfect-foresight LP's saving on the held-out months."""
    del metrics
    return [Candidate(name, label, score, SCORE, learnt=seed is not None, network=seed is not None)
            for name, (label, score, seed) in _offered(run_folder).items() if np.isfinite(score)]


def _hour_net(params: BuildingParams, fraction: Array, obs: Array) -> Array:
    """The homes' summed net load (kWh, + import) of the hour of ``obs`` after each battery requests
    ``fraction`` (nominal capacity)."""
    homes = obs[NUM_SHARED:].reshape(-1, NUM_PER_BUILDING)
    load, pv, soc = homes[:, 0], homes[:, 1], homes[:, 2]
    move = params.battery_step(fraction, soc * params.capacity, params.capacity)
    return (load - pv + move.charge - move.discharge).sum()


def _attributions(fraction: Callable[[Array], Array], reference: Array, groups: Array) -> Callable[[Array], Array]:
    """``obs (F,) -> (G,)``: integrated gradients of the first home's action from ``reference``, summed by group."""
    alphas = (jnp.arange(IG_STEPS, dtype=jnp.float32) + 0.5) / IG_STEPS
    gradient = jax.vmap(jax.grad(lambda x: fraction(x)[0]))

    def attribute(obs: Array) -> Array:
        path = reference + alphas[:, None] * (obs - reference)
        return ((obs - reference) * gradient(path).mean(0)) @ groups

    return attribute


def _compiled(deployed: Controller, other: Controller, params: BuildingParams, reference: Array,
              groups: Array) -> Callable[[Array], dict[str, Array]]:
    """The jitted batch answer of ``deployed`` beside ``other``."""
    net = jax.vmap(lambda f, o: _hour_net(params, f, o))
    explain = None if deployed.q_values is not None else _attributions(deployed.fraction, reference, groups)

    def answer(obs: Array) -> dict[str, Array]:
        action, alternative = jax.vmap(deployed.fraction)(obs), jax.vmap(other.fraction)(obs)
        found = {"action": action, "alternative": alternative, "net": net(action, obs),
                 "alternative_net": net(alternative, obs), "idle_net": net(jnp.zeros_like(action), obs)}
        if explain is None:
            found["q_values"] = jax.vmap(deployed.q_values)(obs)
        else:
            found["attributions"] = jax.vmap(explain)(obs)
            found["reference_action"] = deployed.fraction(reference)[0]
        return found

    return jax.jit(answer)


def _group_matrix(scenario: Scenario) -> tuple[tuple[str, ...], np.ndarray]:
    """The run's feature groups and the ``(F, G)`` 0/1 matrix summing features into them."""
    names = BuildingEnv(scenario.num_buildings).feature_names()
    groups = feature_groups(names)
    matrix = np.zeros((len(names), len(groups)), np.float32)
    for g, members in enumerate(groups.values()):
        matrix[[names.index(m) for m in members], g] = 1.0
    return tuple(groups), matrix


def load(run_folder: Path, candidate: str) -> BuildingPolicy:
    """Candidate ``candidate`` of the run, compiled and warmed up on its example state.

    Raises:
        InputError: the candidate is not one the run offers, or the run saved no deployment.
    """
    candidate, alternative = deployed_and_alternative(candidates(run_folder, {}), candidate)
    offered = _offered(run_folder)
    scenario = load_scenario(run_folder)
    deployed = controller(run_folder, scenario, candidate, offered[candidate][2])
    other = controller(run_folder, scenario, alternative, offered[alternative][2])
    _, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    district = scenario.data()
    rows = np.flatnonzero(scenario.split_rows(Split.TRAIN))
    names, matrix = _group_matrix(scenario)
    answer = _compiled(deployed, other, params, reference_observation(params, jnp.asarray(rows)),
                       jnp.asarray(matrix))
    errors = ForecastErrors.of(np.asarray(params.load), np.asarray(params.pv), np.asarray(district.hour), rows)
    policy = BuildingPolicy(candidate, alternative, scenario.num_buildings, names, deployed.levels, answer, errors,
                            float(params.feed_in_price))
    decide(policy, [HourState.parse(_example(scenario, params))])
    return policy


def in_control_residuals(run_folder: Path, candidate: str) -> InControl:
    """The monitor's in-control residuals of the run's decisions (``forecast_error.in_control``): the
    training months' bills standardised by the intervals ``decide`` gives, whichever ``candidate``."""
    del candidate  # the bill's interval is priced with the batteries idle for every candidate
    scenario = load_scenario(run_folder)
    _, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    load_kwh, pv_kwh = np.asarray(params.load), np.asarray(params.pv)
    hour, rows = np.asarray(scenario.data().hour), np.flatnonzero(scenario.split_rows(Split.TRAIN))
    errors = ForecastErrors.of(load_kwh, pv_kwh, hour, rows)
    return in_control(load_kwh, pv_kwh, np.asarray(params.price), float(params.feed_in_price), hour, rows, errors)


def _observations(policy: BuildingPolicy, states: Sequence[HourState]) -> np.ndarray:
    """The ``(B, F)`` observations of the states, each checked to describe the run's homes."""
    for state in states:
        for name in STATE_HOME_FIELDS:
            if len(getattr(state, name)) != policy.homes:
                raise InputError(f"state.{name}", f"needs {policy.homes} values, one per home of the run")
    return observations(states)


def _answers(policy: BuildingPolicy, obs: np.ndarray) -> dict[str, np.ndarray]:
    """``policy.answer`` on every row, ``CHUNK`` rows (padded) a call: one compiled program for every
    batch, so a state's answer never depends on the batch it came in."""
    padded = np.zeros((-(-len(obs) // CHUNK) * CHUNK, obs.shape[1]), np.float32)
    padded[: len(obs)] = obs
    parts = [policy.answer(jnp.asarray(padded[i : i + CHUNK])) for i in range(0, len(padded), CHUNK)]
    return {k: (np.asarray(parts[0][k]) if np.ndim(parts[0][k]) == 0
                else np.concatenate([np.asarray(p[k]) for p in parts])[: len(obs)]) for k in parts[0]}


def _action(fractions: list[float]) -> dict[str, Any]:
    return {"battery": fractions, "in_words": [describe_action(f) for f in fractions]}


def decide(policy: BuildingPolicy, states: Sequence[HourState]) -> list[Decision]:
    """The deployed controller's action for each hour, the hour's expected bill after it with its 95%
    interval, its expected saving on leaving the batteries idle (``value``, $), the alternative's action
    and saving, and the reasons."""
    if not states:
        return []
    found = _answers(policy, _observations(policy, states))
    action, other = found["action"].tolist(), found["alternative"].tolist()
    price = np.array([s.price_usd_per_kwh for s in states])
    hour = np.array([s.hour for s in states])
    bill, low, high = bill_forecast(found["net"], price, policy.feed_in_price, hour, policy.errors)
    other_bill, idle = (bill_forecast(found[k], price, policy.feed_in_price, hour, policy.errors)[0]
                        for k in ("alternative_net", "idle_net"))
    if "q_values" in found:
        labels = [describe_action(level) for level in policy.levels]
        reasons = [{"q_values": dict(zip(labels, q, strict=True))} for q in found["q_values"].tolist()]
    else:
        start = float(found["reference_action"])
        reasons = [{"explains": "the first home's action", "reference_action": start,
                    "attributions": dict(zip(policy.groups, a, strict=True))} for a in found["attributions"].tolist()]
    return [Decision(action=_action(action[i]), expected=float(bill[i]), value=float(idle[i] - bill[i]),
                     interval=(float(low[i]), float(high[i])),
                     alternative={"policy": policy.alternative, "action": _action(other[i]),
                              "value": float(idle[i] - other_bill[i])},
                     reasons=reasons[i]) for i in range(len(states))]


def _example(scenario: Scenario, params: BuildingParams) -> dict[str, Any]:
    """The first held-out day's 5 to 6 pm hour, the batteries half-charged."""
    district = scenario.data()
    row = scenario.eval_window().start_hour + 17
    return state_at(params, row, hour=int(district.hour[row]), month=int(district.month[row]),
                    weekend=bool(district.weekend[row]), holiday=bool(district.holiday[row]),
                    soc=np.asarray(0.5 * (params.soc_min + params.soc_max)))


def example_state(run_folder: Path) -> dict[str, Any]:
    """A held-out evening hour of the run's scenario (``_example``), as plain JSON."""
    scenario = load_scenario(run_folder)
    _, params = BuildingEnv.from_scenario(scenario, Split.EVAL)
    return json.loads(json.dumps(_example(scenario, params)))
