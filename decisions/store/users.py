"""Named users and their roles; passwords are kept only as argon2id hashes.

A viewer reads; an operator also runs jobs, decides and records outcomes; an approver also deploys,
rolls back, forgets data and manages users (``decisions.platform.access`` says who may do what). With
no user defined the platform is one local user's. The first user must be an approver, and the last
approver can be neither removed nor given another role, so the store never locks itself out.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from decisions.errors import InputError
from decisions.store.db import read_records, session_scope
from decisions.store.models import User
from decisions.store.who import acting_user

NAME_LENGTH = 64
PASSWORD_MIN = 8
PASSWORD_MAX = 1024

_HASHER = PasswordHasher()
_DUMMY_HASH = _HASHER.hash("the same work for a name that is not a user")


class Role(enum.StrEnum):
    """What a user may do, each role all that the one before it may."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    APPROVER = "approver"

    @property
    def rank(self) -> int:
        """0 for a viewer, 1 for an operator, 2 for an approver."""
        return list(Role).index(self)

    @property
    def with_article(self) -> str:
        """The role in a sentence: "a viewer", "an operator", "an approver"."""
        return f"{'an' if self.value[0] in 'aeiou' else 'a'} {self.value}"


@dataclass(frozen=True)
class UserRecord:
    """One user: id, name, role, who created it and when (never the password or its hash)."""

    id: int
    name: str
    role: Role
    created_by: str | None
    created_at: datetime


def _record(row: User) -> UserRecord:
    return UserRecord(row.id, row.name, Role(row.role), row.created_by, row.created_at)


def check_role(role: str) -> Role:
    """``role`` as a ``Role``; ``InputError("role")`` naming the roles otherwise."""
    try:
        return Role(role)
    except ValueError:
        raise InputError("role", f"{role!r} is not a role ({', '.join(r.value for r in Role)})") from None


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise InputError("name", "must be a non-empty name without spaces at either end")
    if len(name) > NAME_LENGTH or not name.isprintable():
        raise InputError("name", f"must be at most {NAME_LENGTH} printable characters")
    return name


def _check_password(password: str) -> str:
    if not isinstance(password, str) or not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise InputError("password", f"must be {PASSWORD_MIN} to {PASSWORD_MAX} characters long")
    return password


def _row(session: Session, name: str) -> User:
    row = session.scalars(select(User).where(User.name == name).with_for_update()).first()
    if row is None:
        raise InputError("name", f"no user is named {name!r}")
    return row


def _approvers(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(User).where(User.role == Role.APPROVER.value)) or 0


def has_users(*, url: str | None = None) -> bool:
    """Whether any user is defined (else the platform is one local user's)."""
    with session_scope(url, read_only=True) as session:
        return session.scalars(select(User.id).limit(1)).first() is not None


def list_users(*, url: str | None = None) -> list[UserRecord]:
    """Every user, by name."""
    return read_records(select(User).order_by(User.name), _record, url=url)


def get_user(name: str, *, url: str | None = None) -> UserRecord | None:
    """The user named ``name``, or None."""
    found = read_records(select(User).where(User.name == name), _record, url=url)
    return found[0] if found else None


def add_user(name: str, password: str, role: str, *, created_by: str | None = None,
             url: str | None = None) -> UserRecord:
    """Add user ``name`` with ``role`` and the hash of ``password``.

    Raises:
        InputError: a bad or taken ``name``, a ``password`` of the wrong length, an unknown ``role``, or
            a first user who is not an approver.
    """
    name, password, chosen = _check_name(name), _check_password(password), check_role(role)
    digest = _HASHER.hash(password)
    try:
        with session_scope(url) as session:
            if chosen is not Role.APPROVER and session.scalars(select(User.id).limit(1)).first() is None:
                raise InputError("role", "the first user must be an approver (who can then add the others)")
            row = User(name=name, password_hash=digest, role=chosen.value, created_by=created_by or acting_user())
            session.add(row)
            session.flush()
            return _record(row)
    except IntegrityError:
        raise InputError("name", f"a user named {name!r} exists already") from None


def set_role(name: str, role: str, *, url: str | None = None) -> UserRecord:
    """Give user ``name`` ``role``; ``InputError`` for an unknown user or role, or the last approver."""
    chosen = check_role(role)
    with session_scope(url) as session:
        row = _row(session, name)
        if row.role == Role.APPROVER.value and chosen is not Role.APPROVER and _approvers(session) == 1:
            raise InputError("role", f"{name!r} is the last approver: make another user an approver first")
        row.role = chosen.value
        session.flush()
        return _record(row)


def set_password(name: str, password: str, *, url: str | None = None) -> None:
    """Replace user ``name``'s password; ``InputError`` for an unknown user or a bad password."""
    digest = _HASHER.hash(_check_password(password))
    with session_scope(url) as session:
        _row(session, name).password_hash = digest


def remove_user(name: str, *, url: str | None = None) -> None:
    """Remove user ``name`` (what they did keeps their name); ``InputError`` for an unknown user or the
    last approver while other users remain."""
    with session_scope(url) as session:
        row = _row(session, name)
        others = (session.scalar(select(func.count()).select_from(User)) or 0) - 1
        if row.role == Role.APPROVER.value and _approvers(session) == 1 and others > 0:
            raise InputError("name", f"{name!r} is the last approver: make another user an approver first")
        session.delete(row)


def check_password(name: str, password: str, *, url: str | None = None) -> UserRecord | None:
    """The user when ``password`` is theirs, else None (an unknown name costs the same hashing, so the
    answer's time does not tell whether the user exists)."""
    with session_scope(url, read_only=True) as session:
        row = session.scalars(select(User).where(User.name == name)).first()
        found = (_record(row), row.password_hash) if row is not None else None
    try:  # hashed after the read, so no transaction waits on it
        _HASHER.verify(found[1] if found is not None else _DUMMY_HASH, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return None
    return found[0] if found is not None else None
