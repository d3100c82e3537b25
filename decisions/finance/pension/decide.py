"""Pension's decide contract (``kit.decide.DecideModule``): the fund's month, assets, today's key rates
and members in, this month's allocation and contribution rate out, from a run's saved SNAPO policy,
fixed-mix table and scenario (``deploy``), without retraining."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from decisions.core.numbers import Float32
from decisions.core.settings import Settings, finite_items
from decisions.errors import InputError
from decisions.finance.pension.assemble import to_params
from decisions.finance.pension.deploy import answer, common_normals
from decisions.finance.pension.params import DT, FACTOR_NAMES, PensionParams
from decisions.finance.pension.policy import is_fixed_mix
from decisions.finance.pension.scenario import Scenario
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative
from decisions.kit.decide_batch import bucket, padded
from decisions.kit.run_files import saved_comparison, saved_scenario, saved_table

OUTCOME = "the funding ratio (assets over liabilities) at the start of next month"
"""What an outcome's number is."""

CANDIDATES = {"snapo": "SNAPO allocation network (learnt)", "fixed_mix": "best fixed mix (constant weights and rate)"}
"""The policies a run offers, by their method name in the study's comparison table."""

POLICY_FILE = "snapo_policy.msgpack"
"""The trained SNAPO policy a run saves (``report.PensionReport.save_files``)."""

Rate = Annotated[float, Field(ge=-0.2, le=0.5, allow_inf_nan=False), Float32()]


class FundState(Settings):
    """The fund today: the month of the run's horizon, its assets, today's zero rates and its members."""

    section = "state"

    month: int = Field(ge=0, le=719, description="Today, as a month of the run's horizon (0: its start).")
    assets: Annotated[float, Float32()] = Field(gt=0, allow_inf_nan=False, description="The fund's assets today.")
    key_rates: Annotated[list[Rate], finite_items("tenor {i}")] = Field(
        min_length=1, max_length=60,
        description="Today's zero rates (annual, continuous) at the run's key tenors, shortest first.")
    members: Annotated[float, Float32()] = Field(
        gt=0, allow_inf_nan=False, description="Members today, actives and pensioners (scales the run's liability).")


STATE_MODEL = FundState


@dataclass(frozen=True)
class FundPolicy:
    """A run's deployed policy (``name``) and the other candidate (``alternative``): one allocation
    network with each one's parameters, the run's problem and the common paths."""

    name: str
    alternative: str
    network: Any
    policy_params: Any
    other_params: Any
    params: PensionParams
    normals: Any


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """SNAPO and the best fixed mix (both need the run's saved network), with the study's mean
    objective on its common evaluation paths."""
    del metrics
    if not (run_folder / POLICY_FILE).is_file():
        return []
    table = saved_comparison(run_folder)
    return [Candidate(n, CANDIDATES[n], float(table.loc[n, "mean"]), "objective", learnt=n == "snapo",
                      network=n == "snapo")
            for n in CANDIDATES if n in table.index]


def _fixed_mix(run_folder: Path, network: Any, params: PensionParams) -> Any:
    """The fixed mix's parameters, rebuilt from its saved allocation table (its weights and rate)."""
    from decisions.finance.pension.policy import fixed_mix_params

    first = saved_table(run_folder, "fixed_mix_allocation").iloc[0]
    low, high = float(params.contribution_min), float(params.contribution_max)
    share = 0.5 if high <= low else (float(first["contribution_rate"]) - low) / (high - low)
    return fixed_mix_params(network, [float(first[a]) for a in params.asset_names], share)


def load(run_folder: Path, candidate: str) -> FundPolicy:
    """The run's ``candidate`` with the other beside it, compiled on the example state.

    Raises:
        InputError: the candidate is not one the run offers, or the run saved no policy or scenario.
    """
    if candidate not in CANDIDATES:
        raise InputError("policy", f"{candidate!r} is not a pension policy ({', '.join(CANDIDATES)})")
    if not (run_folder / POLICY_FILE).is_file() or not (run_folder / "fixed_mix_allocation.csv").is_file():
        raise InputError("run", "it saved no policies (recorded before decisions could be taken)")
    from decisions.finance.pension.snapo_policy import load_policy

    params = to_params(saved_scenario(run_folder, Scenario))
    trained = load_policy(run_folder / POLICY_FILE)
    found = {"snapo": trained.params, "fixed_mix": _fixed_mix(run_folder, trained.policy, params)}
    _, other = deployed_and_alternative(candidates(run_folder, {}), candidate)
    loaded = FundPolicy(candidate, other, trained.policy, found[candidate], found[other], params,
                        common_normals(params))
    decide(loaded, [FundState.parse(example_state(run_folder))])
    return loaded


