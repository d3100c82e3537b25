"""The operator's contract of a domain: a recorded run's policy put to work on today's state.

A domain that can decide has a ``decide`` module (``DecideModule``): it names the policies a run
offers (``candidates``, with the study's own figure for each, so the platform can propose the best),
loads one from the run's folder without retraining (``load``), and answers a batch of states
(``decide``) with a ``Decision`` each: the action, its expected value, the best alternative and why.
``expected_outcome`` is what the monitor later compares with the outcome recorded for a decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from decisions.core.settings import Settings
from decisions.errors import InputError


@dataclass(frozen=True)
class Candidate:
    """A policy a run offers for deployment: its ``name`` in the run, a label in words, the study's
    figure ``score`` (higher is better) and which figure that is (``score_name``); whether it was
    ``learnt`` (not a rule) and whether it is a neural ``network``."""

    name: str
    label: str
    score: float
    score_name: str
    learnt: bool = True
    network: bool = False


@dataclass(frozen=True)
class Decision:
    """One answer: ``action`` (plain JSON), the ``expected`` outcome the monitor will compare with
    (a number in the domain's unit, ``OUTCOME``; with its central 95% ``interval`` where the domain
    estimates one), ``value`` (the deployed policy's expected value from this state), the
    ``alternative`` (``policy``, ``action``, ``value``: the best other policy's answer), ``reasons``
    (the Q-values of the allowed actions, attributions; plain JSON) and, for the differentiable
    domains, ``sensitivities`` (the value's derivative by each of today's inputs)."""

    action: Mapping[str, Any]
    expected: float
    value: float
    interval: tuple[float, float] | None = None
    alternative: Mapping[str, Any] = field(default_factory=dict)
    reasons: Mapping[str, Any] = field(default_factory=dict)
    sensitivities: Mapping[str, float] = field(default_factory=dict)


class DecideModule(Protocol):
    """A domain's ``decide`` module.

    ``STATE_MODEL`` validates one state (an ``InputError`` names the field); ``OUTCOME`` says in
    words what an outcome's number is (``the next visit's control band``). ``candidates`` lists the
    policies a run's folder offers with the study's figure for each; ``load`` reads one back (an
    ``InputError`` if the run cannot offer it); ``decide`` answers states in order, the same state
    always with the same action; ``example_state`` is a valid state of the run's scenario (plain JSON).
    A module may also offer ``in_control_residuals(run_folder, candidate) -> core.monitor_design.InControl``
    (standardised residuals of a period in control): the monitor then calibrates its thresholds on them.
    """

    STATE_MODEL: type[Settings]
    OUTCOME: str

    def candidates(self, run_folder: Path, metrics: Mapping[str, float]) -> list[Candidate]: ...

    def load(self, run_folder: Path, candidate: str) -> Any: ...

    def decide(self, policy: Any, states: Sequence[Settings]) -> list[Decision]: ...

    def example_state(self, run_folder: Path) -> dict[str, Any]: ...


def deployed_and_alternative(offered: Sequence[Candidate], candidate: str) -> tuple[str, str]:
    """``candidate`` and the best other policy of ``offered`` by its study figure (``candidate`` itself
    when it is the only one): what a domain's ``load`` answers with.

    Raises:
        InputError: (``policy``) ``offered`` has no candidate of that name; the message lists those it has.
    """
    names = [c.name for c in offered]
    if candidate not in names:
        raise InputError("policy", f"{candidate!r} is not offered by this run ({', '.join(names) or 'none'})")
    others = [c for c in offered if c.name != candidate]
    return candidate, max(others, key=lambda c: c.score).name if others else candidate


def best_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """The candidate with the highest study figure (the first listed among equals).

    Raises:
        ValueError: there is none.
    """
    if not candidates:
        raise ValueError("the run offers no policy to deploy")
    return max(candidates, key=lambda c: c.score)
