"""The operator's loop for every domain that can decide: deploy a recorded run's policy for an asset,
decide today's states with it (every decision recorded), record what happened.

The domain's part is its ``decide`` module (``kit.decide.DecideModule``); this module finds the asset's
domain and deployment, loads the policy once per process (``loaded``), validates each state against
the domain's ``STATE_MODEL`` (the asset's ``settings["state"]`` fill fields a state leaves out), and
writes the records through the store. The monitor is ``platform.monitoring``.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from decisions.errors import InputError
from decisions.kit.decide import Candidate, DecideModule, Decision, best_candidate
from decisions.kit.domain import Domain
from decisions.platform import registry
from decisions.store import (
    AssetRecord,
    DeploymentRecord,
    NewDecision,
    RunStatus,
    current,
    get_asset,
    get_run,
    record_decision_ids,
)
from decisions.store import deploy as store_deploy
from decisions.store.artifacts import report_folder


@dataclass(frozen=True)
class Proposal:
    """What a run offers an asset: its candidates, best first by the study's own figure."""

    run_id: int
    candidates: tuple[Candidate, ...]

    @property
    def best(self) -> Candidate:
        """The candidate the study's figures favour."""
        return best_candidate(self.candidates)

    def words(self) -> str:
        """The proposal in a sentence (which policy, by which figure, against the next best)."""
        best = self.best
        text = f"run {self.run_id} proposes {best.label} ({best.score_name} {best.score:.4g})"
        if len(self.candidates) > 1:
            other = self.candidates[1]
            text += f", ahead of {other.label} ({other.score:.4g})"
        return text


@dataclass(frozen=True)
class Answer:
    """A decision taken for an asset: the domain's ``Decision``, the state as read, and the id of its
    record (``get_decision``; None when not recorded)."""

    decision: Decision
    state: Mapping[str, Any]
    decision_id: int | None


def decider_of(domain: Domain, *, field: str = "asset") -> DecideModule:
    """The domain's ``decide`` module; ``InputError(field)`` where the domain cannot decide yet."""
    if domain.decider is None:
        raise InputError(field, f"{domain.name!r} cannot decide yet: it has no decide module")
    return domain.decider()


def _asset_domain(asset: AssetRecord) -> tuple[Domain, DecideModule]:
    domain = registry.get(asset.kind, field="asset")
    return domain, decider_of(domain)


def _run_folder(run_id: int, kind: str, url: str | None) -> tuple[Path, Mapping[str, float]]:
    """The local folder of succeeded run ``run_id`` of domain ``kind``, and its metrics."""
    record = get_run(run_id, url=url)
    if record.kind != kind:
        raise InputError("run", f"run {run_id} is a {record.kind!r} run, not {kind!r}")
    if record.status != RunStatus.SUCCEEDED:
        raise InputError("run", f"run {run_id} {record.status.value}: only a succeeded run's policy can be deployed")
    try:
        return report_folder(record), record.metrics
    except FileNotFoundError as err:
        raise InputError("run", str(err)) from None


def _proposal(asset_name: str, run_id: int, url: str | None) -> tuple[Proposal, Path]:
    """What run ``run_id`` offers the asset, best first, and the run's folder."""
    asset = get_asset(asset_name, url=url)
    _, decider = _asset_domain(asset)
    folder, metrics = _run_folder(run_id, asset.kind, url)
    offered = decider.candidates(folder, metrics)
    if not offered:
        raise InputError("run", f"run {run_id} offers no policy that can decide a state")
    return Proposal(run_id, tuple(sorted(offered, key=lambda c: -c.score))), folder


def propose(asset_name: str, run_id: int, *, url: str | None = None) -> Proposal:
    """The policies run ``run_id`` offers asset ``asset_name``, best first by the study's own figure.

    Raises:
        InputError: an unknown asset, a domain that cannot decide, a run of another kind, not succeeded
            or offering no policy.
    """
    return _proposal(asset_name, run_id, url)[0]


