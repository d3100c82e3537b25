"""Deployments per asset: which recorded run's policy an asset runs, since when, and what it replaced.

``deploy`` puts a succeeded run's policy (of the asset's kind) to work for an asset, recording the
deployment it replaces; the asset's newest deployment is its ``current`` one; ``rollback`` re-deploys an
earlier one as a new row. History is never rewritten: ``asset_history`` lists every row, newest first.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from decisions.errors import InputError
from decisions.store.assets import asset_row
from decisions.store.db import session_scope
from decisions.store.deployments import DeploymentRecord, deployment_record
from decisions.store.models import Asset, Deployment, RunStatus
from decisions.store.plain import plain_json
from decisions.store.repository import run_row
from decisions.store.who import acting_user


def _newest(session: Session, asset_id: int) -> Deployment | None:
    """The asset's newest deployment row (its current one), or None."""
    query = select(Deployment).where(Deployment.asset_id == asset_id).order_by(Deployment.id.desc()).limit(1)
    return session.scalars(query).first()


def _in_operation(session: Session, asset_name: str) -> Asset:
    """The asset row, locked (one deployer of an asset at a time); refused on ``asset`` when unknown or retired."""
    asset = asset_row(session, asset_name, for_update=True)
    if asset.retired_at is not None:
        raise InputError("asset", f"{asset_name!r} is retired ({asset.retired_at:%Y-%m-%d %H:%M} UTC): "
                                  "nothing is deployed for it")
    return asset


def deploy(asset_name: str, run_id: int, label: str, settings: Mapping[str, Any], *,
           policy_digest: str | None = None, figures: Mapping[str, Any] | None = None, note: str | None = None,
           chosen_by: str | None = None, url: str | None = None) -> DeploymentRecord:
    """Deploy run ``run_id``'s policy described by ``settings`` for the asset ``asset_name``; the new
    deployment, which records the one it replaces (``replaces_id``; None for the asset's first). Who is
    ``chosen_by``, else the OS user.

    Raises:
        RunNotFoundError: the run does not exist.
        InputError: the asset is unknown or retired ("asset"), the run did not succeed or is of another
            kind than the asset ("run"), the label is empty ("label"), the digest is longer than 64
            characters ("policy_digest"), or the settings or figures are not plain JSON.
    """
    if not label.strip():
        raise InputError("label", "must not be empty")
    if policy_digest is not None and len(policy_digest) > 64:
        raise InputError("policy_digest", f"must be at most 64 characters, not {len(policy_digest)}")
    clean, numbers = plain_json(settings, "settings"), plain_json(figures or {}, "figures")
    with session_scope(url) as session:
        asset = _in_operation(session, asset_name)
        run = run_row(session, run_id)
        if run.kind != asset.kind:
            raise InputError("run", f"run {run_id} is a {run.kind!r} run, not {asset.kind!r} like asset {asset_name!r}")
        if run.status is not RunStatus.SUCCEEDED:
            raise InputError("run", f"run {run_id} is {run.status.value}: only a succeeded run's policy is deployed")
        replaced = _newest(session, asset.id)
        row = Deployment(run_id=run_id, kind=asset.kind, label=label.strip()[:255], settings=clean, note=note or None,
                         chosen_by=chosen_by or acting_user(), asset_id=asset.id, policy_digest=policy_digest or None,
                         figures=numbers, replaces_id=replaced.id if replaced is not None else None)
        session.add(row)
        session.flush()
        return deployment_record(row)


def current(asset_name: str, *, url: str | None = None) -> DeploymentRecord | None:
    """The deployment the asset runs now (its newest), or None when nothing was deployed for it.

    Raises:
        InputError: on ``asset`` when there is no such asset.
    """
    with session_scope(url, read_only=True) as session:
        row = _newest(session, asset_row(session, asset_name).id)
        return deployment_record(row) if row is not None else None


def asset_history(asset_name: str, *, url: str | None = None) -> list[DeploymentRecord]:
    """Every deployment of the asset, newest first (rollbacks included, as the rows they added).

    Raises:
        InputError: on ``asset`` when there is no such asset.
    """
    with session_scope(url, read_only=True) as session:
        asset = asset_row(session, asset_name)
        query = select(Deployment).where(Deployment.asset_id == asset.id).order_by(Deployment.id.desc())
        return [deployment_record(row) for row in session.scalars(query)]


def rollback(asset_name: str, to: int | None = None, *, chosen_by: str | None = None,
             url: str | None = None) -> DeploymentRecord:
    """Re-deploy for the asset the deployment its current one replaced (or deployment ``to``): a new row
    with that one's run, label, settings, digest and figures, noted "rollback to deployment N".

    Raises:
        InputError: the asset is unknown or retired ("asset"), it has no earlier deployment to go back
            to ("asset"; "to" when ``to`` is given): none, one of another asset, its current one, or one
            deleted with its run.
    """
    with session_scope(url) as session:
        asset = _in_operation(session, asset_name)
        now = _newest(session, asset.id)
        field, target_id = ("to", to) if to is not None else ("asset", now.replaces_id if now is not None else None)
        if target_id is None:
            raise InputError("asset", f"{asset_name!r} has no earlier deployment to roll back to")
        target = session.get(Deployment, target_id)
        if target is None or target.asset_id != asset.id:
            raise InputError(field, f"deployment {target_id} is not a deployment of asset {asset_name!r} "
                                    "(or its run was deleted)")
        if now is not None and target.id == now.id:
            raise InputError(field, f"deployment {target_id} is the current deployment of asset {asset_name!r}")
        row = Deployment(run_id=target.run_id, kind=target.kind, label=target.label, settings=dict(target.settings),
                         note=f"rollback to deployment {target.id}", chosen_by=chosen_by or acting_user(),
                         asset_id=asset.id, policy_digest=target.policy_digest,
                         figures=dict(target.figures or {}), replaces_id=now.id if now is not None else None)
        session.add(row)
        session.flush()
        return deployment_record(row)
