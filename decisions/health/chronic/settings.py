"""Chronic care's validated input: pydantic, JAX-free; a bad value is refused naming its field."""

from __future__ import annotations

from itertools import pairwise
from typing import Annotated, Literal, NamedTuple, Self

from pydantic import Field, model_validator

from decisions.core.numbers import Float32
from decisions.core.settings import Settings

ACTIONS: tuple[str, ...] = ("intensify", "hold", "step_down", "check", "follow_up")
"""The actions of a visit, in the order of the machines' action axis."""

Action = Literal["intensify", "hold", "step_down", "check", "follow_up"]
Disease = Literal["htn", "t2d"]
Probability = Annotated[float, Field(ge=0.0, le=1.0), Float32(1.0)]
Cost = Annotated[float, Field(ge=0.0), Float32(1e3)]


class Machine(Settings):
    """One disease's state machine: how a month moves the control band, adherence and side effects.

    Bands 0 (controlled) to 3; medication steps 0 to 3. A month's effect is the medication step,
    scaled by the ramp of the months since the last intensification and by adherence; each unit of
    effect raises the chance of moving one band down and lowers the chance of moving one band up.
    """

    section = "htn"

    start_bands: tuple[Probability, Probability, Probability] = Field(
        (0.55, 0.35, 0.10), description="Shares starting in bands 1, 2 and 3 (they sum to 1).")
    start_step: int = Field(1, ge=0, le=3, description="Medication step at the first visit.")
    start_adherent: Probability = Field(0.7, description="Share adherent at the first visit.")
    improve_per_step: Probability = Field(0.12, description="Monthly chance of one band down per unit of effect.")
    worsen: Probability = Field(0.12, description="Monthly chance of one band up without treatment.")
    worsen_cut_per_step: Probability = Field(0.04, description="Cut in that chance per unit of effect.")
    low_adherence_effect: Probability = Field(0.3, description="Share of the effect kept when not adherent.")
    ramp: tuple[Probability, Probability, Probability] = Field(
        (0.5, 0.85, 1.0), description="Share of the effect 0, 1 and 2+ months after an intensification.")
    side_effect_per_step: Probability = Field(0.03, description="Monthly chance of a side effect per step.")
    side_effect_remit: Probability = Field(0.2, description="Monthly chance a side effect goes by itself.")
    check_resolves: Probability = Field(0.7, description="Chance a check (medication review) resolves one.")
    step_down_resolves: Probability = Field(0.8, description="Chance stepping down resolves one.")
    lapse: Probability = Field(0.06, description="Monthly chance an adherent patient stops adhering.")
    lapse_side_effect: Probability = Field(0.25, description="Extra lapse chance while a side effect lasts.")
    recover: Probability = Field(0.08, description="Monthly chance a non-adherent patient adheres again.")
    follow_up_adheres: Probability = Field(0.5, description="Chance a follow-up restores adherence.")

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        if abs(sum(self.start_bands) - 1.0) > 1e-6:
            raise ValueError(f"start_bands: must sum to 1 (got {sum(self.start_bands):g})")
        if self.lapse + self.lapse_side_effect > 1.0:
            raise ValueError("lapse_side_effect: lapse + lapse_side_effect must be at most 1")
        return self


class HtnMachine(Machine):
    """Hypertension (blood pressure bands): the defaults of ``Machine``."""

    section = "htn"


class T2dMachine(Machine):
    """Type 2 diabetes (HbA1c bands): slower response, more side effects (hypoglycaemia) than HTN."""

    section = "t2d"

    start_bands: tuple[Probability, Probability, Probability] = Field(
        (0.45, 0.40, 0.15), description="Shares starting in bands 1, 2 and 3 (they sum to 1).")
    improve_per_step: Probability = Field(0.15, description="Monthly chance of one band down per unit of effect.")
    worsen: Probability = Field(0.10, description="Monthly chance of one band up without treatment.")
    ramp: tuple[Probability, Probability, Probability] = Field(
        (0.3, 0.7, 1.0), description="Share of the effect 0, 1 and 2+ months after an intensification.")
    side_effect_per_step: Probability = Field(0.05, description="Monthly chance of a side effect per step.")
    lapse: Probability = Field(0.08, description="Monthly chance an adherent patient stops adhering.")