def policy_digest(folder: Path, candidate: str) -> str:
    """sha256 (hex) of the candidate's name and every trained file (``*.msgpack``) the run saved."""
    digest = hashlib.sha256(candidate.encode())
    for path in sorted(folder.glob("*.msgpack")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def deploy(asset_name: str, run_id: int, policy: str | None = None, *, note: str | None = None,
           chosen_by: str | None = None, url: str | None = None) -> tuple[DeploymentRecord, Proposal]:
    """Deploy run ``run_id``'s ``policy`` (default: the one its study favours) for the asset, recording
    the policy's digest and the study's figure of every candidate; the record and the proposal.

    Raises:
        InputError: as ``propose``, or a ``policy`` the run does not offer.
    """
    proposal, folder = _proposal(asset_name, run_id, url)
    names = [c.name for c in proposal.candidates]
    chosen = proposal.best if policy is None else next((c for c in proposal.candidates if c.name == policy), None)
    if chosen is None:
        raise InputError("policy", f"run {run_id} offers {', '.join(names)}, not {policy!r}")
    figures = {c.name: c.score for c in proposal.candidates} | {"score_name": proposal.best.score_name}
    record = store_deploy(asset_name, run_id, chosen.label, {"policy": chosen.name, "learnt": chosen.learnt, "network": chosen.network},
                          policy_digest=policy_digest(folder, chosen.name), figures=figures, note=note,
                          chosen_by=chosen_by, url=url)
    return record, proposal


@lru_cache(maxsize=16)
def loaded(kind: str, folder: Path, candidate: str, digest: str) -> Any:
    """The domain's loaded policy (kept for the process: deciding again does not reload or recompile)."""
    del digest  # part of the cache key: a changed file is loaded afresh
    return decider_of(registry.get(kind)).load(folder, candidate)


def validated_states(decider: DecideModule, asset: AssetRecord, states: Sequence[Mapping[str, Any]],
                     names: Sequence[str] | None = None) -> list[Any]:
    """Each state validated by the domain's ``STATE_MODEL``, the asset's ``settings["state"]`` filling
    fields it leaves out; ``InputError`` naming the state (``names[i]``, else ``state`` or ``state[i]``)
    and the field."""
    defaults = asset.settings.get("state", {}) if isinstance(asset.settings.get("state"), Mapping) else {}
    if not states:
        raise InputError("state", "no state given")
    out = []
    for index, state in enumerate(states):
        prefix = names[index] if names else "state" if len(states) == 1 else f"state[{index}]"
        if not isinstance(state, Mapping):
            raise InputError(prefix, "must be a table of the state's fields")
        try:
            out.append(decider.STATE_MODEL.parse({**defaults, **state}, prefix=""))
        except InputError as err:
            raise InputError(f"{prefix}: {err.field}" if names else f"{prefix}.{err.field}", err.problem) from None
    return out


def decide(asset_name: str, states: Sequence[Mapping[str, Any]], *, names: Sequence[str] | None = None,
           decided_by: str | None = None, record: bool = True, url: str | None = None) -> list[Answer]:
    """Today's decision for each state from the asset's deployed policy, each recorded (unless ``record``
    is False) with the state, action, expected outcome, the deployment and its policy digest, and who.
    Every state is checked before any is decided (``names``: how errors name them).

    Raises:
        InputError: an unknown or retired asset, nothing deployed, a domain that cannot decide, a bad state.
    """
    asset = get_asset(asset_name, url=url)
    if asset.retired:
        raise InputError("asset", f"{asset_name!r} is retired")
    _, decider = _asset_domain(asset)
    deployment = current(asset_name, url=url)
    if deployment is None:
        raise InputError("asset", f"nothing is deployed for {asset_name!r}: deploy a run's policy first")
    folder, _ = _run_folder(deployment.run_id, asset.kind, url)
    policy = loaded(asset.kind, folder, str(deployment.settings["policy"]), deployment.policy_digest or "")
    with _collection_paused(len(states)):
        parsed = validated_states(decider, asset, states, names)
        decided = decider.decide(policy, parsed)
        plain = [state.model_dump(mode="json") for state in parsed]
        written: list[int | None] = [None] * len(plain)
        if record:
            written = list(record_decision_ids(
                asset_name, deployment.id,
                [NewDecision(s, dict(d.action), d.expected, d.interval, details(d))
                 for s, d in zip(plain, decided, strict=True)],
                policy_digest=deployment.policy_digest, decided_by=decided_by, url=url))
        return [Answer(d, s, w) for d, s, w in zip(decided, plain, written, strict=True)]


_MANY_STATES = 100
"""From this many states a batch is decided with the cyclic garbage collector paused."""


@contextmanager
def _collection_paused(states: int) -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a batch of ``states`` (from ``_MANY_STATES``): a batch
    makes objects that all live on, and each full collection would walk every object of the loaded
    libraries again. Reference counting still frees what the batch drops; the collector resumes after,
    the batch's survivors moved to the oldest generation unwalked (``gc.freeze`` then ``gc.unfreeze``),
    where the next full collection finds them, instead of walked all at once by the first young
    collection. A process that froze objects of its own keeps them frozen: its batches skip the move."""
    if states < _MANY_STATES or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        gc.enable()


def details(decision: Decision) -> dict[str, Any]:
    """What a decision record keeps beside the action and the expected outcome."""
    return {"value": decision.value, "alternative": dict(decision.alternative), "reasons": dict(decision.reasons),
            "sensitivities": dict(decision.sensitivities)}
