"""The forgettings of a run: each patient forgotten from its learnt policy, with digests, check, who and when.

A forgetting is governance data: ``record_forgettings`` appends a run's forgettings in the order they
were applied (each starts from the data without the earlier ones), ``forgettings_of`` lists them in
that order, and ``held_by`` says in words what deleting the run would lose.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime

from sqlalchemy import select

from decisions.errors import InputError
from decisions.store.db import add_records, read_records, session_scope
from decisions.store.models import Forgetting, Run, RunStatus
from decisions.store.repository import RunNotFoundError
from decisions.store.who import acting_user


@dataclass(frozen=True)
class Forgotten:
    """What forgetting one patient found: the learner's data digest (sha256 hex) before and after, its
    policy's after, whether unlearning equalled retraining bit for bit, and both wall times."""

    patient: str
    disease: str
    data_digest_before: str
    data_digest_after: str
    policy_digest_after: str
    equal: bool
    unlearn_seconds: float
    retrain_seconds: float


@dataclass(frozen=True)
class ForgettingRecord(Forgotten):
    """One recorded forgetting: what was found, the run, the record's id, who asked and when (UTC)."""

    id: int
    run_id: int
    created_by: str | None
    created_at: datetime


def _record(row: Forgetting) -> ForgettingRecord:
    return ForgettingRecord(row.patient, row.disease, row.data_digest_before, row.data_digest_after,
                            row.policy_digest_after, bool(row.equal), row.unlearn_seconds, row.retrain_seconds,
                            row.id, row.run_id, row.created_by, row.created_at)


def newest_id(records: Sequence[ForgettingRecord]) -> int | None:
    """The id of the newest of a run's forgetting ``records`` (None: none): the ``after`` of the next."""
    return max((r.id for r in records), default=None)


def check_forgettable(run_id: int, run_kind: str, status: RunStatus, *, kind: str) -> None:
    """Refuse, on ``run``, to forget from run ``run_id`` of ``run_kind`` and ``status`` unless it is a
    succeeded run of ``kind``."""
    if run_kind != kind:
        raise InputError("run", f"run {run_id} is a {run_kind!r} run, not {kind!r}: only {kind} runs forget patients")
    if status is not RunStatus.SUCCEEDED:
        raise InputError("run", f"run {run_id} is {status.value}: only a succeeded run's policy can forget")


def record_forgettings(run_id: int, forgotten: Sequence[Forgotten], *, kind: str, after: int | None,
                       created_by: str | None = None, url: str | None = None) -> list[ForgettingRecord]:
    """Record the forgettings of run ``run_id``, in order, in one transaction; the records.

    ``after`` is the id of the run's newest forgetting the work started from (None: none); who asked
    is ``created_by``, else the OS user.

    Raises:
        RunNotFoundError: the run does not exist.
        InputError: the run is of another kind or did not succeed, a patient is already forgotten, or
            the run gained a forgetting since ``after`` (its data changed: forget again).
    """
    with session_scope(url) as session:
        run = session.get(Run, run_id, with_for_update=True)  # one forgetter of a run at a time
        if run is None:
            raise RunNotFoundError(f"run {run_id} does not exist")
        check_forgettable(run_id, run.kind, run.status, kind=kind)
        earlier = [_record(row) for row in session.scalars(select(Forgetting).where(Forgetting.run_id == run_id))]
        if newest_id(earlier) != after:
            raise InputError("run", f"run {run_id} gained a forgetting meanwhile (#{newest_id(earlier)}): forget again")
        gone = {r.patient for r in earlier}
        who = created_by or acting_user()
        rows = []
        for item in forgotten:
            if item.patient in gone:
                raise InputError("patient", f"{item.patient} is already forgotten from run {run_id}")
            gone.add(item.patient)
            rows.append(Forgetting(run_id=run_id, created_by=who, **asdict(item)))
        return add_records(session, rows, _record)


def forgettings_of(run_id: int, *, url: str | None = None) -> list[ForgettingRecord]:
    """The forgettings recorded for run ``run_id``, in the order they were applied (oldest first)."""
    query = select(Forgetting).where(Forgetting.run_id == run_id).order_by(Forgetting.id)
    return read_records(query, _record, url=url)


def held_by(records: Sequence[ForgettingRecord]) -> str:
    """A run's forgetting records in words: how many, of which patients, and what they are."""
    patients = ", ".join(r.patient for r in records[:5]) + (", ..." if len(records) > 5 else "")
    count = f"{len(records)} forgetting record{'' if len(records) == 1 else 's'}"
    return f"{count} ({patients}), the record that those patients' data was forgotten"
