"""The decision log of an asset: every decision taken for it (state in, action out, the value expected)
and the outcomes observed afterwards.

``record_decision`` appends a decision, ``record_outcome`` an outcome of one (a later outcome of the same
decision corrects the earlier: the newest counts), and ``outcomes_of`` pairs each decision's expected
value with its newest outcome's realised value, in decision order: the series a monitor compares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from decisions.errors import InputError
from decisions.store.assets import asset_row
from decisions.store.db import add_records, insert_rows, read_records, session_scope
from decisions.store.models import Asset, DecisionRow, Deployment, Outcome, utc_now
from decisions.store.plain import finite_or_none, json_document, json_value, plain_json
from decisions.store.who import acting_user


@dataclass(frozen=True)
class DecisionRecord:
    """One decision taken for an asset: by which deployment and policy, the state seen, the action taken,
    the value expected of it with its interval (None: not given or not finite), details, who and when."""

    id: int
    asset: str
    deployment_id: int | None  # None once that deployment was deleted with its run
    policy_digest: str | None
    state: dict[str, Any]
    action: dict[str, Any]
    expected_value: float | None
    interval_low: float | None
    interval_high: float | None
    details: dict[str, Any]
    decided_by: str | None
    decided_at: datetime


@dataclass(frozen=True)
class OutcomeRecord:
    """One outcome observed after a decision: the observed fields, the value compared with the decision's
    expected value (None: not finite), a note, who recorded it and when."""

    id: int
    decision_id: int
    realised: dict[str, Any]
    realised_value: float | None
    note: str | None
    recorded_by: str | None
    recorded_at: datetime


@dataclass(frozen=True)
class RealisedRecord:
    """A decision's expected value and interval beside its newest outcome's realised value."""

    decision_id: int
    decided_at: datetime
    expected_value: float | None
    interval_low: float | None
    interval_high: float | None
    outcome_id: int
    realised_value: float | None
    recorded_at: datetime

    @property
    def residual(self) -> float | None:
        """Realised minus expected value; None when either is missing."""
        if self.realised_value is None or self.expected_value is None:
            return None
        return self.realised_value - self.expected_value


def _decision(row: DecisionRow, asset: str) -> DecisionRecord:
    return DecisionRecord(row.id, asset, row.deployment_id, row.policy_digest, dict(row.state or {}),
                          dict(row.action or {}), row.expected_value, row.interval_low, row.interval_high,
                          dict(row.details or {}), row.decided_by, row.decided_at)


def _outcome(row: Outcome) -> OutcomeRecord:
    return OutcomeRecord(row.id, row.decision_id, dict(row.realised or {}), row.realised_value, row.note,
                         row.recorded_by, row.recorded_at)


def _interval(interval: tuple[float | None, float | None] | None) -> tuple[float | None, float | None]:
    """``(low, high)`` with non-finite ends as None; refused on ``interval`` unless two numbers, low <= high."""
    if interval is None:
        return None, None
    if isinstance(interval, str | bytes) or len(interval) != 2:
        raise InputError("interval", f"must be (low, high), not {interval!r}")
    low, high = finite_or_none(interval[0], "interval"), finite_or_none(interval[1], "interval")
    if low is not None and high is not None and low > high:
        raise InputError("interval", f"low {low} is above high {high}")
    return low, high


def _deployment_of(session: Session, asset: Asset, deployment_id: int | None) -> Deployment | None:
    """The asset's deployment ``deployment_id`` (None: none given); refused on ``deployment`` otherwise."""
    if deployment_id is None:
        return None
    row = session.get(Deployment, deployment_id)
    if row is None or row.asset_id != asset.id:
        raise InputError("deployment", f"deployment {deployment_id} is not a deployment of asset {asset.name!r}")
    return row


@dataclass(frozen=True)
class NewDecision:
    """A decision to record (see ``record_decision`` for the fields)."""

    state: Mapping[str, Any]
    action: Mapping[str, Any]
    expected_value: float | None = None
    interval: tuple[float | None, float | None] | None = None
    details: Mapping[str, Any] | None = None


