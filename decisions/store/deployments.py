"""The deployed operating policies: which run's policy was chosen, when, by whom, and the history.

An operator picks an operating point (for the utility domain, a lambda on the learnt front) from a
recorded run; ``choose`` records it, ``history`` lists the choices newest first, and the newest
choice of a kind is the deployed policy (``deployed``). Deployments for an asset (``asset_deployments``)
share the table but not these choices: ``history`` and ``deployed`` read only the choices for a kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from decisions.errors import InputError
from decisions.store.db import read_records, session_scope
from decisions.store.models import Asset, Deployment
from decisions.store.plain import plain_json
from decisions.store.repository import run_row
from decisions.store.who import acting_user


@dataclass(frozen=True)
class DeploymentRecord:
    """One recorded choice of an operating policy: for a whole kind (``asset_id`` None) or for one asset."""

    id: int
    run_id: int
    kind: str
    label: str
    settings: dict[str, Any]
    note: str | None
    chosen_by: str | None
    chosen_at: datetime
    asset_id: int | None = None
    # sha256 (hex) of the deployed policy, the study's figures at deployment, the deployment it replaced.
    policy_digest: str | None = None
    figures: dict[str, Any] = field(default_factory=dict)
    replaces_id: int | None = None


def deployment_record(row: Deployment) -> DeploymentRecord:
    """A detached record of a deployment row."""
    return DeploymentRecord(row.id, row.run_id, row.kind, row.label, dict(row.settings or {}), row.note,
                            row.chosen_by, row.chosen_at, row.asset_id, row.policy_digest, dict(row.figures or {}),
                            row.replaces_id)


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
        row = Deployment(run_id=run_id, kind=kind, label=label.strip()[:255], settings=plain_json(settings),
                         note=note or None, chosen_by=chosen_by or acting_user())
        session.add(row)
        session.flush()
        return deployment_record(row)


def history(kind: str, *, limit: int | None = 100, url: str | None = None) -> list[DeploymentRecord]:
    """The choices recorded for ``kind`` as a whole (not those for an asset), newest first."""
    query = (select(Deployment).where(Deployment.kind == kind, Deployment.asset_id.is_(None))
             .order_by(Deployment.chosen_at.desc(), Deployment.id.desc()))
    if limit is not None:
        query = query.limit(limit)
    return read_records(query, deployment_record, url=url)


def deployed(kind: str, *, url: str | None = None) -> DeploymentRecord | None:
    """The policy deployed for ``kind`` now (the newest choice), or None."""
    latest = history(kind, limit=1, url=url)
    return latest[0] if latest else None


def of_run(run_id: int, *, url: str | None = None) -> list[DeploymentRecord]:
    """The deployments recorded from run ``run_id``'s results (for its kind or for assets), newest first."""
    query = select(Deployment).where(Deployment.run_id == run_id).order_by(Deployment.chosen_at.desc(),
                                                                           Deployment.id.desc())
    return read_records(query, deployment_record, url=url)


def describe(record: DeploymentRecord | None, kind: str) -> str:
    """What is deployed for ``kind`` in words: ``record`` (the newest choice) or nothing."""
    if record is None:
        return f"nothing is deployed for {kind}"
    return f"{kind} runs {record.label!r} from run {record.run_id} (chosen {record.chosen_at:%Y-%m-%d %H:%M} UTC)"


def assets_running(run_id: int, asset_ids: set[int], *, url: str | None = None) -> list[str]:
    """The names, sorted, of the assets among ``asset_ids`` whose deployment now (their newest) is from run ``run_id``."""
    if not asset_ids:
        return []
    newest = (select(func.max(Deployment.id)).where(Deployment.asset_id.in_(asset_ids))
              .group_by(Deployment.asset_id))
    query = (select(Asset.name).join(Deployment, Deployment.asset_id == Asset.id)
             .where(Deployment.id.in_(newest), Deployment.run_id == run_id).order_by(Asset.name))
    with session_scope(url, read_only=True) as session:
        return list(session.scalars(query))


def held_by(run_id: int, records: list[DeploymentRecord], *, url: str | None = None) -> str:
    """The deployment records of run ``run_id`` in words: which kinds and assets it is deployed for now, and
    how many records there are."""
    kinds = [kind for kind in sorted({r.kind for r in records if r.asset_id is None})
             if (now := deployed(kind, url=url)) is not None and now.run_id == run_id]
    assets = assets_running(run_id, {r.asset_id for r in records if r.asset_id is not None}, url=url)
    current = [*kinds, *(f"asset {name!r}" for name in assets)]
    count = f"{len(records)} deployment record{'' if len(records) == 1 else 's'}"
    return f"{count}, deployed now for {', '.join(current)}" if current else f"{count}, none deployed now"
