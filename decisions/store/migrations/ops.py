"""What the revisions from 0004 on share: a table whose ids are never reused (SQLite ``AUTOINCREMENT``,
a sequence on PostgreSQL), its rows stamped with who wrote them and when. Frozen like those revisions:
change the schema in a new revision, never here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import sqlalchemy as sa
from alembic import op


def create_stamped(name: str, *columns: sa.Column, stamp: str, after: Sequence[sa.Column] = (),
                   indexes: Mapping[str, Sequence[str]] | None = None) -> None:
    """Create table ``name``: ``id``, ``columns``, who (``<stamp>_by``, nullable) and when (``<stamp>_at``),
    then ``after``; and its ``indexes`` (name: columns)."""
    op.create_table(
        name,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        *columns,
        sa.Column(f"{stamp}_by", sa.String(255), nullable=True),
        sa.Column(f"{stamp}_at", sa.DateTime(), nullable=False),
        *after,
        sqlite_autoincrement=True,
    )
    for index, on in (indexes or {}).items():
        op.create_index(index, name, list(on))


def drop_indexed(name: str, *indexes: str) -> None:
    """Drop table ``name`` and its ``indexes`` (its rows are lost)."""
    for index in indexes:
        op.drop_index(index, table_name=name)
    op.drop_table(name)
