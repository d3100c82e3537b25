"""Chronic care's decide contract (``kit.decide.DecideModule``): a patient's visit state in, the
recommended action out, from the policies a run saved (``deployable``), without retraining."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field

from decisions.core.settings import Settings
from decisions.errors import InputError
from decisions.health.chronic.deployable import CANDIDATES, FILE_STEM, load_policies
from decisions.health.chronic.model import CONTROLLED, RAMP, state_index
from decisions.health.chronic.settings import ACTIONS, Disease
from decisions.kit.decide import Candidate, Decision, deployed_and_alternative

OUTCOME = "the control band at the next visit (0: in target, 3: furthest out)"
"""What an outcome's number is."""


class VisitState(Settings):
    """One patient at one visit: the disease, the clinic's regime, the visit (0 first) and the state."""

    section = "state"

    disease: Disease = Field(description="htn or t2d.")
    regime: str = Field("full", min_length=1, description="The clinic's epsilon regime (one of the run's).")
    visit: int = Field(ge=0, le=59, description="The visit, 0 for the first.")
    band: int = Field(ge=0, le=3, description="Control band now (0: in target).")
    step: int = Field(ge=0, le=3, description="Medication step now.")
    adherent: bool = Field(description="Whether the patient takes the treatment.")
    side_effect: bool = Field(description="Whether a side effect is present.")
    months_since_intensification: int = Field(ge=0, le=600, description="Months since the last intensification.")
    controlled: bool = Field(False, description="Control already confirmed (in band 0 at two visits in a row).")


STATE_MODEL = VisitState


@dataclass(frozen=True)
class ChronicPolicy:
    """A run's saved policies and the candidate deployed (``name``); the best other one answers as the
    alternative."""

    saved: Mapping[str, Any]
    name: str
    alternative: str


def _scores(run_folder: Path) -> dict[str, float]:
    """Each candidate's TTC share in the train regime, mean over the run's diseases (its comparison table)."""
    import pandas as pd

    report = json.loads((run_folder / "report.json").read_text())
    comparison = pd.read_csv(run_folder / "comparison.csv")
    rows = comparison[comparison["regime"] == report["fields"]["train_regime"]]
    return rows.groupby("method")["ttc_share"].mean().to_dict()


def candidates(run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]:
    """The run's deployable policies with their TTC share in the train regime (mean over diseases)."""
    del metrics
    scores = _scores(run_folder)
    return [Candidate(name, label, float(scores[name]), "ttc_share", learnt=name != "usual_care")
            for name, label in CANDIDATES.items() if name in scores]


def load(run_folder: Path, candidate: str) -> ChronicPolicy:
    """The run's saved policies, ``candidate`` deployed.

    Raises:
        InputError: the candidate is not one the run offers, or the run saved no policies.
    """
    if candidate not in CANDIDATES:
        raise InputError("policy", f"{candidate!r} is not a chronic-care policy ({', '.join(CANDIDATES)})")
    path = run_folder / f"{FILE_STEM}.msgpack"
    if not path.is_file():
        raise InputError("run", "it saved no deployable policies (recorded before decisions could be taken)")
    candidate, alternative = deployed_and_alternative(candidates(run_folder, {}), candidate)
    return ChronicPolicy(load_policies(path), candidate, alternative)


def _state(state: VisitState) -> int:
    if state.controlled:
        return CONTROLLED
    since = min(state.months_since_intensification, RAMP - 1)
    return state_index(state.band, state.step, int(state.adherent), int(state.side_effect), since)


def _one(policy: ChronicPolicy, state: VisitState) -> Decision:
    disease = policy.saved.get(state.disease)
    if disease is None:
        raise InputError("state.disease", f"{state.disease!r} was not studied by the deployed run")
    regime = disease["regimes"].get(state.regime)
    if regime is None:
        raise InputError("state.regime", f"{state.regime!r} is not one of the run's regimes ({', '.join(disease['regimes'])})")
    horizon = regime["q"].shape[0]
    if state.visit >= horizon:
        raise InputError("state.visit", f"must be below the run's horizon of {horizon} visits")
    t, s = state.visit, _state(state)
    action = int(regime["actions"][policy.name][t, s])
    other = int(regime["actions"][policy.alternative][t, s])
    q = regime["q"][t, :, s]
    mean, spread = float(disease["band_mean"][action, s]), float(disease["band_std"][action, s])
    return Decision(
        action={"action": ACTIONS[action]},
        expected=mean,
        value=float(regime["values"][policy.name][t, s]),
        interval=(mean - 1.96 * spread, mean + 1.96 * spread),
        alternative={"policy": CANDIDATES[policy.alternative], "action": ACTIONS[other],
                     "value": float(regime["values"][policy.alternative][t, s])},
        reasons={"q_values": {ACTIONS[a]: float(q[a]) for a in range(len(ACTIONS)) if np.isfinite(q[a])}})


def decide(policy: ChronicPolicy, states: Sequence[VisitState]) -> list[Decision]:
    """The deployed policy's action for each state, with its expected value-to-go, the expected next
    band (and a 95% interval from the learnt machine), the alternative's action and value, and the
    learnt Q-values of the allowed actions."""
    return [_one(policy, state) for state in states]


def example_state(run_folder: Path) -> dict[str, Any]:
    """A first visit of a patient of the run's first disease, in band 2 at step 1, in the train regime."""
    import pandas as pd

    report = json.loads((run_folder / "report.json").read_text())
    disease = str(pd.read_csv(run_folder / "comparison.csv", usecols=["disease"])["disease"].iloc[0])
    return {"disease": disease, "regime": report["fields"]["train_regime"], "visit": 0, "band": 2,
            "step": 1, "adherent": True, "side_effect": False, "months_since_intensification": 6}
