"""Assets: the named things an operator decides for, each of one domain (``kind``) with its own settings.

An asset is created once (its name unique, never reused, even once retired), read by name, listed,
and retired when it stops being operated (it keeps its history; nothing new is deployed for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from decisions.errors import InputError
from decisions.store.db import read_records, session_scope
from decisions.store.models import Asset
from decisions.store.plain import plain_json
from decisions.store.who import acting_user

NAME_LENGTH = 255
KIND_LENGTH = 64


@dataclass(frozen=True)
class AssetRecord:
    """One asset: its id, name, domain (``kind``), scenario settings, note, who created it and when, and
    when it was retired (None: in operation)."""

    id: int
    name: str
    kind: str
    settings: dict[str, Any]
    note: str | None
    created_by: str | None
    created_at: datetime
    retired_at: datetime | None

    @property
    def retired(self) -> bool:
        """Whether the asset is retired."""
        return self.retired_at is not None


def asset_record(row: Asset) -> AssetRecord:
    """A detached record of an asset row."""
    return AssetRecord(row.id, row.name, row.kind, dict(row.settings or {}), row.note, row.created_by,
                       row.created_at, row.retired_at)


def _text(value: str, field: str, length: int) -> str:
    """``value`` stripped; refused on ``field`` when empty or longer than ``length``."""
    if not isinstance(value, str) or not value.strip():
        raise InputError(field, "must not be empty")
    if len(value.strip()) > length:
        raise InputError(field, f"must be at most {length} characters, not {len(value.strip())}")
    return value.strip()


def asset_row(session: Session, name: str, *, for_update: bool = False) -> Asset:
    """The ORM asset named ``name`` in ``session`` (locked for update when asked).

    Raises:
        InputError: on ``asset`` when there is none.
    """
    query = select(Asset).where(Asset.name == name)
    row = session.scalars(query.with_for_update() if for_update else query).first()
    if row is None:
        raise InputError("asset", f"no asset is named {name!r}")
    return row


def create_asset(name: str, kind: str, settings: Mapping[str, Any], *, note: str | None = None,
                 created_by: str | None = None, url: str | None = None) -> AssetRecord:
    """Create the asset ``name`` (stripped) of domain ``kind`` with scenario ``settings``; who is
    ``created_by``, else the OS user.

    Raises:
        InputError: the name or kind is empty or too long ("name", "kind"), the name is taken, even by a
            retired asset ("name"), or the settings are not plain JSON ("settings").
    """
    name, kind = _text(name, "name", NAME_LENGTH), _text(kind, "kind", KIND_LENGTH)
    clean = plain_json(settings, "settings")
    taken = InputError("name", f"an asset is already named {name!r}: asset names are unique, even once retired")
    with session_scope(url) as session:
        if session.scalars(select(Asset.id).where(Asset.name == name)).first() is not None:
            raise taken
        row = Asset(name=name, kind=kind, settings=clean, note=note or None, created_by=created_by or acting_user())
        session.add(row)
        try:
            session.flush()
        except IntegrityError:  # created meanwhile by another process
            raise taken from None
        return asset_record(row)


def get_asset(name: str, *, url: str | None = None) -> AssetRecord:
    """The asset named ``name``.

    Raises:
        InputError: on ``asset`` when there is none.
    """
    with session_scope(url, read_only=True) as session:
        return asset_record(asset_row(session, name))


def list_assets(kind: str | None = None, *, include_retired: bool = False, url: str | None = None) -> list[AssetRecord]:
    """The assets (of ``kind`` when given; retired ones only ``include_retired``), by name."""
    query = select(Asset).order_by(Asset.name)
    if kind is not None:
        query = query.where(Asset.kind == kind)
    if not include_retired:
        query = query.where(Asset.retired_at.is_(None))
    return read_records(query, asset_record, url=url)


def retire_asset(name: str, *, url: str | None = None) -> AssetRecord:
    """Retire the asset ``name`` now: it keeps its deployments, decisions and outcomes; nothing new is
    deployed for it. The asset as retired.

    Raises:
        InputError: on ``asset`` when there is none or it is retired already.
    """
    with session_scope(url) as session:
        row = asset_row(session, name, for_update=True)
        if row.retired_at is not None:
            raise InputError("asset", f"{name!r} was retired already ({row.retired_at:%Y-%m-%d %H:%M} UTC)")
        row.retired_at = datetime.now(UTC)
        session.flush()
        return asset_record(row)
