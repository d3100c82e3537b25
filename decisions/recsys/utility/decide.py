"""Utility's decide contract (``kit.decide.DecideModule``): a request's context in, the utility-weight
vector the ranker should use out, from the run's saved Q-network (``qnet.msgpack``), without retraining.

The candidates are the run's deployable policies at its reference lambda (``study.REFERENCE_LAMBDA``'s
nearest sweep point, linear scalarisation): the learnt Q-network's greedy weights, the best global
weights and the production weights (their vectors read from the run's front table). Every answer is
the Q-network's prediction: the chosen vector's success probability and lambda-utility, and the
vectors it rates best. A batch is answered ``CHUNK`` requests a compiled call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
from jax import Array
from pydantic import Field

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative
from decisions.recsys.utility import objectives as obj
from decisions.recsys.utility import qnet
from decisions.recsys.utility.simulator import SEGMENTS, Profile
from decisions.recsys.utility.study import REFERENCE_LAMBDA

OUTCOME = "whether the request's session succeeds (at least one item saved): 1 or 0 (expected: its probability)"
"""What an outcome's number is."""

CHUNK = 256
"""Requests of one compiled call (a batch is padded to a multiple)."""
TOP = 5
"""How many of the best-rated weight vectors a decision's reasons list."""
CANDIDATES = {"learnt": "learnt Q-network's weights per request", "global": "best global weights",
              "production": "production weights"}
"""The policies a run offers, by their method in its front table."""
HEADS = ("w_save", "w_hide", "w_revenue")


class RequestState(Settings):
    """One request's context, as the Q-network sees it."""

    section = "state"

    segment: Literal["new", "casual", "regular", "power"] = Field(description="The user's segment.")
    tenure: float = Field(ge=-10.0, le=10.0, description="The user's tenure, standardised.")
    mobile: bool = Field(description="The request comes from a mobile device.")
    hour: float = Field(ge=0.0, lt=24.0, description="Hour of the day, [0, 24).")
    activity: float = Field(ge=-10.0, le=10.0, description="The user's recent activity, standardised.")


STATE_MODEL = RequestState


@dataclass(frozen=True)
class UtilityPolicy:
    """Candidate ``name`` deployed at ``lam`` beside ``alternative``: the model, each candidate's fixed
    vector (None for the learnt one) and the compiled batch answer."""

    name: str
    alternative: str
    lam: float
    weights: np.ndarray
    answer: Callable[..., dict[str, Array]]


def _reference_rows(run_folder: Path) -> pd.DataFrame:
    """The front's rows of the deployable candidates at the reference lambda (production: its one row)."""
    front = pd.read_csv(run_folder / "front.csv")
    lambdas = front["lambda"].dropna().unique()
    lam = float(lambdas[np.argmin(np.abs(lambdas - REFERENCE_LAMBDA))])
    at = front[(front["lambda"] == lam) & (front["scalarisation"] == "linear")] if len(lambdas) else front[:0]
    rows = pd.concat([at, front[front["method"] == "production"]])
    rows = rows[rows["method"].isin(list(CANDIDATES))].drop_duplicates("method").set_index("method")
    return rows.assign(reference_lambda=lam)


def _model(run_folder: Path) -> qnet.QModel:
    path = run_folder / "qnet.msgpack"
    if not path.is_file():
        raise InputError("run", "it saved no Q-network (qnet.msgpack)")
    model = qnet.load_model(path)
    if model.conditioning != "vector":
        raise InputError("run", "its Q-network takes lambda as an input and predicts no success probability")
    return model


def _utility(row: pd.Series, lam: float, scales: np.ndarray) -> float:
    """A front row's lambda-utility (linear), from its engagement and revenue."""
    return float(obj.linear(jnp.asarray([row["engagement"], row["revenue"]]), lam, jnp.asarray(scales)))


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The learnt, global and production weights with their lambda-utility on the run's test requests at
    the reference lambda."""
    del metrics
    rows, scales = _reference_rows(run_folder), np.asarray(_model(run_folder).scales)
    return [Candidate(name, f"{label} (lambda {row['reference_lambda']:.2f})",
                      _utility(row, row["reference_lambda"], scales), "lambda_utility",
                      learnt=name == "learnt", network=name == "learnt")
            for name, label in CANDIDATES.items() if name in rows.index for row in [rows.loc[name]]]


def _fixed(model: qnet.QModel, row: pd.Series) -> int:
    """The index of the weight vector a fixed candidate's front row holds (its mean over one vector)."""
    vector = np.asarray([row[h] for h in HEADS], np.float32)
    return int(np.argmin(np.abs(np.asarray(model.weights) - vector).sum(axis=1)))