def record_decision(asset_name: str, deployment_id: int | None, state: Mapping[str, Any],
                    action: Mapping[str, Any], *, expected_value: float | None = None,
                    interval: tuple[float | None, float | None] | None = None,
                    details: Mapping[str, Any] | None = None, policy_digest: str | None = None,
                    decided_by: str | None = None, url: str | None = None) -> DecisionRecord:
    """Record a decision taken for the asset by its deployment ``deployment_id`` (None: by no recorded
    deployment): ``state`` seen, ``action`` taken, the value expected and its ``(low, high)`` interval
    (non-finite numbers are kept as None). The digest defaults to the deployment's; who is
    ``decided_by``, else the OS user.

    Raises:
        InputError: the asset is unknown or retired ("asset"), the deployment is not one of the asset's
            ("deployment"), the interval is not two numbers with low <= high ("interval"), the expected
            value is not a number ("expected_value"), or state, action or details are not plain JSON.
    """
    new = NewDecision(state, action, expected_value, interval, details)
    return record_decisions(asset_name, deployment_id, [new], policy_digest=policy_digest, decided_by=decided_by,
                            url=url)[0]


def record_decisions(asset_name: str, deployment_id: int | None, decisions: Sequence[NewDecision], *,
                     policy_digest: str | None = None, decided_by: str | None = None,
                     url: str | None = None) -> list[DecisionRecord]:
    """Record several decisions of one deployment in one transaction (all or none), in order; as
    ``record_decision`` for each."""
    asset, common, rows, ids = _write_decisions(asset_name, deployment_id, decisions, policy_digest, decided_by, url)
    return [DecisionRecord(i, asset, deployment_id, common["policy_digest"], json_value(row["state"]),
                           json_value(row["action"]), row["expected_value"], row["interval_low"], row["interval_high"],
                           json_value(row["details"]), common["decided_by"], common["decided_at"])
            for i, row in zip(ids, rows, strict=True)]


def record_decision_ids(asset_name: str, deployment_id: int | None, decisions: Sequence[NewDecision], *,
                        policy_digest: str | None = None, decided_by: str | None = None,
                        url: str | None = None) -> list[int]:
    """As ``record_decisions``, the new decisions' ids only (nothing read back: for large batches)."""
    return _write_decisions(asset_name, deployment_id, decisions, policy_digest, decided_by, url)[3]


def _write_decisions(asset_name: str, deployment_id: int | None, decisions: Sequence[NewDecision],
                     policy_digest: str | None, decided_by: str | None,
                     url: str | None) -> tuple[str, dict[str, Any], list[dict[str, Any]], list[int]]:
    """Check and insert the decisions: the asset's name, the columns they share, each one's own (JSON as
    ``JsonText``) and their new ids."""
    rows = []
    for new in decisions:
        value = finite_or_none(new.expected_value, "expected_value")
        low, high = _interval(new.interval)
        rows.append({"state": json_document(new.state, "state"), "action": json_document(new.action, "action"),
                     "details": json_document(new.details or {}, "details"), "expected_value": value,
                     "interval_low": low, "interval_high": high})
    with session_scope(url) as session:
        asset = asset_row(session, asset_name)
        if asset.retired_at is not None:
            raise InputError("asset", f"{asset_name!r} is retired: no decision is taken for it")
        deployment = _deployment_of(session, asset, deployment_id)
        digest = policy_digest or (deployment.policy_digest if deployment is not None else None)
        common = {"asset_id": asset.id, "deployment_id": deployment_id, "policy_digest": digest,
                  "decided_by": decided_by or acting_user(), "decided_at": utc_now()}
        ids = insert_rows(session, DecisionRow, rows, common)
        return asset.name, common, rows, ids


def decisions_of(asset_name: str, limit: int | None = 100, *, url: str | None = None) -> list[DecisionRecord]:
    """The asset's decisions, newest first (the newest ``limit``; None: all).

    Raises:
        InputError: on ``asset`` when there is no such asset.
    """
    with session_scope(url, read_only=True) as session:
        asset = asset_row(session, asset_name)
        query = (select(DecisionRow).where(DecisionRow.asset_id == asset.id)
                 .order_by(DecisionRow.decided_at.desc(), DecisionRow.id.desc()))
        if limit is not None:
            query = query.limit(limit)
        return [_decision(row, asset.name) for row in session.scalars(query)]