class Regime(Settings):
    """One deployment regime (epsilon): what a clinic can carry out. A visit happens every
    ``visit_every`` months (between visits treatment holds), offers ``actions``, and can intensify
    only up to medication step ``max_step``."""

    section = "regime"

    actions: tuple[Action, ...] = Field(ACTIONS, min_length=1, description="The actions a visit can carry out.")
    visit_every: int = Field(1, ge=1, le=12, description="Months between visits (visit capacity).")
    max_step: int = Field(3, ge=0, le=3, description="Highest medication step the clinic can titrate to.")

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: object) -> object:
        """A plain list of actions stands for a monthly regime without a titration limit."""
        return {"actions": value} if isinstance(value, list | tuple) else value

    @model_validator(mode="after")
    def _allows_something(self) -> Self:
        if len(set(self.actions)) != len(self.actions):
            raise ValueError("actions: an action listed twice")
        if self.actions == ("intensify",) and self.max_step < 3:
            raise ValueError(f"actions: allows no action at medication step {self.max_step} and above")
        return self


def _default_regimes() -> dict[str, Regime]:
    return {"full": Regime(),
            "no_labs": Regime(actions=("intensify", "hold", "step_down", "follow_up")),
            "quarterly": Regime(visit_every=3),
            "step_cap": Regime(max_step=2),
            "minimal": Regime(actions=("intensify", "hold"), visit_every=2, max_step=2)}


class Problem(Settings):
    """The care problem: diseases, horizon and the deployment regimes (epsilon: what a clinic can carry out)."""

    section = "problem"

    diseases: tuple[Disease, ...] = Field(("htn", "t2d"), min_length=1, max_length=2,
                                          description="Diseases studied (htn, t2d).")
    horizon: int = Field(12, ge=2, le=60, description="Monthly visits in the horizon.")
    regimes: dict[str, Regime] = Field(
        default_factory=_default_regimes, min_length=1, max_length=20,
        description="Epsilon regimes: name -> the actions, visit cadence and titration limit a clinic can carry out.")
    train_regime: str = Field("full", min_length=1, description="The regime the offline data comes from.")

    @model_validator(mode="after")
    def _regimes(self) -> Self:
        if len(set(self.diseases)) != len(self.diseases):
            raise ValueError("diseases: listed twice")
        if self.train_regime not in self.regimes:
            raise ValueError(f"train_regime: {self.train_regime!r} is not a regime ({', '.join(self.regimes)})")
        return self


class Reward(Settings):
    """The tiered time-to-control payment: control confirmed by visit ``thresholds[i]`` pays ``payments[i]``."""

    section = "reward"

    thresholds: tuple[int, ...] = Field((3, 6, 12), min_length=1, max_length=10,
                                        description="Visits bounding the tiers, increasing.")
    payments: tuple[Annotated[float, Field(ge=0.0), Float32(1e3)], ...] = Field(
        (1.0, 0.6, 0.3), min_length=1, max_length=10, description="Payment of each tier, not increasing.")
    intensify_cost: Cost = Field(0.01, description="Cost of an intensification.")
    check_cost: Cost = Field(0.01, description="Cost of a check.")
    follow_up_cost: Cost = Field(0.01, description="Cost of a follow-up.")
    side_effect_cost: Cost = Field(0.02, description="Cost of a month with a side effect.")

    @model_validator(mode="after")
    def _tiers(self) -> Self:
        if len(self.payments) != len(self.thresholds):
            raise ValueError("payments: one per threshold")
        if any(t < 1 for t in self.thresholds) or any(b <= a for a, b in pairwise(self.thresholds)):
            raise ValueError("thresholds: must be positive and increasing")
        if any(b > a for a, b in pairwise(self.payments)):
            raise ValueError("payments: must not increase from one tier to the next")
        return self

    def costs(self) -> tuple[float, ...]:
        """Each action's cost, in the order of ``ACTIONS``."""
        return (self.intensify_cost, 0.0, 0.0, self.check_cost, self.follow_up_cost)