def _compiled(model: qnet.QModel, lam: float, deployed: int | None, other: int | None) -> Callable[..., dict[str, Array]]:
    """The jitted answer on a batch of profiles: each candidate's vector (``None``: the learnt greedy one)."""

    def answer(segment: Array, tenure: Array, mobile: Array, hour: Array, activity: Array) -> dict[str, Array]:
        context = Profile(segment, tenure, mobile, hour, activity).context()
        outcomes = qnet.predict_outcomes(model, context)
        utility = obj.linear(obj.objectives(outcomes, model.hide_cost), lam, model.scales)
        greedy = jnp.argmax(utility, axis=-1)
        pick = {name: greedy if index is None else jnp.full_like(greedy, index)
                for name, index in (("action", deployed), ("alternative", other))}
        rows = jnp.arange(context.shape[0])
        best, top = jax.lax.top_k(utility, TOP)
        return {**pick, "outcomes": outcomes[rows, pick["action"]], "value": utility[rows, pick["action"]],
                "alternative_value": utility[rows, pick["alternative"]], "top": top, "top_value": best}

    return jax.jit(answer)


def load(run_folder: Path, candidate: str) -> UtilityPolicy:
    """Candidate ``candidate`` of the run at its reference lambda, compiled and warmed up.

    Raises:
        InputError: the candidate is not one the run offers, or the run saved no usable Q-network.
    """
    candidate, alternative = deployed_and_alternative(candidates(run_folder, {}), candidate)
    model, rows = _model(run_folder), _reference_rows(run_folder)
    index = {name: None if name == "learnt" else _fixed(model, rows.loc[name]) for name in (candidate, alternative)}
    lam = float(rows["reference_lambda"].iloc[0])
    policy = UtilityPolicy(candidate, alternative, lam, np.asarray(model.weights),
                           _compiled(model, lam, index[candidate], index[alternative]))
    decide(policy, [RequestState.parse(example_state(run_folder))])
    return policy


def _answers(policy: UtilityPolicy, states: Sequence[RequestState]) -> dict[str, np.ndarray]:
    """The compiled answer on every state, ``CHUNK`` a call (padded)."""
    size = -(-len(states) // CHUNK) * CHUNK
    columns = {"segment": np.zeros(size, np.int32), "tenure": np.zeros(size, np.float32),
               "mobile": np.zeros(size, np.float32), "hour": np.zeros(size, np.float32),
               "activity": np.zeros(size, np.float32)}
    n = len(states)
    columns["segment"][:n] = [SEGMENTS.index(s.segment) for s in states]
    for name in ("tenure", "mobile", "hour", "activity"):
        columns[name][:n] = [float(getattr(s, name)) for s in states]
    parts = [policy.answer(**{k: jnp.asarray(v[i : i + CHUNK]) for k, v in columns.items()})
             for i in range(0, size, CHUNK)]
    return {k: np.concatenate([np.asarray(p[k]) for p in parts])[:n] for k in parts[0]}


def _vector(policy: UtilityPolicy, index: int) -> dict[str, Any]:
    return {"vector": index, **{h: float(w) for h, w in zip(HEADS, policy.weights[index], strict=True)}}


def decide(policy: UtilityPolicy, states: Sequence[RequestState]) -> list[Decision]:
    """The deployed weight vector for each request, its predicted success probability (``expected``)
    and lambda-utility (``value``), the alternative's, and the best-rated vectors with their
    predicted outcomes (``reasons``)."""
    if not states:
        return []
    found = _answers(policy, states)
    action, other = found["action"].tolist(), found["alternative"].tolist()
    outcomes, value, other_value = found["outcomes"].tolist(), found["value"].tolist(), found["alternative_value"].tolist()
    top, top_value = found["top"].tolist(), found["top_value"].tolist()
    return [Decision(action=_vector(policy, action[i]), expected=outcomes[i][0], value=value[i],
                     alternative={"policy": policy.alternative, "action": _vector(policy, other[i]),
                                  "value": other_value[i]},
                     reasons={"lambda": policy.lam, "predicted": dict(zip(("success", "hides", "revenue"), outcomes[i],
                                                                          strict=True)),
                              "best_vectors": dict(zip((f"vector {k}" for k in top[i]), top_value[i], strict=True))})
            for i in range(len(states))]


def example_state(run_folder: Path) -> dict[str, Any]:
    """A regular user's evening request on mobile, of average tenure and activity (plain JSON)."""
    del run_folder
    return {"segment": "regular", "tenure": 0.0, "mobile": True, "hour": 20.5, "activity": 0.0}
