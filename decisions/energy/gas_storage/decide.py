"""Gas storage's decide contract (``kit.decide.DecideModule``): today's day, inventory, forward curve and
spot in, today's move out, from a run's saved policy and scenario (``deploy``), without retraining."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import jax.numpy as jnp
import numpy as np
from pydantic import Field

from decisions.core.numbers import PRICE_MAX, VOLUME_MAX, Float32
from decisions.core.settings import Settings
from decisions.energy.gas_storage.deploy import Schedule, answer, common_noise
from decisions.energy.gas_storage.facility import inventory_band
from decisions.energy.gas_storage.params import GasStorageParams, to_params
from decisions.energy.gas_storage.scenario import PriceCurve, Scenario
from decisions.errors import InputError
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative
from decisions.kit.decide_batch import bucket, padded
from decisions.kit.run_files import saved_comparison, saved_scenario, saved_table

OUTCOME = "tomorrow's spot price (currency per unit of gas; today's on the last day)"
"""What an outcome's number is."""

CANDIDATES = {"snapo": "SNAPO base-stock policy (learnt)",
              "intrinsic_lp": "day-0 intrinsic LP schedule (static intrinsic)",
              "do_nothing": "do nothing (hold, except forced moves)"}
"""The policies a run can offer, by their method name in the study's comparison table."""

POLICY_FILE = "snapo_policy.msgpack"
"""The trained SNAPO policy a run saves (``report.GasStorageReport.save_files``)."""

PositivePrice = Annotated[float, Field(gt=0, allow_inf_nan=False), Float32(PRICE_MAX)]


class StorageState(Settings):
    """Today at the facility: the day of the run's horizon, the inventory, today's forward curve and spot."""

    section = "state"

    day: int = Field(ge=0, le=3_649, description="Today, as a day of the run's horizon (0: its first delivery day).")
    inventory: Annotated[float, Float32(VOLUME_MAX)] = Field(
        ge=0, allow_inf_nan=False, description="Inventory before today's move (within the facility's feasible band).")
    forward_curve: PriceCurve = Field(
        min_length=1, max_length=3_650,
        description="Today's forward prices for delivery today and each later day of the run's horizon.")
    spot: PositivePrice | None = Field(None, description="Today's spot price (default: the curve's first price).")


STATE_MODEL = StorageState


