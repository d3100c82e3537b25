"""The decide contract every domain's ``test_decide.py`` checks on a run's saved folder.

A decide module (``decisions.kit.decide.DecideModule``) offers a run's policies with finite
scores, loads one (refusing an unknown policy or a run that did not save it, naming the field),
parses a state (refusing a bad one, naming the field) and answers a batch of states in order, the
same state always with the same action. The checks here are those every domain shares; each
domain's module calls them with its own policies and states and keeps its domain's own checks.

Most modules check the conformance kit's smoke run (``tests.smoke_runs.smoke_run``, shared by
the process): ``smoke_folder`` gives its folder as a module fixture, and such a module declares
``pytestmark = pytest.mark.smoke_runs("<domain>")`` so that it runs beside the domain's
conformance tests.
"""

from __future__ import annotations

import functools
import math
import shutil
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from decisions.errors import InputError
from decisions.kit.decide import Candidate, DecideModule, Decision, best_candidate
from decisions.kit.domain import Domain
from tests.helpers import assert_input_error
from tests.smoke_runs import smoke_run


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file below ``folder``: its relative path -> (size, modification time in ns)."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def smoke_folder(domain: str, name: str = "run_folder") -> Any:
    """A module fixture ``name``: the folder of ``domain``'s shared smoke run, checked after the
    module to be as the module found it (its tests copy it to change it)."""

    @pytest.fixture(scope="module", name=name)
    def folder() -> Iterator[Path]:
        shared = smoke_run(domain).folder
        before = _files(shared)
        yield shared
        assert _files(shared) == before, f"a test changed the shared smoke run's folder {shared}"

    return folder


def loaded_policy(decide: DecideModule, candidate: str, name: str = "policy", folder: str = "run_folder") -> Any:
    """A module fixture ``name``: ``decide.load`` of ``candidate`` from the run of fixture ``folder``."""

    @pytest.fixture(scope="module", name=name)
    def policy(request: pytest.FixtureRequest) -> Any:
        return decide.load(request.getfixturevalue(folder), candidate)

    return policy


def state(decide: DecideModule, run_folder: Path, **changes: Any) -> Any:
    """The run's example state with ``changes``, parsed by ``decide.STATE_MODEL``."""
    return decide.STATE_MODEL.parse({**decide.example_state(run_folder), **changes})


def smoke_fixtures(domain: str, decide: DecideModule, candidate: str) -> tuple[Any, Any, Callable[..., Any]]:
    """The module fixtures ``run_folder`` (``smoke_folder``) and ``policy`` (``loaded_policy`` of
    ``candidate``), and ``state`` bound to ``decide``: assign them to module names."""
    return smoke_folder(domain), loaded_policy(decide, candidate), functools.partial(state, decide)


def offered(domain: Domain, decide: DecideModule, run_folder: Path, names: Collection[str]) -> dict[str, Candidate]:
    """The candidates the run offers, by name, once checked: ``domain``'s decider is ``decide``, the
    names are ``names`` (in that order when a list), every score is finite and the best candidate
    has the highest."""
    assert domain.decider is not None and domain.decider() is decide
    found = decide.candidates(run_folder, {})
    assert ([c.name for c in found] if isinstance(names, list) else {c.name for c in found}) == names
    assert all(math.isfinite(c.score) for c in found)
    assert best_candidate(found).score == max(c.score for c in found)
    return {c.name: c for c in found}


def refused(call: Callable[..., Any], *args: Any, field: str, starts: str = "", words: str = "") -> InputError:
    """Check that ``call(*args)`` raises a one-line ``InputError`` naming ``field`` whose problem starts
    with ``starts`` and holds ``words``; return it."""
    error = assert_input_error(call, *args, field=field, words=words)
    assert error.problem.startswith(starts), error
    return error


def assert_unknown_policies_refused(decide: DecideModule, run_folder: Path, *candidates: str) -> None:
    """Loading each of ``candidates`` (policies the run does not offer) is refused: ``policy: '<name>' ...``."""
    for candidate in candidates:
        refused(decide.load, run_folder, candidate, field="policy", starts=repr(candidate))


def assert_bad_state_refused(decide: DecideModule, run_folder: Path,
                             change: Mapping[str, Any] | Callable[[dict[str, Any]], object], field: str) -> None:
    """The run's example state, changed (keys set from a mapping, or edited in place by a function),
    is refused by ``decide.STATE_MODEL`` naming ``field``."""
    example = decide.example_state(run_folder)
    if callable(change):
        change(example)
    else:
        example.update(change)
    refused(decide.STATE_MODEL.parse, example, field=field)


def copied_run(run_folder: Path, to: Path, *, only: Sequence[str] = (), without: Sequence[str] = ()) -> Path:
    """A copy of a run's folder at ``to`` (made): only the files ``only`` when given, else all but ``without``."""
    if only:
        to.mkdir(parents=True, exist_ok=True)
        for file in only:
            shutil.copyfile(run_folder / file, to / file)
    else:
        shutil.copytree(run_folder, to)
        for file in without:
            (to / file).unlink()
    return to


def decided_alone_and_together(decide: DecideModule, policy: Any, states: Sequence[Any], *, figure: str = "expected",
                               same_actions: bool = True, **tolerance: float) -> tuple[list[Decision], list[Decision]]:
    """Decide each distinct state alone (the first twice) and all ``states`` in one batch, and check the
    batch answers in order: equal states get the same action (alone, again, and in the batch), each
    batch answer's ``figure`` is the one its state got alone (to ``tolerance``, as ``pytest.approx``
    takes it) and, with ``same_actions``, so is its action.

    Returns:
        Each state's answer alone, and the batch's answers, both in the order of ``states``.
    """
    first = [list(states).index(s) for s in states]
    alone_by_first = {i: decide.decide(policy, [states[i]])[0] for i in sorted(set(first))}
    assert decide.decide(policy, [states[0]])[0].action == alone_by_first[0].action
    alone = [alone_by_first[i] for i in first]
    together = decide.decide(policy, list(states))
    assert len(together) == len(states)
    assert [together[i].action for i in first] == [d.action for d in together]
    assert [getattr(d, figure) for d in together] == pytest.approx([getattr(d, figure) for d in alone], **tolerance)
    if same_actions:
        assert [d.action for d in together] == [d.action for d in alone]
    return alone, together
