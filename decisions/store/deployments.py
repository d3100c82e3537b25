"""The deployed operating policies: which run's policy was chosen, when, by whom, and the history.

An operator picks an operating point (for the utility domain, a lambda on the learnt front) from a
recorded run; ``choose`` records it, ``history`` lists the choices newest first, and the newest
choice of a kind is the deployed policy (``deployed``).
"""

from __future__ import annotations

import getpass
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select

from decisions.errors import InputError
from decisions.store.db import session_scope
from decisions.store.models import Deployment
from decisions.store.repository import run_row


@dataclass(frozen=True)
class DeploymentRecord:
    """One recorded choice of an operating policy."""

    id: int
    run_id: int
    kind: str
    label: str
    settings: dict[str, Any]
    note: str | None
    chosen_by: str | None
    chosen_at: datetime


def _record(row: Deployment) -> DeploymentRecord:
    return DeploymentRecord(row.id, row.run_id, row.kind, row.label, dict(row.settings or {}), row.note,
                            row.chosen_by, row.chosen_at)


def _plain(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The settings as strict JSON (non-finite numbers become None)."""
    clean = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in settings.items()}
    try:
        json.dumps(clean, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise InputError("settings", f"must be plain JSON ({err})") from None
    return clean


def os_user() -> str | None:
    """The login name of this process's user, or None where there is none (some containers)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no login name in some containers
        return None


def choose(run_id: int, kind: str, label: str, settings: Mapping[str, Any], *, note: str | None = None,
           chosen_by: str | None = None, url: str | None = None) -> DeploymentRecord:
    """Record that run ``run_id``'s policy described by ``settings`` is now deployed for ``kind``.

    Raises:
        RunNotFoundError: the run does not exist.
        InputError: the run is of another kind, the label is empty, or the settings are not plain JSON.
    """
    if not label.strip():
        raise InputError("label", "must not be empty")
    with session_scope(url) as session:
        run = run_row(session, run_id)
        if run.kind != kind:
            raise InputError("run", f"run {run_id} is a {run.kind!r} run, not {kind!r}")
        row = Deployment(run_id=run_id, kind=kind, label=label.strip()[:255], settings=_plain(settings),
                         note=note or None, chosen_by=chosen_by or os_user())
        session.add(row)
        session.flush()
        return _record(row)


def history(kind: str, *, limit: int | None = 100, url: str | None = None) -> list[DeploymentRecord]:
    """The choices recorded for ``kind``, newest first."""
    query = select(Deployment).where(Deployment.kind == kind).order_by(Deployment.chosen_at.desc(),
                                                                        Deployment.id.desc())
    if limit is not None:
        query = query.limit(limit)
    with session_scope(url, read_only=True) as session:
        return [_record(row) for row in session.scalars(query)]


def deployed(kind: str, *, url: str | None = None) -> DeploymentRecord | None:
    """The policy deployed for ``kind`` now (the newest choice), or None."""
    latest = history(kind, limit=1, url=url)
    return latest[0] if latest else None


def of_run(run_id: int, *, url: str | None = None) -> list[DeploymentRecord]:
    """The choices recorded from run ``run_id``'s results, newest first."""
    query = select(Deployment).where(Deployment.run_id == run_id).order_by(Deployment.chosen_at.desc(),
                                                                           Deployment.id.desc())
    with session_scope(url, read_only=True) as session:
        return [_record(row) for row in session.scalars(query)]


def describe(record: DeploymentRecord | None, kind: str) -> str:
    """What is deployed for ``kind`` in words: ``record`` (the newest choice) or nothing."""
    if record is None:
        return f"nothing is deployed for {kind}"
    return f"{kind} runs {record.label!r} from run {record.run_id} (chosen {record.chosen_at:%Y-%m-%d %H:%M} UTC)"


def held_by(run_id: int, records: list[DeploymentRecord], *, url: str | None = None) -> str:
    """The deployment records of run ``run_id`` in words: which kinds it is deployed for now, and how many there are."""
    current = [kind for kind in sorted({r.kind for r in records})
               if (now := deployed(kind, url=url)) is not None and now.run_id == run_id]
    count = f"{len(records)} deployment record{'' if len(records) == 1 else 's'}"
    return f"{count}, deployed now for {', '.join(current)}" if current else f"{count}, none deployed now"
