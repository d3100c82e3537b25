"""Named users: ``users`` (name, argon2id password hash, role), and who started each run.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06

New table ``users``, its ids never reused (SQLite ``AUTOINCREMENT``, a sequence on PostgreSQL), and the
nullable column ``runs.started_by``; runs recorded before keep it NULL. Both are plain additions: no
table is rebuilt.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from decisions.store.migrations.ops import create_stamped

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create ``users`` and add ``runs.started_by``."""
    create_stamped(
        "users",
        sa.Column("name", sa.String(255), nullable=False, unique=True),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        stamp="created",
    )
    op.add_column("runs", sa.Column("started_by", sa.String(255), nullable=True))


def downgrade() -> None:
    """Drop ``runs.started_by`` and ``users``: who started each run and the users are lost."""
    op.drop_column("runs", "started_by")
    op.drop_table("users")