class Clinicians(Settings):
    """The clinicians behind the offline data: a low- and a high-capability group."""

    section = "clinicians"

    count: int = Field(20, ge=1, le=10_000, description="Clinicians.")
    low_share: Probability = Field(0.6, description="Share of low-capability clinicians.")
    kappa_low: Probability = Field(0.2, description="Capability of the low group (chance of the good action).")
    kappa_high: Probability = Field(0.9, description="Capability of the high group.")
    habit: Action = Field("hold", description="What a clinician does otherwise (therapeutic inertia: hold).")
    execution_gap: Probability = Field(
        0.0, description="Share of a treatment's effect a clinician of capability 0 loses against one of "
        "capability 1 (0: outcomes do not depend on who chose the action; the policies are scored at capability 1).")


class Data(Settings):
    """The offline data, the data seeds and the studies run on it."""

    section = "data"

    patients: int = Field(1000, ge=2, le=1_000_000, description="Patients in the visit logs.")
    seeds: int = Field(3, ge=1, le=100, description="Data sets drawn (the figures are means over them).")
    sweep_low_shares: tuple[Probability, ...] = Field((0.2, 0.6, 0.9), max_length=10,
                                                      description="Low-capability shares of the kappa sweep.")
    sweep_patients: tuple[Annotated[int, Field(ge=2, le=1_000_000)], ...] = Field(
        (200, 1000), max_length=10, description="Data sizes of the kappa sweep.")
    sweep_execution_gaps: tuple[Probability, ...] = Field(
        (0.0,), max_length=10, description="Clinicians' execution gaps of the kappa sweep.")
    min_count: int = Field(1, ge=1, le=1_000_000, description="Logs a (state, action) needs to be trusted by "
                           "the model-based learners (fewer: assumed to make no progress).")
    forget_share: Probability = Field(0.01, description="Share of patients forgotten in the unlearning check.")
    unlearn_patients: tuple[Annotated[int, Field(ge=2, le=1_000_000)], ...] = Field(
        (), max_length=5, description="Further log sizes of the unlearning check (besides `patients`).")
    log: str | None = Field(None, description="A visit log CSV of your own patients (relative to the spec; "
                            "format: decisions.health.chronic.visit_log), checked before the run starts.")
    log_disease: Disease | None = Field(None, description="The disease of the visit log's patients (htn, t2d).")

    @model_validator(mode="after")
    def _log(self) -> Self:
        if self.log is not None and self.log_disease is None:
            raise ValueError("log_disease: required with a log (htn or t2d)")
        if self.log is None and self.log_disease is not None:
            raise ValueError("log_disease: is used only with a log (data.log)")
        return self


class Neural(Settings):
    """The neural conservative offline learner (discrete CQL) and its d3rlpy peer: one set of
    training settings for both."""

    section = "neural"

    enabled: bool = Field(True, description="Train the neural learner (discrete CQL).")
    steps: int = Field(3000, ge=1, le=1_000_000, description="Gradient steps.")
    batch: int = Field(256, ge=1, le=65_536, description="Transitions per gradient step.")
    width: int = Field(64, ge=1, le=4096, description="Units of each hidden layer of the Q-network.")
    depth: int = Field(2, ge=1, le=8, description="Hidden layers of the Q-network.")
    learning_rate: Annotated[float, Field(gt=0.0, le=1.0), Float32(1.0)] = Field(
        1e-3, description="Adam's initial learning rate (cosine-decayed to 0 over the steps).")
    alpha: Annotated[float, Field(ge=0.0), Float32(1e3)] = Field(
        0.01, description="Weight of the conservative penalty (0: plain fitted Q-learning).")
    target_update: int = Field(50, ge=1, le=1_000_000,
                               description="Gradient steps between copies of the Q-network to its target.")


class Care(NamedTuple):
    """What a chronic-care study runs on, all but the seed: the problem, both machines, the reward,
    the clinicians and the data (a job's sections of the same names)."""

    problem: Problem
    htn: HtnMachine
    t2d: T2dMachine
    reward: Reward
    clinicians: Clinicians
    data: Data
