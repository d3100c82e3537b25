"""Checks of the CLI's own options (run ids, counts, job kinds), each a one-line ``InputError`` naming the option."""

from __future__ import annotations

from decisions.errors import InputError

STORE_INT_MAX = 2**63 - 1
"""The largest integer the run store holds (a signed 64-bit SQL INTEGER)."""

MAX_WORKERS = 1024
"""The most worker processes ``decisions run --workers`` starts."""


def run_id(value: int, field: str = "run_id") -> int:
    """``value`` as a run id: from 1 to ``STORE_INT_MAX``.

    Raises:
        InputError: on ``field`` when it is outside that range.
    """
    if not 1 <= value <= STORE_INT_MAX:
        raise InputError(field, f"no run has id {value} (run ids go from 1 to {STORE_INT_MAX})")
    return value


def count(value: int, field: str, *, maximum: int = STORE_INT_MAX) -> int:
    """``value`` as a count option: from 1 to ``maximum``.

    Raises:
        InputError: on ``field`` when it is outside that range.
    """
    if value < 1:
        raise InputError(field, f"must be at least 1, got {value}")
    if value > maximum:
        raise InputError(field, f"must be at most {maximum}, got {value}")
    return value


def job_kind(kind: str | None) -> str | None:
    """``kind`` when it is None or a registered domain's name (``-`` read as ``_``).

    Raises:
        InputError: on ``kind`` for an unknown name, listing the known ones.
    """
    if kind is None:
        return None
    from decisions.platform.registry import find, known

    domain = find(kind)
    if domain is None:
        raise InputError("kind", f"unknown job kind {kind!r} (known: {known()})")
    return domain.name


def allowed(action: str) -> None:
    """Refuse ``action`` (one of ``platform.access.NEEDS``) unless the OS user may do it: always with no
    users defined in the store, else as a user whose role allows it.

    Raises:
        InputError: on ``user`` (``access.AccessDenied``).
    """
    from decisions.platform.access import require

    require(action)