def get_decision(decision_id: int, *, url: str | None = None) -> DecisionRecord:
    """The decision ``decision_id``.

    Raises:
        InputError: on ``decision`` when there is none.
    """
    with session_scope(url, read_only=True) as session:
        found = session.execute(select(DecisionRow, Asset.name).join(Asset, DecisionRow.asset_id == Asset.id)
                                .where(DecisionRow.id == decision_id)).first()
        if found is None:
            raise InputError("decision", f"there is no decision {decision_id}")
        return _decision(found[0], found[1])


@dataclass(frozen=True)
class NewOutcome:
    """An outcome to record (see ``record_outcome``); ``name`` is how an error names it (a file's row)."""

    decision_id: int
    realised: Mapping[str, Any]
    realised_value: float | None
    note: str | None = None
    name: str | None = None


def record_outcome(decision_id: int, realised: Mapping[str, Any], realised_value: float | None, *,
                   note: str | None = None, recorded_by: str | None = None,
                   url: str | None = None) -> OutcomeRecord:
    """Record what was observed after decision ``decision_id``: the domain's ``realised`` fields and the
    value compared with the decision's expected value (non-finite: None). An earlier outcome of the same
    decision stays; this newer one counts. Who is ``recorded_by``, else the OS user.

    Raises:
        InputError: the decision is unknown ("decision"), the realised value is not a number
            ("realised_value"), or ``realised`` is not plain JSON ("realised").
    """
    new = NewOutcome(decision_id, realised, realised_value, note)
    return record_outcomes([new], recorded_by=recorded_by, url=url)[0]


def record_outcomes(outcomes: Sequence[NewOutcome], *, recorded_by: str | None = None,
                    url: str | None = None) -> list[OutcomeRecord]:
    """Record several outcomes in one transaction (all or none), in order; as ``record_outcome`` for each,
    an error naming the outcome's ``name`` where it has one."""
    rows = []
    for new in outcomes:
        prefix = f"{new.name}: " if new.name else ""
        try:
            rows.append(Outcome(decision_id=new.decision_id, realised=plain_json(new.realised, "realised"),
                                realised_value=finite_or_none(new.realised_value, "realised_value"),
                                note=new.note or None, recorded_by=recorded_by or acting_user()))
        except InputError as err:
            raise InputError(f"{prefix}{err.field}", err.problem) from None
    with session_scope(url) as session:
        for new in outcomes:
            if session.get(DecisionRow, new.decision_id) is None:
                raise InputError(f"{new.name}: decision" if new.name else "decision",
                                 f"there is no decision {new.decision_id}")
        return add_records(session, rows, _outcome)


def outcomes_for(decision_id: int, *, url: str | None = None) -> list[OutcomeRecord]:
    """Every outcome recorded for decision ``decision_id``, oldest first (the last one counts)."""
    query = select(Outcome).where(Outcome.decision_id == decision_id).order_by(Outcome.id)
    return read_records(query, _outcome, url=url)


def outcomes_of(asset_name: str, *, url: str | None = None) -> list[RealisedRecord]:
    """Each of the asset's decisions that has an outcome, with its newest outcome, oldest decision first.

    Raises:
        InputError: on ``asset`` when there is no such asset.
    """
    with session_scope(url, read_only=True) as session:
        asset = asset_row(session, asset_name)
        newest = (select(func.max(Outcome.id)).join(DecisionRow, Outcome.decision_id == DecisionRow.id)
                  .where(DecisionRow.asset_id == asset.id).group_by(Outcome.decision_id))
        query = (select(DecisionRow, Outcome).join(Outcome, Outcome.decision_id == DecisionRow.id)
                 .where(DecisionRow.asset_id == asset.id, Outcome.id.in_(newest))
                 .order_by(DecisionRow.decided_at, DecisionRow.id))
        return [RealisedRecord(d.id, d.decided_at, d.expected_value, d.interval_low, d.interval_high, o.id,
                               o.realised_value, o.recorded_at) for d, o in session.execute(query).tuples()]