def _arrays(policy: FundPolicy, states: Sequence[FundState]) -> dict[str, np.ndarray]:
    """The batch as arrays, checked against the run's horizon and key tenors."""
    params = policy.params
    for state in states:
        if state.month >= params.months:
            raise InputError("state.month", f"must be below the run's horizon of {params.months} months")
        if len(state.key_rates) != len(params.tenors):
            raise InputError("state.key_rates", f"give {len(params.tenors)} rates, at tenors "
                                                f"{', '.join(f'{t:g}' for t in params.tenors)} years")
    return {"month": np.array([s.month for s in states], np.int32),
            "assets": np.array([s.assets for s in states], np.float32),
            "key_rates": np.array([s.key_rates for s in states], np.float32),
            "members": np.array([s.members for s in states], np.float32)}


def _action(names: Sequence[str], weights: Sequence[float], rate: float) -> dict[str, Any]:
    return {"weights": dict(zip(names, weights, strict=True)), "contribution_rate": rate}


def decide(policy: FundPolicy, states: Sequence[FundState]) -> list[Decision]:
    """This month's portfolio weights and contribution rate (x payroll) for each state, with the
    policy's expected objective from today, next month's expected funding ratio and the central 95%
    of its paths, the alternative's decision and objective, what the policy sees (today's funding
    ratio and curve factors) and today's liability (its reasons), and the objective's derivatives by
    today's assets, each key rate and the members."""
    if not states:
        return []
    arrays = _arrays(policy, states)
    size = bucket(len(states))
    order = np.argsort(arrays["month"], kind="stable")  # alike months together: see ``deploy.answer``
    found = answer(policy.network, policy.policy_params, policy.other_params, policy.params,
                   *(padded(arrays[k][order], size) for k in ("month", "assets", "key_rates", "members")),
                   policy.normals, fixed=(is_fixed_mix(policy.policy_params), is_fixed_mix(policy.other_params)))
    back = np.argsort(order)
    out = {k: np.asarray(v)[: len(states)][back].tolist() for k, v in found.items()}
    names, tenors = policy.params.asset_names, [f"rate_{t:g}y" for t in policy.params.tenors]
    decisions = []
    for i in range(len(states)):
        decisions.append(Decision(
            action=_action(names, out["weights"][i], out["rate"][i]),
            expected=out["mean"][i],
            value=out["value"][i],
            interval=(out["low"][i], out["high"][i]),
            alternative={"policy": CANDIDATES[policy.alternative], "value": out["alt_value"][i],
                         "action": _action(names, out["alt_weights"][i], out["alt_rate"][i])},
            reasons={"funding_ratio": out["ratio"][i], "liability": out["liability"][i],
                     "curve_factors": dict(zip(FACTOR_NAMES, out["factors"][i], strict=True))},
            sensitivities={"assets": out["d_assets"][i], "members": out["d_members"][i],
                           **dict(zip(tenors, out["d_rates"][i], strict=True))}))
    return decisions


def example_state(run_folder: Path) -> dict[str, Any]:
    """Halfway through the run's horizon on the run's curve, funded as the SNAPO policy's median path
    then, with the run's projected members."""
    from decisions.finance.pension.liabilities import survival

    scenario = saved_scenario(run_folder, Scenario)
    params = to_params(scenario)
    month = params.months // 2
    fan = saved_table(run_folder, "funding_fan")
    members = float(np.sum(np.asarray(params.counts) * np.asarray(survival(params, params.ages, month * DT))))
    return {"month": month, "assets": float(fan["p50"].iloc[month]) * _liability_at(params, month),
            "key_rates": [float(r) for r in scenario.curve.rates], "members": members}


def _liability_at(params: PensionParams, month: int) -> float:
    """The run's projected liability at ``month`` on the run's curve (factors at zero)."""
    import jax.numpy as jnp

    from decisions.finance.pension.liabilities import liability_value
    from decisions.finance.pension.simulator import prepare

    world = prepare(params)
    return float(liability_value(world.amounts[month], world.liability_discount, jnp.zeros(3, params.key_rates.dtype)))