@dataclass(frozen=True)
class StoragePolicy:
    """A run's deployed policy (``name``) and the best other candidate (``alternative``), each as a
    ``simulator.Policy`` with its parameters, on the run's problem ``params``, with the common paths'
    factor shocks (``deploy.common_noise``) and the facility's feasible inventory band."""

    name: str
    policy: Any
    policy_params: Any
    alternative: str
    other: Any
    other_params: Any
    params: GasStorageParams
    noise: Any
    band: tuple[np.ndarray, np.ndarray]


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's policies that answer one state, with the study's mean discounted value on its common
    evaluation paths (SNAPO only where the run saved its policy)."""
    del metrics
    table = saved_comparison(run_folder)
    offered = [name for name in CANDIDATES if name in table.index]
    if not (run_folder / POLICY_FILE).is_file():
        offered = [name for name in offered if name != "snapo"]
    return [Candidate(name, CANDIDATES[name], float(table.loc[name, "mean"]), "value",
                      learnt=name == "snapo", network=name == "snapo")
            for name in offered]


def _policy(run_folder: Path, name: str, horizon: int) -> tuple[Any, Any]:
    """``(policy, policy_params)`` of a candidate."""
    if name == "snapo":
        from decisions.energy.gas_storage.snapo_policy import load_policy

        trained = load_policy(run_folder / POLICY_FILE)
        return trained.policy, trained.params
    if name == "intrinsic_lp":
        moves = saved_table(run_folder, "schedule")["lp_net_injection"].to_numpy(np.float32)
        return Schedule(), {"moves": jnp.asarray(moves)}
    return Schedule(), {"moves": jnp.zeros(horizon, np.float32)}


def load(run_folder: Path, candidate: str) -> StoragePolicy:
    """The run's ``candidate`` with the best other candidate beside it, compiled on the example state.

    Raises:
        InputError: the candidate is not one the run offers, or the run saved no scenario or policy.
    """
    candidate, alternative = deployed_and_alternative(candidates(run_folder, {}), candidate)
    scenario = saved_scenario(run_folder, Scenario)
    params = to_params(scenario)
    band = tuple(np.asarray(b) for b in inventory_band(params))
    loaded = StoragePolicy(candidate, *_policy(run_folder, candidate, scenario.horizon), alternative,
                           *_policy(run_folder, alternative, scenario.horizon), params, common_noise(params), band)
    decide(loaded, [StorageState.parse(example_state(run_folder))])
    return loaded


def _arrays(policy: StoragePolicy, states: Sequence[StorageState]) -> dict[str, np.ndarray]:
    """The batch as arrays (``forward``: the run's curve with today's in place), checked against the run."""
    horizon = policy.params.horizon
    day = np.array([s.day for s in states], np.int32)
    inventory = np.array([s.inventory for s in states], np.float64)
    late = np.flatnonzero(day >= horizon)
    if late.size:
        raise InputError("state.day", f"must be below the run's horizon of {horizon} days")
    forward = np.repeat(np.asarray(policy.params.forward)[None], len(states), axis=0)
    for i, state in enumerate(states):
        if len(state.forward_curve) != horizon - state.day:
            raise InputError("state.forward_curve", f"give {horizon - state.day} prices (day {state.day} to the end)")
        forward[i, state.day:] = state.forward_curve
    low, high = policy.band
    slack = 1e-5 * float(policy.params.capacity)
    outside = np.flatnonzero((inventory < low[day] - slack) | (inventory > high[day] + slack))
    if outside.size:
        t = int(day[outside[0]])
        raise InputError("state.inventory", f"must lie in the feasible band [{low[t]:.6g}, {high[t]:.6g}] on day {t}")
    spots = [s.spot if s.spot is not None else s.forward_curve[0] for s in states]
    return {"day": day, "forward": forward.astype(np.float32), "inventory": inventory.astype(np.float32),
            "spot": np.array(spots, np.float32)}


def _reasons(name: str, plan: list[float], feasible: list[float]) -> dict[str, Any]:
    if name == "snapo":
        return {"inject_up_to": plan[0], "withdraw_down_to": plan[1], "feasible_move": feasible}
    return {"scheduled_move": plan[0], "feasible_move": feasible}


def decide(policy: StoragePolicy, states: Sequence[StorageState]) -> list[Decision]:
    """Today's net injection (negative: withdrawal) for each state, with the policy's expected discounted
    value from today, tomorrow's expected spot and its 95% interval, the alternative's move and value,
    the policy's reasons (its base-stock targets, or the scheduled move) and the value's derivatives by
    today's inventory, spot and each forward price (the policy's plan held: ``deploy.answer``)."""
    if not states:
        return []
    arrays = _arrays(policy, states)
    size = bucket(len(states))
    found = answer(policy.policy, policy.other, policy.policy_params, policy.other_params, policy.params,
                   *(padded(arrays[k], size) for k in ("day", "inventory", "forward", "spot")),
                   policy.noise)
    out = {k: np.asarray(v)[: len(states)].tolist() for k, v in found.items()}
    other = CANDIDATES[policy.alternative]
    names = [f"forward[{k}]" for k in range(policy.params.horizon)]
    decisions = []
    for i, state in enumerate(states):
        curve = dict(zip(names, out["d_forward"][i][state.day:], strict=False))
        decisions.append(Decision(
            action={"net_injection": out["move"][i]},
            expected=out["mean"][i],
            value=out["value"][i],
            interval=(out["low"][i], out["high"][i]),
            alternative={"policy": other, "action": {"net_injection": out["alt_move"][i]},
                         "value": out["alt_value"][i]},
            reasons=_reasons(policy.name, out["plan"][i], [out["lower"][i], out["upper"][i]]),
            sensitivities={"inventory": out["d_inventory"][i], "spot": out["d_spot"][i], **curve}))
    return decisions


def example_state(run_folder: Path) -> dict[str, Any]:
    """A third of the way through the run's horizon, at the LP schedule's inventory, on the run's curve."""
    scenario = saved_scenario(run_folder, Scenario)
    day = scenario.horizon // 3
    schedule = saved_table(run_folder, "schedule")
    inventory = float(schedule["lp_inventory"].iloc[day - 1]) if day else scenario.facility.start_inventory
    curve = [float(p) for p in scenario.forward_curve[day:]]
    return {"day": day, "inventory": inventory, "forward_curve": curve, "spot": curve[0]}
